import ATSPolicy
import DNS
import DecisionLog
import Inspection
import POSIX
import ProxyAccess
import ProxyAnswers
import Synchronization
import TLSClient

/// One configuration generation: what every connection accepted under it shares. A reload makes a
/// new generation; connections keep the one they were accepted under to the end, so an open tunnel
/// is never re-judged halfway.
package final class Generation: Sendable {
    let configuration: ProxyConfiguration
    let log: RecordFormatter
    let resolver: PinnedResolver
    let daemon: DaemonState
    /// Judges servers' certificates (TLSClient) against this generation's trust store.
    let judge: ServerJudge
    /// Verdicts under this generation's trust store and pins.
    let verdicts: CertificateVerdictCache
    /// Decides the device's own traffic (SystemTraffic): outside every app's ATS policy.
    let systemTraffic: DecisionEngine
    /// 1 for the configuration the daemon started with, then one more per successful reload.
    let number: Int
    /// Which app's policy each request gets.
    let router: AppRouter
    /// Checks Proxy-Authorization (--auth-file); nil when the proxy is open.
    let authenticator: ProxyAuthenticator?
    /// Checks the admin window's Authorization (--admin-auth); nil when it is open.
    let adminAuthenticator: ProxyAuthenticator?
    /// The destination ACL: [0] for requests no explicit route chose, [i + 1] for those of route i
    /// (the global rules with the route's own added).
    let destinationACLs: [DestinationACL]
    /// Which parents (if any) a request goes through.
    let parents: ParentRouting
    /// The CONNECT 200, with this generation's Proxy-Status name.
    let connectEstablished: [UInt8]
    /// The addresses of `ownAddresses`, for `isOwnListener`.
    let ownIPs: Set<IPAddress>

    init(configuration: ProxyConfiguration, daemon: DaemonState, number: Int) {
        self.configuration = configuration
        self.daemon = daemon
        self.number = number
        let apps = configuration.apps.isEmpty
            ? [AppPolicy(id: configuration.policyLabel, engine: configuration.engine, label: configuration.policyLabel)]
            : configuration.apps
        router = AppRouter(apps: apps, routes: configuration.routes, unrouted: configuration.unrouted)
        authenticator = configuration.passwords.map(ProxyAuthenticator.init(file:))
        adminAuthenticator = configuration.adminPasswords.map(ProxyAuthenticator.init(file:))
        let own = Generation.ownAddresses(configuration)
        ownIPs = Set(own.map(\.address))
        destinationACLs = [DestinationACL(rules: configuration.destinations, ownAddresses: own)]
            + configuration.routes.map { route in
                DestinationACL(rules: configuration.destinations, route: (route.destinations, route.name), ownAddresses: own)
            }
        log = RecordFormatter(format: configuration.log.format, policy: configuration.policyLabel, sink: daemon.sink)
        resolver = PinnedResolver(pinned: configuration.resolve, dnsResolver: daemon.dns)
        daemon.dns.configure(configuration.dns)
        daemon.parentHealth.setRetry(seconds: configuration.parents.retry)
        parents = ParentRouting(parents: configuration.parents.proxies, bypass: configuration.parents.bypass,
                                health: daemon.parentHealth)
        connectEstablished = ProxyResponse.connectEstablished(
            proxyStatus: ProxyStatus.bare.value(name: configuration.proxyName))
        judge = ServerJudge(store: configuration.inspection.trustStore, transparency: configuration.inspection.transparency,
                            aia: configuration.inspection.aiaFetch ? AIAFetcher(cache: daemon.issuers) : nil)
        systemTraffic = SystemTraffic.engine(options: configuration.engine.options)
        verdicts = CertificateVerdictCache(capacity: configuration.inspection.verdictCacheCapacity,
                                           timeToLive: configuration.inspection.verdictTimeToLive, counters: daemon.verdicts)
    }

    /// The proxy's own addresses, which clients off the host may not reach: each listener's (proxy,
    /// TLS and admin), and for a listener on 0.0.0.0 or :: every address of the host's interfaces.
    static func ownAddresses(_ configuration: ProxyConfiguration) -> [(address: IPAddress, listener: String)] {
        let listeners = configuration.listeners.proxy.map { ($0, "the proxy listens on \($0)") }
            + configuration.listeners.tls.map { ($0, "the proxy's TLS listener is on \($0)") }
            + (configuration.listeners.transparent + configuration.listeners.tproxy).map { ($0, "the transparent listener is on \($0)") }
            + (configuration.listeners.admin.map { [($0, "the admin listener is on \($0)")] } ?? [])
        var own: [(address: IPAddress, listener: String)] = []
        var interfaces: [IPAddress]?
        for (address, listener) in listeners {
            switch address.ip {
            case .v4(0), .v6(0):
                interfaces = interfaces ?? InterfaceAddresses.all()
                // A :: listener takes IPv4 too (dual stack); 0.0.0.0 only IPv4.
                let families = interfaces!.filter { !address.ip.isIPv4 || $0.isIPv4 }
                own += families.map { ($0, listener) }
            default:
                own.append((address.ip, listener))
            }
        }
        return own
    }

    /// Whether `address` is one of the proxy's own listeners: where a transparent connection must never go.
    func isOwnListener(_ address: SocketAddress) -> Bool {
        let own = configuration.listeners
        return TransparentArrival.isListener(address, among: own.proxy + own.tls + own.transparent + own.tproxy
                                                 + (own.admin.map { [$0] } ?? []), ownAddresses: ownIPs)
    }

    func connectionClosed() {
        daemon.open.subtract(1, ordering: .relaxed)
        daemon.onConnectionClosed()
    }
}

/// What outlives reloads: the connection count, the log's output, and the server's callback.
package final class DaemonState: Sendable {
    /// Connections open now (for --max-connections and draining).
    let open = Atomic<Int>(0)
    /// Decision records written since the start (for the service status line).
    let decisions = Atomic<Int>(0)
    /// Certificate verdict lookups answered from the cache, and those that had to be computed.
    let verdicts = VerdictCounters()
    /// caIssuers answers by URL: kept across reloads, as they do not depend on the trust store.
    let issuers = AIACache()
    /// Failed logins per client address (proxy and admin): kept across reloads, or a reload would
    /// hand a guesser a fresh allowance.
    let loginThrottle = LoginThrottle()
    /// The resolver: its cache outlives reloads, each generation configures it.
    let dns = CachingResolver()
    /// Parents that failed lately, passed over for a while.
    let parentHealth = ParentHealth()
    let sink: LogSink
    /// Hears of every record as it is logged (the live page's feed).
    let observer: DecisionObserver?
    let onConnectionClosed: @Sendable () -> Void

    init(sink: LogSink, observer: DecisionObserver?, onConnectionClosed: @escaping @Sendable () -> Void) {
        self.sink = sink
        self.observer = observer
        self.onConnectionClosed = onConnectionClosed
    }
}
