import ArgumentParser
import ATSPolicy
import Dispatch
import Admin
import Foundation
import ProxyAccess
import ProxyCore
import TLSClient

/// `atsgate run`: the proxy daemon. With no flags it listens on 127.0.0.1:3128 with full ATS.
struct RunCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run the ATS-enforcing HTTP proxy.",
        discussion: """
            Every decision is logged to standard output, one record per line (or to the journal). \
            Signals: SIGHUP reloads the config file and policy (new connections use them, open ones \
            keep theirs; a broken file keeps the running state); SIGTERM stops accepting, lets open \
            connections finish for --grace-period seconds, then exits 0; SIGINT does the same with at \
            most 1 second; a second SIGTERM or SIGINT exits at once. It exits non-zero with a one-line \
            cause on stderr when it cannot start (bad flag, port in use, unreadable policy).
            """
    )

    @Option(name: .long, help: ArgumentHelp("Config file: one 'flag = value' per line; flags override it.",
                                            valueName: "file"))
    var config: String?

    @OptionGroup var options: PolicyOptions

    @Option(name: .long, help: ArgumentHelp("""
        Which policy a request gets (repeatable, tried in order): user:NAME (the proxy user), client:CIDR, \
        port:N (the listening port reached) or agent:NAME (the User-Agent's product name), =ID of a policy. \
        After them, a User-Agent whose product is a bundle's CFBundleExecutable or CFBundleName gets that \
        bundle's policy.
        """, valueName: "rule=id"))
    var route: [String] = []

    @Option(name: .long, help: ArgumentHelp("""
        Policy ID for requests no route chose, or block (403, reason no-policy). Default: the first policy.
        """, valueName: "id|block"))
    var unrouted: String?

    @Option(name: .long, help: ArgumentHelp("""
        htpasswd file (bcrypt or SHA-512 crypt) of proxy users: requests without valid \
        Proxy-Authorization: Basic get 407. Re-read on SIGHUP.
        """, valueName: "file"))
    var authFile: String?

    @Option(name: .long, help: ArgumentHelp("""
        PAC file served at /proxy.pac and /wpad.dat (default: one sending everything to the address the \
        client used).
        """, valueName: "file"))
    var pac: String?

    @Option(name: .long, help: ArgumentHelp("Address to listen on (repeatable).", valueName: "host:port"))
    var listen: [String] = []

    @Option(name: .long, help: "enforce (block) or report (log what would be blocked, let it through).")
    var mode: ProxyMode = .enforce

    @Option(name: .long, help: ArgumentHelp("Pin a name to an address, like curl's --resolve (repeatable).",
                                            valueName: "name=ip"))
    var resolve: [String] = []

    @Option(name: .long, help: ArgumentHelp("Port CONNECT may reach (repeatable; default 443).", valueName: "port"))
    var connectPort: [Int] = []

    @Option(name: .long, help: ArgumentHelp("Network clients may connect from (repeatable; default loopback).",
                                            valueName: "cidr"))
    var allowClient: [IPNetwork] = []

    enum ContextChoice: String, ExpressibleByArgument { case auto, app, media, web }

    @Option(name: .long, help: """
        Load context: auto (from each request's User-Agent: AppleCoreMedia is media, a WebKit UA \
        without Safari is web, else app), or app, media or web for every request.
        """)
    var context: ContextChoice = .auto

    @Option(name: .long, help: """
        Decision log format: json (one object per line on stdout), text, or journal (journald fields \
        ATS_ACTION, ATS_REASON ...). Default: journal when stderr is connected to the journal, else json.
        """)
    var logFormat: LogFormat?

    @Option(name: .long, help: ArgumentHelp("""
        Admin listener for /metrics, /healthz and /readyz (a bare port means 127.0.0.1:PORT); off unless given.
        """, valueName: "host:port"))
    var admin: String?

    @Option(name: .long, help: ArgumentHelp("Seconds open connections get to finish after SIGTERM.",
                                            valueName: "seconds"))
    var gracePeriod = 10.0

    @Option(name: .long, help: "Most connections open at once; accepting pauses at the cap.")
    var maxConnections = 10_000

    @Option(name: .long, help: ArgumentHelp("""
        Event loops (threads serving connections). Default: one per CPU the process may use: the online \
        CPUs, narrowed by the CPU affinity mask and a cgroup v2 cpu.max quota (rounded up).
        """, valueName: "count"))
    var loops: Int?

    @Option(name: .long, help: ArgumentHelp("Seconds to receive a complete request head.", valueName: "seconds"))
    var headTimeout = 10.0

    @Option(name: .long, help: ArgumentHelp("Seconds to connect to the origin.", valueName: "seconds"))
    var connectTimeout = 10.0

    @Option(name: .long, help: ArgumentHelp("Seconds a tunnel may stay silent.", valueName: "seconds"))
    var idleTimeout = 300.0

    @Option(name: .long, help: ArgumentHelp("PEM file of extra trusted roots for certificate checks (repeatable).",
                                            valueName: "file"))
    var caFile: [String] = []

    enum Switch: String, ExpressibleByArgument { case on, off }

    @Option(name: .long, help: """
        Inspect CONNECT tunnels' TLS handshakes (on): version and cipher (R14), certificates (R15, R17), \
        SNI. off only tells TLS from cleartext.
        """)
    var tlsInspection: Switch = .on

    @Option(name: .long, help: """
        When server certificates are judged: before (the server's first flight waits for the verdict; \
        cached verdicts answer at once), parallel (the tunnel is cut if the verdict fails), or off.
        """)
    var certificateCheck: CertificateMode = .before

    @Option(name: .long, help: "A ClientHello naming another host than the CONNECT: block (default) or log.")
    var sniMismatch: SNIMismatchAction = .block

    @Option(name: .long, help: ArgumentHelp("Seconds a certificate verdict is reused.", valueName: "seconds"))
    var verdictTtl = 300.0

    @Option(name: .long, help: """
        Certificate Transparency (R16) for leaves that chain to the system store: on counts the SCTs \
        with distinct log ids against Apple's thresholds (2 for a lifetime up to 180 days, 3 above). \
        WITHOUT --ct-log-list THE SCTs ARE COUNTED, NOT VERIFIED. Off by default.
        """)
    var certificateTransparency: Switch = .off

    @Option(name: .long, help: ArgumentHelp("""
        Apple's CT log list (JSON): verify each SCT's log and signature (implies --certificate-transparency on).
        """, valueName: "file"))
    var ctLogList: String?

    @Option(name: .long, help: ArgumentHelp("Seconds the inspected part of a TLS handshake may take.",
                                            valueName: "seconds"))
    var handshakeTimeout = 10.0

    @Option(name: .long, help: ArgumentHelp("""
        Port an upgraded request goes to (repeatable; default 80=443, other ports are kept).
        """, valueName: "from=to"))
    var upgradePort: [String] = []

    func validate() throws {
        for timeout in [verdictTtl, handshakeTimeout] where !(timeout > 0) {
            throw ValidationError("--verdict-ttl and --handshake-timeout must be positive")
        }
        _ = try Self.portMap(upgradePort)
        for port in connectPort where !(1...65535).contains(port) {
            throw ValidationError("--connect-port \(port) is not a port")
        }
        for timeout in [headTimeout, connectTimeout, idleTimeout] where !(timeout > 0) {
            throw ValidationError("timeouts must be positive")
        }
        guard gracePeriod >= 0 else { throw ValidationError("--grace-period must not be negative") }
        guard maxConnections > 0 else { throw ValidationError("--max-connections must be positive") }
        if let loops, !(1...1024).contains(loops) { throw ValidationError("--loops must be 1 to 1024, not \(loops)") }
    }

    /// The daemon's configuration from these flags (the config file already folded in), with the
    /// policy loaded. Used at start and again on every reload.
    func makeConfiguration() throws -> ProxyConfiguration {
        var configuration = ProxyConfiguration()
        let engineOptions = options.engineOptions
        let loaded = try options.loadPolicies()
        configuration.apps = loaded.map { policy in
            AppPolicy(id: policy.id, engine: DecisionEngine(policy: Policy(policy.source), options: engineOptions),
                      label: policy.label, executable: policy.executable, name: policy.name)
        }
        if let first = configuration.apps.first {
            configuration.engine = first.engine
            configuration.policyLabel = first.label
        } else {
            configuration.engine = DecisionEngine(policy: .empty, options: engineOptions)
        }
        let ids = configuration.apps.isEmpty ? ["embedded"] : configuration.apps.map(\.id)
        func index(of id: String, for flag: String) throws -> Int {
            guard let index = ids.firstIndex(of: id) else {
                throw CommandFailure(message: "\(flag): no policy has the ID '\(id)' (loaded: \(ids.joined(separator: ", ")))")
            }
            return index
        }
        configuration.routes = try route.map { text in
            guard let equals = text.lastIndex(of: "="), let rule = RouteRule(parsing: text[..<equals]) else {
                throw CommandFailure(message: "--route \(text): expected user:NAME, client:CIDR, port:N or agent:NAME, then =ID")
            }
            return Route(rule: rule, app: try index(of: String(text[text.index(after: equals)...]), for: "--route \(text)"))
        }
        if let unrouted {
            configuration.unrouted = unrouted == "block" ? .block : .app(try index(of: unrouted, for: "--unrouted"))
        }
        if let authFile {
            do {
                configuration.passwords = try PasswordFile.load(path: authFile)
            } catch {
                throw CommandFailure(message: "--auth-file \(error.description)")
            }
        }
        if let pac {
            guard let data = FileManager.default.contents(atPath: pac), let text = String(data: data, encoding: .utf8) else {
                throw CommandFailure(message: "--pac \(pac): cannot read it as UTF-8 text")
            }
            configuration.pacFile = text
        }
        if !listen.isEmpty {
            configuration.listen = try listen.map { text in
                guard let address = SocketAddress(parsing: text) else {
                    throw CommandFailure(message: "--listen \(text): expected IP:PORT, e.g. 127.0.0.1:3128 or [::1]:3128")
                }
                return address
            }
        }
        if let admin {
            let text = admin.allSatisfy(\.isNumber) ? "127.0.0.1:\(admin)" : admin
            guard let address = SocketAddress(parsing: text) else {
                throw CommandFailure(message: "--admin \(admin): expected IP:PORT or PORT, e.g. 127.0.0.1:9090")
            }
            configuration.admin = address
        }
        configuration.mode = mode
        configuration.resolve = try Self.pins(resolve)
        if !connectPort.isEmpty { configuration.connectPorts = Set(connectPort) }
        if !allowClient.isEmpty { configuration.allowClients = allowClient }
        configuration.logFormat = logFormat ?? (Journal.isConnected ? .journal : .json)
        configuration.context = context == .auto ? nil : LoadContext(rawValue: context.rawValue)
        configuration.maximumConnections = maxConnections
        configuration.loopCount = loops ?? 0
        configuration.headTimeout = headTimeout
        configuration.connectTimeout = connectTimeout
        configuration.idleTimeout = idleTimeout
        configuration.tlsInspection = tlsInspection == .on
        configuration.certificateMode = certificateCheck
        configuration.sniMismatch = sniMismatch
        configuration.verdictTimeToLive = verdictTtl
        configuration.handshakeTimeout = handshakeTimeout
        configuration.upgradePorts = [80: 443].merging(try Self.portMap(upgradePort)) { $1 }
        do {
            configuration.trustStore = try TrustStore(caFiles: caFile)
        } catch {
            throw CommandFailure(message: "--ca-file: \(error.description)")
        }
        if let ctLogList {
            do {
                configuration.transparency = TransparencyCheck(logList: try CTLogList(file: ctLogList))
            } catch {
                throw CommandFailure(message: "--ct-log-list: \(error.description)")
            }
        } else if certificateTransparency == .on {
            configuration.transparency = TransparencyCheck()
        }
        return configuration
    }

    /// `FROM=TO` port pairs.
    static func portMap(_ entries: [String]) throws -> [Int: Int] {
        var map: [Int: Int] = [:]
        for entry in entries {
            let parts = entry.split(separator: "=")
            guard parts.count == 2, let from = Int(parts[0]), let to = Int(parts[1]),
                  (1...65535).contains(from), (1...65535).contains(to) else {
                throw ValidationError("--upgrade-port \(entry): expected FROM=TO, e.g. 8080=8443")
            }
            map[from] = to
        }
        return map
    }

    func run() throws {
        let configuration = try makeConfiguration()
        let server: ProxyServer
        let admin: AdminServer?
        let inherited = try ServiceManager.inheritedListeners()
        let feed = LiveFeed()
        do {
            server = try ProxyServer(configuration: configuration, sink: Journal.sink(for: configuration.logFormat),
                                     inherited: inherited.proxy, observer: feed)
            if let fd = inherited.admin.first {
                admin = try AdminServer(inherited: fd, server: server, feed: feed)
            } else if let address = configuration.admin {
                admin = try AdminServer(listeningOn: address, server: server, feed: feed)
            } else {
                admin = nil
            }
        } catch {
            throw CommandFailure(message: "cannot listen: \(error.description)", exitCode: 1)
        }
        ProxyServer.version = AtsgateVersion.string
        let loops = server.loopAllowance
        ServiceManager.say("\(loops.count) event loop\(loops.count == 1 ? "" : "s"): \(loops.source)")
        server.start()
        admin?.start()
        var where_ = server.boundAddresses.map(\.description).joined(separator: ", ")
        if let adminAddress = admin?.address { where_ += "; admin on \(adminAddress)" }
        let more = configuration.apps.count > 1 ? " and \(configuration.apps.count - 1) more" : ""
        let line = "listening on \(where_) (policy \(configuration.policyLabel)\(more), "
            + "profile \(options.profile.rawValue), mode \(mode.rawValue))"
        ServiceLifecycle(server: server, arguments: Array(CommandLine.arguments.dropFirst()),
                         gracePeriod: gracePeriod, announce: { ServiceManager.say(line) }).start()
        // The loops hold the admin listener's handlers, not the listener: keep it for the life of the process.
        withExtendedLifetime(admin) { dispatchMain() }
    }

    /// `NAME=IP` pairs; a name may be pinned to several addresses.
    static func pins(_ entries: [String]) throws -> [String: [IPAddress]] {
        var pins: [String: [IPAddress]] = [:]
        for entry in entries {
            let parts = entry.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, case .name(let name)? = try? Host.parse(parts[0]),
                  let address = IPAddress.parseStrict(parts[1].hasPrefix("[") ? parts[1].dropFirst().dropLast() : parts[1])
            else {
                throw CommandFailure(message: "--resolve \(entry): expected NAME=IP, e.g. api.example.com=127.0.0.1")
            }
            pins[name, default: []].append(address)
        }
        return pins
    }

}

extension ProxyMode: ExpressibleByArgument {}
extension LogFormat: ExpressibleByArgument {}
extension CertificateMode: ExpressibleByArgument {}
extension SNIMismatchAction: ExpressibleByArgument {}
