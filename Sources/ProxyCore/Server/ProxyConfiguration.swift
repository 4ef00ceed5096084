import ATSPolicy
import DNS
import DecisionLog
import Inspection
import ProxyAccess
import ProxyAnswers
import TLSClient
import POSIX

/// Whether blocks are enforced or only logged.
public enum ProxyMode: String, Sendable, CaseIterable {
    case enforce
    /// Log what would be blocked (enforced=false) and let it through.
    case report
}

/// Everything the daemon needs to run, resolved from defaults, the config file and flags. Grouped by
/// subsystem as `atsgate run`'s options are: the policy and access rules at the top, then the
/// listeners, the decision log, the timeouts, TLS inspection, parent proxies and the resolver.
public struct ProxyConfiguration: Sendable {
    public var engine: DecisionEngine = DecisionEngine(policy: .empty)
    /// The policy's name in the log (its path, or "embedded").
    public var policyLabel = "embedded"
    /// The policies of `--policy [ID=]FILE` (an .ipa or .app gives one per bundle); empty: `engine`
    /// alone, under `policyLabel`.
    public var apps: [AppPolicy] = []
    public var mode: ProxyMode = .enforce
    /// The load context for every request; nil infers it from each request's User-Agent.
    public var context: LoadContext?
    /// Where `--cleartext upgrade` connects: port 80 goes to 443, others stay, unless mapped here.
    public var upgradePorts: [Int: Int] = [80: 443]
    public var connectPorts: Set<Int> = [443]
    public var resolve: [String: [IPAddress]] = [:]

    /// `--route` rules, tried in order before automatic agent routing.
    public var routes: [Route] = []
    /// What a request that no rule and no User-Agent routed gets (default: the first policy).
    public var unrouted: Unrouted = .app(0)
    /// `--auth-file`: Basic proxy authentication against these users; none when nil.
    public var passwords: PasswordFile?
    /// `--allow-dest` and `--deny-dest`: the destination ACL's explicit rules (routes may add theirs).
    public var destinations = DestinationRules()
    /// `--admin-auth`: the users the admin window asks for (/metrics, the live page); open when nil.
    public var adminPasswords: PasswordFile?
    /// `--pac FILE`: served at /proxy.pac and /wpad.dat instead of the generated one.
    public var pacFile: String?
    /// `--proxy-name`: the proxy's name in the Proxy-Status field of its own answers (RFC 9209).
    public var proxyName = ProxyName.atsgate
    /// `--device`: the lab's names for its clients (by address or proxy user), on every record and
    /// the per-app metrics.
    public var devices = DeviceTable()
    /// `--system-traffic`, `--system-dest`: which traffic is the device's own, and whether it is judged.
    public var systemTraffic = SystemTrafficRules()
    public var allowClients: [IPNetwork] = [IPNetwork(address: .v4(0x7F00_0000), prefixLength: 8),
                                            IPNetwork(address: .v6(1), prefixLength: 128)]

    public var listeners = Listeners()
    public var log = LogSettings()
    public var timeouts = Timeouts()
    public var inspection = InspectionSettings()
    public var transparent = TransparentSettings()
    public var parents = ParentSettings()
    /// The resolver (`--dns-timeout`, `--dns-min-ttl`, `--dns-max-ttl`, `--dns-negative-ttl`,
    /// `--dns-stale`, `--dns-server`).
    package var dns = ResolverSettings()

    public init() {}

    /// Where clients reach the proxy, and how much of the machine it takes.
    public struct Listeners: Sendable {
        /// `--listen`: plain HTTP proxy listeners.
        public var proxy: [SocketAddress] = [SocketAddress(ip: .v4(0x7F00_0001), port: 3128)]
        /// `--listen-tls`: addresses where clients speak TLS to the proxy, with `tlsIdentity`.
        public var tls: [SocketAddress] = []
        /// `--listen-cert` and `--listen-key`, loaded: what the TLS listeners present. Re-read on every
        /// reload; a connection keeps the pair it was accepted with.
        public var tlsIdentity: TLSServerContext?
        /// `--listen-transparent`, `--listen-tproxy`: connections a firewall redirected (NAT) or handed
        /// over (TPROXY), judged by where they were going. `--listen-quic`: UDP, QUIC Initials read,
        /// recorded and dropped.
        public var transparent: [SocketAddress] = []
        public var tproxy: [SocketAddress] = []
        public var quic: [SocketAddress] = []
        /// The admin listener (/metrics, /healthz, /readyz); none when nil.
        public var admin: SocketAddress?
        public var maximumConnections = 10_000
        /// Serial queues of the event loop; 0: one per CPU the process may use (CPUAllowance).
        public var loopCount = 0

        public init() {}
    }

    /// The decision log's output.
    public struct LogSettings: Sendable {
        public var format: LogFormat = .json
        /// `--log-file`: records appended to this file (reopened on SIGUSR1) instead of standard output.
        public var file: String?
        /// `--log-overflow`: what a full log does (drop records, or pause the proxy).
        public var overflow: LogOverflow = .drop
        /// `--log-buffer`: bytes of records the log holds for a slow reader before it overflows.
        public var bufferBytes = LogSink.defaultCapacity
        /// `--log-checkpoint`: seconds between the run ledger's checkpoints; 0, none.
        public var checkpointSeconds = 10

        public init() {}
    }

    /// How long each phase may take, in seconds.
    public struct Timeouts: Sendable {
        /// For a client to send a complete request head (slowloris).
        public var head = 10.0
        /// To connect to the origin.
        public var connect = 10.0
        /// A tunnel may stay silent in both directions.
        public var idle = 300.0
        /// The inspected part of a TLS handshake.
        public var handshake = 10.0

        public init() {}
    }

    /// What the watched TLS handshake of a tunnel is judged against (R14-R17).
    public struct InspectionSettings: Sendable {
        /// Whether CONNECT tunnels' TLS handshakes are inspected. Off, TLS is only recognised.
        public var enabled = true
        /// When server certificates are judged (see CertificateMode).
        public var certificateMode: CertificateMode = .before
        /// What a ClientHello naming another host than the CONNECT does.
        public var sniMismatch: SNIMismatchAction = .block
        /// Roots for certificate checks (`--trust-store` plus --ca-file); nil for the host's store only.
        public var trustStore: TrustStore?
        /// R16 (Certificate Transparency) for leaves that chain to the store; nil when off. With a log
        /// list each SCT's log and signature are verified, without one they are only counted.
        public var transparency: TransparencyCheck?
        /// `--aia-fetch`: a chain that lacks an issuer is completed from its caIssuers http:// URL.
        public var aiaFetch = true
        /// Seconds a certificate verdict is reused, and how many are kept.
        public var verdictTimeToLive = 300.0
        public var verdictCacheCapacity = 4096

        public init() {}
    }

    /// What the transparent gate does with what it cannot judge as the proxy path would.
    public struct TransparentSettings: Sendable {
        /// `--transparent-other`: a connection that is neither TLS nor HTTP/1.x.
        public var other: TransparentOtherAction = .block
        /// `--sni-check`: a server name that does not resolve to the original destination.
        public var sniCheck: SNIAddressCheck = .report

        public init() {}
    }

    /// Parent proxies between atsgate and the origins.
    public struct ParentSettings: Sendable {
        /// `--parent`: tried in order; empty: every origin is reached directly.
        public var proxies: [ParentProxy] = []
        /// `--parent-bypass`: destinations that never go through a parent.
        public var bypass: [DestinationPattern] = []
        /// Seconds a parent that failed is passed over (tried again sooner only when every parent
        /// failed).
        public var retry = 30.0

        public init() {}
    }
}
