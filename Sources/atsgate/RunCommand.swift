import ArgumentParser
import ATSPolicy
import DecisionLog
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
            Every decision is logged to standard output, one record per line (or to --log-file, or to the \
            journal), by a writer thread of its own: a log that cannot keep up never stalls the proxy \
            (--log-overflow). Signals: SIGHUP reloads the config file and policy (new connections use \
            them, open ones keep theirs; a broken file keeps the running state); SIGTERM stops \
            accepting, lets open connections finish for --grace-period seconds, then exits 0; SIGINT \
            does the same with at most 1 second; a second SIGTERM or SIGINT exits at once; SIGUSR1 \
            reopens --log-file (logrotate). It exits non-zero with a one-line \
            cause on stderr when it cannot start (bad flag, port in use, unreadable policy).
            """
    )

    @Option(name: .long, help: ArgumentHelp("Config file: one 'flag = value' per line; flags override it.",
                                            valueName: "file"))
    var config: String?

    @OptionGroup var options: PolicyOptions

    @Option(name: .long, help: ArgumentHelp("""
        Which policy a request gets (repeatable, tried in order): user:NAME (the proxy user), client:CIDR, \
        port:N (the listening port reached) or agent:NAME (the User-Agent's product name), =ID of a policy; \
        then options after commas: allow-dest=PATTERN, deny-dest=PATTERN (added to --allow-dest and \
        --deny-dest for this route's requests), and last ,parent=URL or ,direct (the route's way out: its \
        own parent proxy, or straight to the origin; =parent=URL or =direct alone names a way out without \
        a policy). After the routes, a User-Agent whose product is a bundle's CFBundleExecutable or \
        CFBundleName gets that bundle's policy.
        """, valueName: "rule=id[,option][,parent=url|,direct]"))
    var route: [String] = []

    @Option(name: .long, help: ArgumentHelp("""
        Destination clients off the proxy host may reach although it is denied by default (repeatable): \
        a CIDR or address, a NAME, or a .SUFFIX (the name and every name under it). By default such \
        clients cannot reach loopback, 0.0.0.0/8, ::, link-local (cloud metadata), multicast, broadcast \
        and the proxy's own addresses; private ranges stay reachable.
        """, valueName: "cidr|name|.suffix"))
    var allowDest: [String] = []

    @Option(name: .long, help: ArgumentHelp("""
        Destination no client may reach (repeatable; CIDR or address, NAME, .SUFFIX): 403 \
        destination-not-allowed, also in report mode. Checked on every address the proxy would connect \
        to, after resolution and --resolve. An explicit deny wins over --allow-dest.
        """, valueName: "cidr|name|.suffix"))
    var denyDest: [String] = []

    @Option(name: .long, help: ArgumentHelp("""
        A name for a lab device (repeatable, first match wins): its client address or range, or the proxy \
        user it logs in as. Every record gets the name as 'device' (null when none matches), the per-app \
        metrics a device label, the live page a device filter, the report a devices column.
        """, valueName: "name=cidr|user:name"))
    var device: [String] = []

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
        htpasswd file (the --auth-file format) of the admin window's users: /metrics, the live page and \
        /events answer 401 without valid Authorization: Basic; /healthz and /readyz stay open. Re-read on \
        SIGHUP.
        """, valueName: "file"))
    var adminAuth: String?

    @Option(name: .long, help: ArgumentHelp("""
        PAC file served at /proxy.pac and /wpad.dat (default: one sending everything to the address the \
        client used).
        """, valueName: "file"))
    var pac: String?

    @Option(name: .long, help: ArgumentHelp("""
        The proxy's name in the Proxy-Status field (RFC 9209) of every answer it makes itself (default \
        atsgate): an sf-token, or any printable ASCII text (then sent as an sf-string).
        """, valueName: "name"))
    var proxyName: String?

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
        Append decision records to this file (created mode 0640, opened O_APPEND) instead of standard \
        output; SIGUSR1 reopens it, as logrotate expects. Records are json or text.
        """, valueName: "path"))
    var logFile: String?

    @Option(name: .long, help: """
        When the log's reader cannot keep up and its buffer is full: drop (the records that do not fit \
        are counted: atsgate_log_dropped_records_total, a warning, then a log-overflow record with \
        'dropped') or pause (nothing is lost: the proxy stops accepting and reading requests until the \
        log drains; open tunnels keep relaying; /readyz answers 503).
        """)
    var logOverflow: LogOverflow = .drop

    @Option(name: .long, help: ArgumentHelp("""
        Bytes of records the log holds for a reader that falls behind, e.g. 65536, 64K, 16M (default 16M).
        """, valueName: "bytes"))
    var logBuffer: ByteCount?

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

    @Option(name: .long, help: ArgumentHelp("""
        Seconds to resolve an origin's name (separate from --connect-timeout); past it: 504 dns-timeout.
        """, valueName: "seconds"))
    var dnsTimeout = 10.0

    @Option(name: .long, help: ArgumentHelp("Least seconds an answer is cached, whatever its TTL.", valueName: "seconds"))
    var dnsMinTtl = 1.0

    @Option(name: .long, help: ArgumentHelp("Most seconds an answer is cached, whatever its TTL.", valueName: "seconds"))
    var dnsMaxTtl = 3600.0

    @Option(name: .long, help: ArgumentHelp("Seconds NXDOMAIN and NODATA answers are remembered (0: not at all).",
                                            valueName: "seconds"))
    var dnsNegativeTtl = 10.0

    @Option(name: .long, help: ArgumentHelp("""
        Seconds past its TTL an answer may still be served when the resolver fails (RFC 8767; 0: never). \
        The record says dns_stale.
        """, valueName: "seconds"))
    var dnsStale = 86_400.0

    @Option(name: .long, help: ArgumentHelp("""
        DNS server to ask instead of /etc/resolv.conf's (repeatable; UDP, and TCP for truncated answers).
        """, valueName: "ip:port"))
    var dnsServer: [String] = []

    @Option(name: .long, help: ArgumentHelp("""
        Parent proxy every origin is reached through (repeatable, tried in order; one that fails is passed \
        over for 30 s). Tunnels go through it with CONNECT, allowed cleartext as absolute-form requests; its \
        credentials go to it alone.
        """, valueName: "http://[user:password@]host:port"))
    var parent: [String] = []

    @Option(name: .long, help: ArgumentHelp("""
        Destination that never goes through a parent (repeatable, like NO_PROXY): a name, .domain (the \
        domain and every name under it), or a CIDR (IP literals).
        """, valueName: "name|.suffix|cidr"))
    var parentBypass: [String] = []

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
        for timeout in [headTimeout, connectTimeout, idleTimeout, dnsTimeout] where !(timeout > 0) {
            throw ValidationError("timeouts must be positive")
        }
        for (flag, value) in [("--dns-min-ttl", dnsMinTtl), ("--dns-max-ttl", dnsMaxTtl),
                              ("--dns-negative-ttl", dnsNegativeTtl), ("--dns-stale", dnsStale)] where !(value >= 0) {
            throw ValidationError("\(flag) must not be negative")
        }
        guard dnsMinTtl <= dnsMaxTtl else { throw ValidationError("--dns-min-ttl is above --dns-max-ttl") }
        // Checked here, so that a config file's bad value is reported against the file and its line.
        _ = try dnsServers()
        for url in parent { _ = try Self.parentProxy(url, flag: "--parent") }
        _ = try parentBypasses()
        _ = try proxyStatusName()
        _ = try deviceTable()
        guard gracePeriod >= 0 else { throw ValidationError("--grace-period must not be negative") }
        guard maxConnections > 0 else { throw ValidationError("--max-connections must be positive") }
        if let logBuffer, logBuffer.bytes < 4096 {
            throw ValidationError("--log-buffer \(logBuffer.bytes): at least 4096 bytes (a few records)")
        }
        if logFile != nil, logFormat == .journal {
            throw ValidationError("--log-file takes json or text records; journal records go to journald")
        }
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
            let parsed: Route.Text
            switch Route.parse(text) {
            case .success(let value): parsed = value
            case .failure(let error): throw CommandFailure(message: error.description)
            }
            return Route(rule: parsed.rule, app: try parsed.id.map { try index(of: $0, for: "--route \(text)") },
                         egress: parsed.egress, destinations: parsed.destinations, name: parsed.name)
        }
        configuration.destinations = DestinationRules(allow: try Self.patterns(allowDest, flag: "--allow-dest"),
                                                      deny: try Self.patterns(denyDest, flag: "--deny-dest"))
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
        if let adminAuth {
            do {
                configuration.adminPasswords = try PasswordFile.load(path: adminAuth)
            } catch {
                throw CommandFailure(message: "--admin-auth \(error.description)")
            }
        }
        if let pac {
            guard let data = FileManager.default.contents(atPath: pac), let text = String(data: data, encoding: .utf8) else {
                throw CommandFailure(message: "--pac \(pac): cannot read it as UTF-8 text")
            }
            configuration.pacFile = text
        }
        if !listen.isEmpty {
            configuration.listeners.proxy = try listen.map { text in
                guard let address = SocketAddress(parsing: text) else {
                    throw CommandFailure(message: "--listen \(text): expected IP:PORT, e.g. 127.0.0.1:3128 or [::1]:3128")
                }
                return address
            }
        }
        try configureTLSListeners(&configuration)
        if let admin {
            let text = admin.allSatisfy(\.isNumber) ? "127.0.0.1:\(admin)" : admin
            guard let address = SocketAddress(parsing: text) else {
                throw CommandFailure(message: "--admin \(admin): expected IP:PORT or PORT, e.g. 127.0.0.1:9090")
            }
            configuration.listeners.admin = address
        }
        configuration.mode = mode
        configuration.proxyName = try proxyStatusName()
        configuration.devices = try deviceTable()
        configuration.resolve = try Self.pins(resolve)
        if !connectPort.isEmpty { configuration.connectPorts = Set(connectPort) }
        if !allowClient.isEmpty { configuration.allowClients = allowClient }
        // Records bound for a file are lines, whatever stderr is connected to.
        configuration.log.format = logFormat ?? (Journal.isConnected && logFile == nil ? .journal : .json)
        configuration.log.file = logFile
        configuration.log.overflow = logOverflow
        if let logBuffer { configuration.log.bufferBytes = logBuffer.bytes }
        configuration.context = context == .auto ? nil : LoadContext(rawValue: context.rawValue)
        configuration.listeners.maximumConnections = maxConnections
        configuration.listeners.loopCount = loops ?? 0
        configuration.timeouts.head = headTimeout
        configuration.timeouts.connect = connectTimeout
        configuration.timeouts.idle = idleTimeout
        configuration.dns.timeout = dnsTimeout
        configuration.dns.minimumTTL = dnsMinTtl
        configuration.dns.maximumTTL = dnsMaxTtl
        configuration.dns.negativeTTL = dnsNegativeTtl
        configuration.dns.staleLimit = dnsStale
        configuration.dns.servers = try dnsServers()
        configuration.parents.proxies = try parent.map { try Self.parentProxy($0, flag: "--parent") }
        configuration.parents.bypass = try parentBypasses()
        configuration.inspection.enabled = tlsInspection == .on
        configuration.inspection.certificateMode = certificateCheck
        configuration.inspection.sniMismatch = sniMismatch
        configuration.inspection.verdictTimeToLive = verdictTtl
        configuration.timeouts.handshake = handshakeTimeout
        configuration.upgradePorts = [80: 443].merging(try Self.portMap(upgradePort)) { $1 }
        do {
            configuration.inspection.trustStore = try TrustStore(caFiles: caFile)
        } catch {
            throw CommandFailure(message: "--ca-file: \(error.description)")
        }
        if let ctLogList {
            do {
                configuration.inspection.transparency = TransparencyCheck(logList: try CTLogList(file: ctLogList))
            } catch {
                throw CommandFailure(message: "--ct-log-list: \(error.description)")
            }
        } else if certificateTransparency == .on {
            configuration.inspection.transparency = TransparencyCheck()
        }
        return configuration
    }

    /// `--allow-dest` / `--deny-dest` values.
    static func patterns(_ values: [String], flag: String) throws -> [DestinationPattern] {
        try values.map { text in
            guard let pattern = DestinationPattern(parsing: Substring(text)) else {
                throw CommandFailure(message: "\(flag) \(text): expected a CIDR (10.0.0.0/8), an address, a NAME or a .SUFFIX")
            }
            return pattern
        }
    }

    /// `--listen-tls`, `--listen-cert` and `--listen-key`: the pair is loaded (and checked) here, at
    /// start and on every reload, so a wrong or missing file names itself before anything listens, and
    /// a reload with one keeps the running pair.
    private func configureTLSListeners(_ configuration: inout ProxyConfiguration) throws {
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
        var configuration = try makeConfiguration()
        let server: ProxyServer
        let admin: AdminServer?
        let inherited = try ServiceManager.inheritedListeners()
        // The admin socket systemd bound is one of the proxy's own addresses (the destination ACL).
        if let fd = inherited.admin.first, let address = Socket.localAddress(fd) { configuration.listeners.admin = address }
        if !inherited.proxyTLS.isEmpty, configuration.listeners.tlsIdentity == nil {
            throw CommandFailure(message: "socket activation passed a socket named proxy-tls: "
                                 + "--listen-cert FILE and --listen-key FILE are needed for it")
        }
        // The live page's feed is the admin window's: without one, no record pays for it.
        let feed = LiveFeed()
        let hasAdmin = !inherited.admin.isEmpty || configuration.listeners.admin != nil
        let sink = try DecisionLogOutput.sink(for: configuration)
        do {
            server = try ProxyServer(configuration: configuration, sink: sink, inherited: inherited.proxy,
                                     inheritedTLS: inherited.proxyTLS, observer: hasAdmin ? feed : nil)
            if let fd = inherited.admin.first {
                admin = try AdminServer(inherited: fd, server: server, feed: feed)
            } else if let address = configuration.listeners.admin {
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
        var where_ = (server.boundAddresses.map(\.description) + server.boundTLSAddresses.map { "\($0) (TLS)" })
            .joined(separator: ", ")
        if let identity = configuration.listeners.tlsIdentity, !server.boundTLSAddresses.isEmpty {
            where_ += " with the certificate of \(ServiceLifecycle.describe(identity))"
        }
        if let adminAddress = admin?.address { where_ += "; admin on \(adminAddress)" }
        let more = configuration.apps.count > 1 ? " and \(configuration.apps.count - 1) more" : ""
        let line = "listening on \(where_) (policy \(configuration.policyLabel)\(more), "
            + "profile \(options.profile.rawValue), mode \(mode.rawValue))"
        ServiceLifecycle(server: server, arguments: Array(CommandLine.arguments.dropFirst()),
                         gracePeriod: gracePeriod, announce: { ServiceManager.say(line) }).start()
        // The loops hold the admin listener's handlers, not the listener: keep it for the life of the process.
        withExtendedLifetime(admin) { dispatchMain() }
    }

    /// `--parent URL` (or a route's `parent=URL`), with the flag named in the error.
    static func parentProxy(_ url: String, flag: String) throws -> ParentProxy {
        do {
            return try ParentProxy(url: url)
        } catch {
            throw ValidationError("\(flag) \(url): \(error.description)")
        }
    }

    /// `--device` values, in order.
    func deviceTable() throws -> DeviceTable {
        DeviceTable(try device.map { text in
            switch Device.parse(text) {
            case .success(let device): return device
            case .failure(let error): throw ValidationError(error.description)
            }
        })
    }

    /// `--proxy-name`, checked: a Proxy-Status member must parse.
    func proxyStatusName() throws -> ProxyName {
        guard let proxyName else { return .atsgate }
        do {
            return try ProxyName(proxyName)
        } catch {
            throw ValidationError(error.description)
        }
    }

    func dnsServers() throws -> [SocketAddress] {
        try dnsServer.map { text in
            guard let address = SocketAddress(parsing: text) else {
                throw ValidationError("--dns-server \(text): expected IP:PORT, e.g. 10.0.0.53:53 or [fd00::53]:53")
            }
            return address
        }
    }

    func parentBypasses() throws -> [DestinationPattern] {
        try parentBypass.map { text in
            guard let bypass = DestinationPattern(parsing: Substring(text)) else {
                throw ValidationError("--parent-bypass \(text): expected a name, .domain (it and every name under it) or a CIDR")
            }
            return bypass
        }
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
extension LogOverflow: ExpressibleByArgument {}
extension CertificateMode: ExpressibleByArgument {}
extension SNIMismatchAction: ExpressibleByArgument {}
