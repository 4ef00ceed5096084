import ArgumentParser
import ATSPolicy
import ProxyCore
import TLSClient

/// Where clients reach the proxy and how much of the machine it takes: the plain and TLS listeners,
/// the admin listener, who may connect, the connection cap, the event loops, and how long a client
/// has to send its request head.
struct ListenerOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("Address to listen on (repeatable).", valueName: "host:port"))
    var listen: [String] = []

    @Option(name: .customLong("listen-tls"), help: ArgumentHelp("""
        Address where clients speak TLS to the proxy (repeatable; curl --proxy https://, Chrome \
        --proxy-server=https://), with --listen-cert and --listen-key. Without --listen, only these listen.
        """, valueName: "host:port"))
    var listenTLS: [String] = []

    @Option(name: .long, help: ArgumentHelp("""
        PEM certificate (then its intermediates) the TLS listeners present. Re-read on SIGHUP.
        """, valueName: "file"))
    var listenCert: String?

    @Option(name: .long, help: ArgumentHelp("PEM private key of --listen-cert (unencrypted). Re-read on SIGHUP.",
                                            valueName: "file"))
    var listenKey: String?

    @Option(name: .long, help: ArgumentHelp("""
        Admin listener for /metrics, /healthz and /readyz (a bare port means 127.0.0.1:PORT); off unless given.
        """, valueName: "host:port"))
    var admin: String?

    @Option(name: .long, help: ArgumentHelp("Network clients may connect from (repeatable; default loopback).",
                                            valueName: "cidr"))
    var allowClient: [IPNetwork] = []

    @Option(name: .long, help: "Most connections open at once; accepting pauses at the cap.")
    var maxConnections = 10_000

    @Option(name: .long, help: ArgumentHelp("""
        Event loops (threads serving connections). Default: one per CPU the process may use: the online \
        CPUs, narrowed by the CPU affinity mask and a cgroup v2 cpu.max quota (rounded up).
        """, valueName: "count"))
    var loops: Int?

    @Option(name: .long, help: ArgumentHelp("Seconds to receive a complete request head.", valueName: "seconds"))
    var headTimeout = 10.0

    func validate() throws {
        guard headTimeout > 0 else { throw ValidationError("timeouts must be positive") }
        guard maxConnections > 0 else { throw ValidationError("--max-connections must be positive") }
        if let loops, !(1...1024).contains(loops) { throw ValidationError("--loops must be 1 to 1024, not \(loops)") }
    }

    func apply(to configuration: inout ProxyConfiguration) throws {
        if !listen.isEmpty {
            configuration.listeners.proxy = try listen.map { text in
                guard let address = SocketAddress(parsing: text) else {
                    throw CommandFailure(message: "--listen \(text): expected IP:PORT, e.g. 127.0.0.1:3128 or [::1]:3128")
                }
                return address
            }
        }
        try applyTLS(to: &configuration)
        if let admin {
            let text = admin.allSatisfy(\.isNumber) ? "127.0.0.1:\(admin)" : admin
            guard let address = SocketAddress(parsing: text) else {
                throw CommandFailure(message: "--admin \(admin): expected IP:PORT or PORT, e.g. 127.0.0.1:9090")
            }
            configuration.listeners.admin = address
        }
        if !allowClient.isEmpty { configuration.allowClients = allowClient }
        configuration.listeners.maximumConnections = maxConnections
        configuration.listeners.loopCount = loops ?? 0
        configuration.timeouts.head = headTimeout
    }

    /// `--listen-tls`, `--listen-cert` and `--listen-key`: the pair is loaded (and checked) here, at
    /// start and on every reload, so a wrong or missing file names itself before anything listens, and
    /// a reload with one keeps the running pair.
    private func applyTLS(to configuration: inout ProxyConfiguration) throws {
        configuration.listeners.tls = try listenTLS.map { text in
            guard let address = SocketAddress(parsing: text) else {
                throw CommandFailure(message: "--listen-tls \(text): expected IP:PORT, e.g. 0.0.0.0:3129 or [::]:3129")
            }
            return address
        }
        // TLS listeners alone: the default plain listener is only for a daemon told nothing.
        if !listenTLS.isEmpty, listen.isEmpty { configuration.listeners.proxy = [] }
        switch (listenCert, listenKey) {
        case (nil, nil):
            guard listenTLS.isEmpty else {
                throw CommandFailure(message: "--listen-tls needs --listen-cert FILE and --listen-key FILE (PEM)")
            }
        case (let certificate?, let key?):
            do {
                configuration.listeners.tlsIdentity = try TLSServerContext(certificateFile: certificate, keyFile: key)
            } catch {
                throw CommandFailure(message: "\(error.part == .certificate ? "--listen-cert" : "--listen-key") \(error)")
            }
        case (nil, _?):
            throw CommandFailure(message: "--listen-key needs --listen-cert FILE (the certificate it belongs to)")
        case (_?, nil):
            throw CommandFailure(message: "--listen-cert needs --listen-key FILE (its private key)")
        }
    }
}
