import Foundation
import Glibc
import Testing
import TestSupport

/// The daemon's resolver end to end: `--dns-server` points it at the tests' own DNS server on a
/// loopback port (the system's resolver untouched); each test asserts the answers on the wire, the
/// reasons and the records' `dns_ms` / `dns_cached` / `dns_stale`.
@Suite(.serialized) struct ResolverDaemonTests {
    static let openPolicy = #"{"NSAllowsArbitraryLoads": true}"#

    /// The daemon with the open policy, the DNS server and the origin's port allowed for CONNECT.
    func daemon(_ dns: DNSTestServer, _ origin: Origin, _ extra: [String] = []) throws -> (Daemon, TemporaryDirectory) {
        let directory = try TemporaryDirectory()
        let policy = try directory.write("open.json", Self.openPolicy)
        let daemon = try Daemon(["--policy", policy, "--dns-server", dns.address, "--connect-port", "\(origin.httpPort)"]
                                + extra)
        return (daemon, directory)
    }

    func records(_ daemon: Daemon, expected: Int) throws -> [[String: Any]] {
        try daemon.stopInTimeOrder(expected: expected)
    }

    @Test func namesComeFromTheConfiguredServerAndThenFromTheCache() throws {
        let origin = try Origin()
        let dns = try DNSTestServer(zone: ["app.test": ["A": ["127.0.0.1"], "AAAA": [], "ttl": 300]])
        let (daemon, _) = try daemon(dns, origin)
        for _ in 0..<2 {
            let run = try Subprocess.curl(["-p", "-x", daemon.proxy, "http://app.test:\(origin.httpPort)/small"])
            #expect(run.stdout == String(repeating: "a", count: 100), "\(run.stderr)")
        }
        let plain = try Subprocess.curl(["-x", daemon.proxy, "http://app.test:\(origin.httpPort)/small"])
        #expect(plain.stdout == String(repeating: "a", count: 100), "\(plain.stderr)")
        let records = try records(daemon, expected: 3)
        let first = try #require(records.first)
        #expect(first["dns_cached"] as? Bool == false)
        #expect((first["dns_ms"] as? Double).map { $0 >= 0 } == true, "a lookup was made: \(first)")
        #expect(first["upstream_ip"] as? String == "127.0.0.1")
        for later in records.dropFirst() {
            #expect(later["dns_cached"] as? Bool == true, "\(later)")
            #expect(later["dns_ms"] is NSNull)
        }
        #expect(dns.queries("app.test", type: "A") == 1, "asked once, then answered from the cache")
        #expect(dns.queries("app.test", type: "AAAA") == 1)
    }

    @Test func literalsAndPinnedNamesNeedNoLookup() throws {
        let origin = try Origin()
        let dns = try DNSTestServer(zone: [:])
        let (daemon, _) = try daemon(dns, origin, ["--resolve", "pinned.test=127.0.0.1"])
        for host in ["127.0.0.1", "pinned.test"] {
            let run = try Subprocess.curl(["-p", "-x", daemon.proxy, "http://\(host):\(origin.httpPort)/small"])
            #expect(run.status == 0, "\(run.stderr)")
        }
        let records = try records(daemon, expected: 2)
        for record in records {
            #expect(record["dns_cached"] as? Bool == true)
            #expect(record["dns_ms"] is NSNull)
        }
        #expect(dns.queries("pinned.test") == 0)
    }

    /// Every failure of the resolver has its reason and status, is logged, and the daemon goes on.
    /// (The zone entry of each mode is dns_server.py's; "nodata" has neither A nor AAAA records.)
    @Test(arguments: [
        ("nx.test", "nxdomain", 502, "dns-nxdomain", "NXDOMAIN"),
        ("nodata.test", "nodata", 502, "dns-nxdomain", "NODATA"),
        ("never.test", "never", 504, "dns-timeout", "--dns-timeout"),
        ("garbage.test", "garbage", 502, "dns-failure", "malformed"),
        ("tcgarbage.test", "truncate-garbage", 502, "dns-failure", "no DNS server"),
        ("servfail.test", "servfail", 502, "dns-failure", "SERVFAIL"),
    ])
    func resolverFailuresHaveTheirOwnReasons(name: String, mode: String, status: Int, reason: String,
                                             words: String) throws {
        let entry: [String: Any] = mode == "nodata" ? ["A": [String](), "AAAA": [String]()]
                                                    : ["mode": mode, "A": ["127.0.0.1"]]
        let origin = try Origin()
        let dns = try DNSTestServer(zone: [name: entry, "fine.test": ["A": ["127.0.0.1"]]])
        let (daemon, _) = try daemon(dns, origin, ["--dns-timeout", "2"])
        let run = try Subprocess.curl(["-x", daemon.proxy, "-D", "-", "-o", "/dev/null", "http://\(name):\(origin.httpPort)/small"])
        #expect(run.stdout.hasPrefix("HTTP/1.1 \(status) "), "\(run.stdout)")
        #expect(run.stdout.contains("X-ATS-Reason: \(reason)\r\n"))
        let tunnel = try Subprocess.curl(["-p", "-x", daemon.proxy, "-o", "/dev/null", "-w", "%{http_connect}",
                                          "http://\(name):\(origin.httpPort)/small"])
        #expect(tunnel.stdout == "\(status)", "CONNECT answered \(tunnel.stdout)")
        let after = try Subprocess.curl(["-x", daemon.proxy, "http://fine.test:\(origin.httpPort)/small"])
        #expect(after.stdout == String(repeating: "a", count: 100), "the daemon goes on serving")
        let records = try records(daemon, expected: 3)
        for record in records.prefix(2) {
            #expect(record["action"] as? String == "error")
            #expect(record["reason"] as? String == reason)
            #expect((record["message"] as? String ?? "").contains(words), "\(record["message"] ?? "")")
            #expect(record["upstream_ip"] is NSNull)
        }
    }

    @Test func aTruncatedAnswerIsAskedAgainOverTCP() throws {
        let origin = try Origin()
        let dns = try DNSTestServer(zone: ["big.test": ["mode": "truncate", "A": ["127.0.0.1"], "AAAA": []]])
        let (daemon, _) = try daemon(dns, origin)
        let run = try Subprocess.curl(["-x", daemon.proxy, "http://big.test:\(origin.httpPort)/small"])
        #expect(run.stdout == String(repeating: "a", count: 100), "\(run.stderr)")
        #expect(dns.queries("big.test", type: "A", transport: "udp") >= 1)
        #expect(dns.queries("big.test", type: "A", transport: "tcp") >= 1)
        _ = try records(daemon, expected: 1)
    }

    /// One zone answering slowly delays only the connections waiting for it: the others (cached,
    /// pinned, literal, and names answered at once) are served meanwhile, every slow name is answered
    /// when its answer comes, and each slow name is one lookup whatever its waiters (/metrics counts
    /// lookups; the server may see c-ares' retransmissions too).
    @Test func aSlowZoneDelaysNobodyElse() throws {
        let origin = try Origin()
        let dns = try DNSTestServer(zone: ["*.slow.test": ["A": ["127.0.0.1"], "AAAA": [], "delay": 3],
                                           "fast.test": ["A": ["127.0.0.1"], "AAAA": []]])
        let adminPort = try freePort()
        let (daemon, _) = try daemon(dns, origin, ["--resolve", "pinned.test=127.0.0.1", "--admin", "127.0.0.1:\(adminPort)"])
        let slow = try (0..<30).map { index in
            let client = try RawClient(port: daemon.port, timeout: 20)
            client.send("CONNECT s\(index % 10).slow.test:\(origin.httpPort) HTTP/1.1\r\n\r\n")
            return client
        }
        let deadline = Date().addingTimeInterval(10)
        while (0..<10).contains(where: { dns.queries("s\($0).slow.test", type: "A") == 0 }), Date() < deadline {
            usleep(20_000)
        }
        for host in ["fast.test", "pinned.test", "127.0.0.1"] {
            let run = try Subprocess.curl(["-p", "-x", daemon.proxy, "http://\(host):\(origin.httpPort)/small"])
            #expect(run.stdout == String(repeating: "a", count: 100), "\(host): \(run.stderr)")
        }
        let waiting = slow.filter { client in
            var entry = pollfd(fd: client.fd, events: Int16(POLLIN), revents: 0)
            return poll(&entry, 1, 0) == 0
        }
        #expect(waiting.count == 30, "the slow names were still waiting for their answer")
        for client in slow {
            let answer = client.read(until: "\r\n\r\n")
            #expect(answer.hasPrefix("HTTP/1.1 200 "), "a slow name was answered: \(answer)")
            client.send("GET /small HTTP/1.1\r\nHost: slow.test\r\nConnection: close\r\n\r\n")
            #expect(client.readAll().hasSuffix(String(repeating: "a", count: 100)))
            client.close()
        }
        let metrics = try Subprocess.curl(["http://127.0.0.1:\(adminPort)/metrics"]).stdout
        // 10 slow names and fast.test: one A lookup (success) and one AAAA lookup (NODATA) each.
        #expect(metrics.contains("atsgate_dns_lookups_total{result=\"success\"} 11\n"), "\(metrics)")
        #expect(metrics.contains("atsgate_dns_lookups_total{result=\"nodata\"} 11\n"))
        let records = try records(daemon, expected: 33)
        #expect(records.filter { $0["action"] as? String == "allow" }.count == 33)
        #expect(records.filter { ($0["host"] as? String ?? "").hasSuffix(".slow.test") }.count == 30)
    }

    @Test func anExpiredAnswerIsServedStaleWhenTheResolverFails() throws {
        let origin = try Origin()
        let dns = try DNSTestServer(zone: ["flaky.test": ["A": ["127.0.0.1"], "AAAA": [], "ttl": 1]])
        let (daemon, _) = try daemon(dns, origin, ["--dns-min-ttl", "0"])
        let first = try Subprocess.curl(["-x", daemon.proxy, "http://flaky.test:\(origin.httpPort)/small"])
        #expect(first.status == 0)
        try dns.setZone(["flaky.test": ["mode": "servfail"]])
        usleep(1_300_000)
        let second = try Subprocess.curl(["-x", daemon.proxy, "-D", "-", "http://flaky.test:\(origin.httpPort)/small"])
        #expect(second.stdout.hasPrefix("HTTP/1.1 200 "), "\(second.stdout)")
        let records = try records(daemon, expected: 2)
        #expect(records[0]["dns_stale"] == nil)
        #expect(records[1]["dns_stale"] as? Bool == true, "logged as stale: \(records[1])")
        #expect(records[1]["dns_cached"] as? Bool == true)
    }

    @Test func metricsCountLookupsCacheAnswersAndTheQueues() throws {
        let origin = try Origin()
        let dns = try DNSTestServer(zone: ["m.test": ["A": ["127.0.0.1"], "AAAA": []]])
        let adminPort = try freePort()
        let (daemon, _) = try daemon(dns, origin, ["--admin", "127.0.0.1:\(adminPort)"])
        for _ in 0..<3 { _ = try Subprocess.curl(["-x", daemon.proxy, "http://m.test:\(origin.httpPort)/small"]) }
        _ = try Subprocess.curl(["-x", daemon.proxy, "http://gone.test:\(origin.httpPort)/small"])
        let metrics = try Subprocess.curl(["http://127.0.0.1:\(adminPort)/metrics"]).stdout
        #expect(metrics.contains("atsgate_dns_lookups_total{result=\"success\"} 1\n"), "\(metrics)")
        #expect(metrics.contains("atsgate_dns_lookups_total{result=\"nodata\"} 1\n"))
        #expect(metrics.contains("atsgate_dns_lookups_total{result=\"nxdomain\"} 2\n"))
        #expect(metrics.contains("atsgate_dns_cache_total{result=\"hit\"} 2\n"), "A from the cache twice")
        #expect(metrics.contains("atsgate_dns_cache_total{result=\"negative\"} 2\n"), "and the remembered NODATA")
        #expect(metrics.contains("atsgate_dns_lookup_duration_seconds_count 4\n"))
        #expect(metrics.contains("atsgate_dns_lookup_duration_seconds_bucket{le=\"+Inf\"} 4\n"))
        #expect(metrics.contains("atsgate_upstream_connections_total{parent=\"\",result=\"connected\"} 3\n"))
        #expect(metrics.contains("atsgate_upstream_connections_total{parent=\"\",result=\"dns-nxdomain\"} 1\n"))
        for pool in ["certificates", "probes", "passwords"] {
            #expect(metrics.contains("atsgate_blocking_queue_length{pool=\"\(pool)\"} 0\n"))
        }
        _ = try records(daemon, expected: 4)
    }

    @Test func dnsFlagsThatMakeNoSenseExitTwoNamingTheFlag() throws {
        for (arguments, words) in [(["--dns-server", "resolver.example:53"], "--dns-server"),
                                   (["--dns-timeout", "0"], "timeouts must be positive"),
                                   (["--dns-min-ttl", "60", "--dns-max-ttl", "10"], "--dns-min-ttl")] {
            let run = try Atsgate.run(["run", "--listen", "127.0.0.1:0"] + arguments, timeout: 20)
            #expect(run.status == 2, "\(arguments): \(run.stderr)")
            #expect(run.stderr.contains(words), "\(run.stderr)")
        }
    }
}
