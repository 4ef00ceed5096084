import ArgumentParser
import ProxyCore

/// `atsgate run`: the proxy daemon. With no flags it listens on 127.0.0.1:3128 with full ATS.
///
/// Its options come in groups by subsystem (Options/), listed by the help in the order they are
/// declared here. A new flag goes into its subsystem's group: the `@Option`, its check in the group's
/// `validate()` and its effect in the group's `apply(to:)`; the config file takes it as a key at once.
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
            reopens --log-file (logrotate). It exits 2 with a one-line cause on stderr when it cannot \
            start (a bad flag or value, a port in use, an unreadable policy or file).
            """
    )

    @Option(name: .long, help: ArgumentHelp("Config file: one 'flag = value' per line; flags override it.",
                                            valueName: "file"))
    var config: String?

    @OptionGroup var policy: PolicyOptions
    @OptionGroup var access: AccessOptions
    @OptionGroup var listeners: ListenerOptions
    @OptionGroup var gateway: GatewayOptions
    @OptionGroup var log: LogOptions
    @OptionGroup var dns: DNSOptions
    @OptionGroup var upstream: UpstreamOptions
    @OptionGroup var inspection: InspectionOptions
    @OptionGroup var trust: TrustOptions
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
        try gateway.apply(to: &configuration)
        try log.apply(to: &configuration)
        try dns.apply(to: &configuration)
        try upstream.apply(to: &configuration)
        try inspection.apply(to: &configuration)
        try trust.apply(to: &configuration)
        return configuration
    }

    func run() throws {
        var daemon = Daemon(configuration: try makeConfiguration(), inherited: try ServiceManager.inheritedListeners())
        service.apply(to: &daemon)
        let arguments = Array(CommandLine.arguments.dropFirst())
        daemon.reconfigure = { try RunCommand.makeConfiguration(arguments: arguments) }
        try daemon.run()
    }

    /// Reads the config file and policy again exactly as at start (the same arguments), for a reload;
    /// whatever is wrong comes back as a one-line CommandFailure.
    static func makeConfiguration(arguments: [String]) throws -> ProxyConfiguration {
        do {
            let expanded = try ConfigFile.expand(arguments)
            return try RunCommand.parse(Array(expanded.dropFirst())).makeConfiguration()
        } catch let failure as CommandFailure {
            throw failure
        } catch {
            throw CommandFailure(message: RunCommand.message(for: error))
        }
    }
}
