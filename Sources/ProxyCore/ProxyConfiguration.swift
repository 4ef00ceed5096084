import ATSPolicy

/// Whether blocks are enforced or only logged.
public enum ProxyMode: String, Sendable, CaseIterable {
    case enforce
    /// Log what would be blocked (enforced=false) and let it through.
    case report
}

/// Everything the daemon needs to run, resolved from defaults, the config file and flags.
public struct ProxyConfiguration: Sendable {
    public var listen: [SocketAddress] = [SocketAddress(ip: .v4(0x7F00_0001), port: 3128)]
    public var engine: DecisionEngine = DecisionEngine(policy: .empty)
    /// The policy's name in the log (its path, or "embedded").
    public var policyLabel = "embedded"
    public var mode: ProxyMode = .enforce
    public var resolve: [String: [IPAddress]] = [:]
    public var connectPorts: Set<Int> = [443]
    public var allowClients: [IPNetwork] = [IPNetwork(address: .v4(0x7F00_0000), prefixLength: 8),
                                            IPNetwork(address: .v6(1), prefixLength: 128)]
    public var logFormat: LogFormat = .json
    /// The load context for every request; nil infers it from each request's User-Agent.
    public var context: LoadContext?
    public var maximumConnections = 10_000
    /// Seconds allowed for a client to send a complete request head (slowloris).
    public var headTimeout = 10.0
    /// Seconds allowed to connect to the origin.
    public var connectTimeout = 10.0
    /// Seconds a tunnel may stay silent in both directions.
    public var idleTimeout = 300.0
    /// The admin listener (/metrics, /healthz, /readyz); none when nil.
    public var admin: SocketAddress?
    /// Serial queues of the event loop; one per core by default.
    public var loopCount = 0

    public init() {}
}
