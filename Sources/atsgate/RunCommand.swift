import Admin
import ArgumentParser
import Dispatch
import Foundation
import ProxyCore

/// `atsgate run`: the proxy daemon. With no flags it listens on 127.0.0.1:3128 with full ATS.
///
/// Its options come in groups by subsystem, each applying itself to the configuration (Options/); the
/// help lists them in the order they are declared here.
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

    @OptionGroup var policy: PolicyOptions
    @OptionGroup var access: AccessOptions
    @OptionGroup var listeners: ListenerOptions
    @OptionGroup var log: LogOptions
    @OptionGroup var dns: DNSOptions
    @OptionGroup var upstream: UpstreamOptions
    @OptionGroup var inspection: InspectionOptions
    @OptionGroup var service: ServiceOptions

    /// The daemon's configuration from these flags (the config file already folded in), with the
    /// policy loaded. Used at start and again on every reload.
    func makeConfiguration() throws -> ProxyConfiguration {
        var configuration = ProxyConfiguration()
        // The policies first, because routes and --unrouted name them by ID. The rest keep the order of
        // the checks that read files, so that of two broken flags the same one is named as before.
        try policy.apply(to: &configuration)
        try access.apply(to: &configuration)
        try listeners.apply(to: &configuration)
        try log.apply(to: &configuration)
        try dns.apply(to: &configuration)
        try upstream.apply(to: &configuration)
        try inspection.apply(to: &configuration)
        return configuration
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
            + "profile \(policy.profile.rawValue), mode \(access.mode.rawValue))"
        ServiceLifecycle(server: server, arguments: Array(CommandLine.arguments.dropFirst()),
                         gracePeriod: service.gracePeriod, announce: { ServiceManager.say(line) }).start()
        // The loops hold the admin listener's handlers, not the listener: keep it for the life of the process.
        withExtendedLifetime(admin) { dispatchMain() }
    }
}
