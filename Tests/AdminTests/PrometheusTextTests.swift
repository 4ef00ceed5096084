import Testing
@testable import Admin
@testable import DecisionLog
@testable import ProxyCore
import TLSWire

@Suite struct PrometheusTextTests {
    static let gauges = ServerGauges(connectionsOpen: 3, generation: 2, reloadsSucceeded: 1, reloadsFailed: 0,
                                     lastReloadTime: 1_700_000_000, draining: false,
                                     probeCache: ["hit": 5, "miss": 1], version: "1.2.3")

    /// A refused handshake is one sample labelled with its reason and the rule that decided, as
    /// alert rules and dashboards select it.
    @Test func handshakeFailuresCarryTheirReasonAndRule() {
        var metrics = LoopMetrics()
        metrics.handshakeFailures[LoopMetrics.HandshakeKey(reason: "tls-version", rule: "R14")] = 1
        metrics.handshakeFailures[LoopMetrics.HandshakeKey(reason: "server-alert", rule: "")] = 2
        let text = PrometheusText.render(metrics, Self.gauges)
        #expect(text.contains("atsgate_tls_handshake_failures_total{reason=\"tls-version\",rule=\"R14\"} 1\n"), "\(text)")
        #expect(text.contains("atsgate_tls_handshake_failures_total{reason=\"server-alert\",rule=\"\"} 2\n"), "\(text)")
    }

    /// Inspected handshakes by app, chosen group (empty without one) and post-quantum offer; the live
    /// page's snapshot carries the same counts and the names it needs to tell a post-quantum group.
    @Test func keyExchangesByAppGroupAndOffer() throws {
        var metrics = LoopMetrics()
        metrics.keyExchanges[LoopMetrics.KeyExchangeKey(app: "lab", group: .x25519MLKEM768, postQuantumOffered: true)] = 3
        metrics.keyExchanges[LoopMetrics.KeyExchangeKey(app: "lab", group: .x25519, postQuantumOffered: true)] = 2
        metrics.keyExchanges[LoopMetrics.KeyExchangeKey(app: "", group: nil, postQuantumOffered: false)] = 1
        let text = PrometheusText.render(metrics, Self.gauges)
        #expect(text.contains("# TYPE atsgate_tls_key_exchange_total counter\n"))
        #expect(text.contains("atsgate_tls_key_exchange_total{app=\"lab\",group=\"X25519MLKEM768\",pq_offered=\"true\"} 3\n"), "\(text)")
        #expect(text.contains("atsgate_tls_key_exchange_total{app=\"lab\",group=\"x25519\",pq_offered=\"true\"} 2\n"))
        #expect(text.contains("atsgate_tls_key_exchange_total{app=\"\",group=\"\",pq_offered=\"false\"} 1\n"))

        let snapshot = LivePage.snapshot(LiveFeed.Snapshot(totals: metrics, through: 0, entries: []), mode: .enforce)
        #expect(snapshot.contains(#"{"app":"lab","group":"X25519MLKEM768","pq_offered":true,"count":3}"#), "\(snapshot)")
        #expect(snapshot.contains(#""pq_groups":["MLKEM1024","MLKEM512","MLKEM768","SecP256r1Kyber768Draft00","#))
        #expect(snapshot.contains(#""X25519MLKEM768""#) && !snapshot.contains(#""pq_groups":["x25519""#))
    }

    /// Label values are escaped as the exposition format requires: an app ID with a quote, a
    /// backslash or a newline cannot break the line.
    @Test func labelValuesAreEscaped() {
        var metrics = LoopMetrics()
        metrics.decisions[LoopMetrics.DecisionKey(app: "a\"b\\c\nd", action: "block", reason: "cleartext-http", enforced: true)] = 4
        let text = PrometheusText.render(metrics, Self.gauges)
        #expect(text.contains(#"atsgate_decisions_total{app="a\"b\\c\nd",action="block",reason="cleartext-http",enforced="true"} 4"#), "\(text)")
        #expect(text.contains("atsgate_build_info{version=\"1.2.3\"} 1\n"))
        #expect(text.contains("atsgate_connections_open 3\n"))
    }

    @Test func theTrustStoreInForceIsOneInfoSample() {
        var gauges = Self.gauges
        #expect(PrometheusText.render(LoopMetrics(), gauges).contains("atsgate_trust_store_info{name=\"system\",version=\"host\"} 1\n"))
        gauges.trustStore = ("apple", "security_certificates-55349.0.11")
        let text = PrometheusText.render(LoopMetrics(), gauges)
        #expect(text.contains("# TYPE atsgate_trust_store_info gauge\n"))
        #expect(text.contains("atsgate_trust_store_info{name=\"apple\",version=\"security_certificates-55349.0.11\"} 1\n"))
    }

    /// The resolver's histogram is cumulative and ends with +Inf, _sum and _count; parents and the
    /// blocking pools are one sample each.
    @Test func resolverParentsAndBlockingQueues() {
        var gauges = Self.gauges
        gauges.resolver.latency = [(0.001, 2), (0.01, 5), (10, 6)]
        gauges.resolver.latencySum = 12.5
        gauges.resolver.latencyCount = 7
        gauges.resolver.lookups = [("success", 6), ("timeout", 1)]
        gauges.parents = [(parent: "[fd00::3]:3128", up: false)]
        gauges.blockingQueues = [(pool: "passwords", waiting: 4)]
        var metrics = LoopMetrics()
        metrics.upstream[LoopMetrics.UpstreamKey(parent: "[fd00::3]:3128", result: "parent-timeout")] = 1
        let text = PrometheusText.render(metrics, gauges)
        #expect(text.contains("# TYPE atsgate_dns_lookup_duration_seconds histogram\n"))
        #expect(text.contains("atsgate_dns_lookup_duration_seconds_bucket{le=\"0.01\"} 5\n"), "\(text)")
        #expect(text.contains("atsgate_dns_lookup_duration_seconds_bucket{le=\"+Inf\"} 7\n"))
        #expect(text.contains("atsgate_dns_lookup_duration_seconds_sum 12.5\n"))
        #expect(text.contains("atsgate_dns_lookups_total{result=\"timeout\"} 1\n"))
        #expect(text.contains("atsgate_parent_up{parent=\"[fd00::3]:3128\"} 0\n"))
        #expect(text.contains("atsgate_upstream_connections_total{parent=\"[fd00::3]:3128\",result=\"parent-timeout\"} 1\n"))
        #expect(text.contains("atsgate_blocking_queue_length{pool=\"passwords\"} 4\n"))
    }

    /// Request durations are a histogram per kind and action, counted from the records as the loops
    /// count them: a tunnel by the time its origin took to connect, however long it then lived; a
    /// forwarded request to the end of its response; the proxy's own answers to the answer. Two
    /// loops' histograms add up bucket by bucket.
    @Test func requestDurationsByKindAndAction() {
        let client = SocketAddress(ip: .v4(0x7F00_0001), port: 40_000)
        var tunnel = DecisionRecord(time: 0, client: client, method: "CONNECT")
        tunnel.connectedAfter = 0.00390625
        tunnel.durationMilliseconds = 600_000 // ten minutes open
        var forward = DecisionRecord(time: 0, client: client, method: "GET")
        forward.connectedAfter = 0.0078125
        forward.durationMilliseconds = 125
        var block = DecisionRecord(time: 0, client: client, method: "GET", action: .block)
        block.durationMilliseconds = 0.5
        var timeout = DecisionRecord(time: 0, client: client, method: "CONNECT", action: .error)
        timeout.durationMilliseconds = 90_000 // over the last bound: +Inf only

        var first = LoopMetrics()
        for record in [tunnel, forward, block, timeout] { first.count(record) }
        var second = LoopMetrics()
        second.count(tunnel)
        first.add(second)

        let text = PrometheusText.render(first, Self.gauges)
        let name = "atsgate_request_duration_seconds"
        #expect(text.contains("# TYPE \(name) histogram\n"))
        #expect(text.contains("\(name)_bucket{kind=\"tunnel\",action=\"allow\",le=\"0.0025\"} 0\n"), "\(text)")
        #expect(text.contains("\(name)_bucket{kind=\"tunnel\",action=\"allow\",le=\"0.005\"} 2\n"))
        #expect(text.contains("\(name)_bucket{kind=\"tunnel\",action=\"allow\",le=\"+Inf\"} 2\n"))
        #expect(text.contains("\(name)_sum{kind=\"tunnel\",action=\"allow\"} 0.0078125\n"))
        #expect(text.contains("\(name)_count{kind=\"tunnel\",action=\"allow\"} 2\n"))
        #expect(text.contains("\(name)_bucket{kind=\"forward\",action=\"allow\",le=\"0.1\"} 0\n"))
        #expect(text.contains("\(name)_bucket{kind=\"forward\",action=\"allow\",le=\"0.25\"} 1\n"))
        #expect(text.contains("\(name)_sum{kind=\"forward\",action=\"allow\"} 0.125\n"))
        #expect(text.contains("\(name)_bucket{kind=\"answer\",action=\"block\",le=\"0.001\"} 1\n"))
        #expect(text.contains("\(name)_bucket{kind=\"answer\",action=\"error\",le=\"60.0\"} 0\n"))
        #expect(text.contains("\(name)_bucket{kind=\"answer\",action=\"error\",le=\"+Inf\"} 1\n"))
        #expect(text.contains("\(name)_sum{kind=\"answer\",action=\"error\"} 90.0\n"))
        // Only what was counted: no empty series for the other kinds and actions.
        #expect(!text.contains("kind=\"forward\",action=\"block\""))
        #expect(text.components(separatedBy: "\(name)_count{").count - 1 == 4)
    }
}
