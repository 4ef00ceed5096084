import Foundation
import Glibc
import Testing
import TestSupport

/// The key exchange of watched handshakes, end to end: post-quantum clients and servers (pyOpenSSL on
/// OpenSSL 4, which speaks X25519MLKEM768) and classical ones (curl and Python's ssl on OpenSSL 3.0)
/// through the running daemon; the records' key_exchange and pq_offered, /metrics, and the live page's
/// post-quantum share per app in a real browser.
@Suite(.serialized) struct PostQuantumDaemonTests {
    static let pki = TestPKI.shared

    /// The pyOpenSSL server with the test PKI's good leaf and its chain.
    static func pqServer(groups: String? = nil, maximumVersion: String? = nil) throws -> PostQuantumServer {
        try PostQuantumServer(certificate: pki.path("good-rsa-chain.pem"), key: pki.path("good-rsa.key"),
                              groups: groups, maximumVersion: maximumVersion)
    }

    /// Two apps, each with an empty policy (full ATS), routed by the User-Agent of the CONNECT:
    /// `PQ/1` (the pyOpenSSL client) and `Classic/1` (curl).
    static func daemon(ports: [Int], _ extra: [String] = []) throws -> (Daemon, TemporaryDirectory) {
        let directory = try TemporaryDirectory()
        let policy = try directory.write("ats.json", "{}")
        let routing = ["--policy", "com.example.pq=\(policy)", "--policy", "com.example.classic=\(policy)",
                       "--route", "agent:PQ=com.example.pq", "--route", "agent:Classic=com.example.classic"]
        let (daemon, _) = try TLSInspectionTests.daemon(port: ports[0], routing + ports.dropFirst().flatMap {
            ["--connect-port", "\($0)"]
        } + extra)
        return (daemon, directory)
    }

    static func pqClient(_ daemon: Daemon, port: Int, groups: String? = nil) throws -> PostQuantumPeer.ClientResult {
        try PostQuantumPeer.request(port: port, proxy: daemon.port, groups: groups, userAgent: "PQ/1")
    }

    static func curl(_ daemon: Daemon, port: Int, _ extra: [String] = []) throws -> AtsgateRun {
        try TLSInspectionTests.curl(daemon, "https://127.0.0.1:\(port)/", ["--proxy-header", "User-Agent: Classic/1"] + extra)
    }

    /// The record of the tunnel to `port` whose client did (or did not) offer a post-quantum group.
    static func record(_ records: [[String: Any]], port: Int, offered: Bool) throws -> [String: Any] {
        try #require(records.first { $0["port"] as? Int == port && $0["pq_offered"] as? Bool == offered },
                     "no record for port \(port), pq_offered \(offered): \(records)")
    }

    @Test func theFourClientAndServerCombinations() throws {
        let pq = try Self.pqServer()
        let classical = try TLSTestOrigin(leaf: "good-rsa", arguments: ["--min", "TLSv1_3"])
        let (daemon, _) = try Self.daemon(ports: [pq.port, classical.port], ["--admin", "127.0.0.1:0"])

        let both = try Self.pqClient(daemon, port: pq.port)
        #expect(both.group == "X25519MLKEM768" && both.status == "HTTP/1.1 200 OK", "\(both)")
        #expect(both.body == "ok from pq_peer group=X25519MLKEM768\n")
        let pqToClassical = try Self.pqClient(daemon, port: classical.port)
        #expect(pqToClassical.group == "x25519" && pqToClassical.body == "ok from tls_origin\n", "\(pqToClassical)")
        let classicalToPQ = try Self.curl(daemon, port: pq.port)
        #expect(classicalToPQ.stdout == "ok from pq_peer group=x25519\n", "\(classicalToPQ.stderr)")
        let neither = try Self.curl(daemon, port: classical.port)
        #expect(neither.stdout == "ok from tls_origin\n", "\(neither.stderr)")

        try daemon.waitForRecords(4)
        let metrics = try daemon.admin("/metrics")
        for sample in [
            #"atsgate_tls_key_exchange_total{app="com.example.pq",group="X25519MLKEM768",pq_offered="true"} 1"#,
            #"atsgate_tls_key_exchange_total{app="com.example.pq",group="x25519",pq_offered="true"} 1"#,
            #"atsgate_tls_key_exchange_total{app="com.example.classic",group="x25519",pq_offered="false"} 2"#,
        ] {
            #expect(metrics.contains(sample + "\n"), "\(sample) in \(metrics)")
        }

        let (_, records) = try daemon.stop(expected: 4)
        #expect(records.count == 4)
        for (port, offered, group, app) in [(pq.port, true, "X25519MLKEM768", "com.example.pq"),
                                            (classical.port, true, "x25519", "com.example.pq"),
                                            (pq.port, false, "x25519", "com.example.classic"),
                                            (classical.port, false, "x25519", "com.example.classic")] {
            let record = try Self.record(records, port: port, offered: offered)
            #expect(record["key_exchange"] as? String == group, "\(record)")
            #expect(record["app"] as? String == app)
            #expect(record["action"] as? String == "allow")
            #expect(record["tls_version"] as? String == "TLSv1.3")
        }
    }

    @Test func aHelloRetryRequestTowardAGroupTheClientDidNotShareAtFirst() throws {
        // The pyOpenSSL client shares only x25519 but lists the hybrid, which the pyOpenSSL server
        // prefers: it asks again. Its default client (hybrid and x25519 shares) meets a server that
        // only takes P-384: a HelloRetryRequest for secp384r1.
        let pq = try Self.pqServer()
        let p384 = try TLSTestOrigin(leaf: "good-rsa", arguments: ["--min", "TLSv1_3", "--curve", "secp384r1"])
        let (daemon, _) = try Self.daemon(ports: [pq.port, p384.port])
        let upgraded = try Self.pqClient(daemon, port: pq.port, groups: "x25519:X25519MLKEM768")
        #expect(upgraded.group == "X25519MLKEM768" && upgraded.status == "HTTP/1.1 200 OK", "\(upgraded)")
        let downgraded = try Self.pqClient(daemon, port: p384.port)
        #expect(downgraded.group == "secp384r1" && downgraded.status == "HTTP/1.1 200 OK", "\(downgraded)")
        let (_, records) = try daemon.stop(expected: 2)
        #expect(try Self.record(records, port: pq.port, offered: true)["key_exchange"] as? String == "X25519MLKEM768")
        #expect(try Self.record(records, port: p384.port, offered: true)["key_exchange"] as? String == "secp384r1")
        #expect(records.allSatisfy { $0["action"] as? String == "allow" && $0["tls_version"] as? String == "TLSv1.3" })
    }

    @Test func tls12IsClassicalAndAnRSAKeyExchangeHasNoGroup() throws {
        let pq12 = try Self.pqServer(maximumVersion: "TLSv1_2")
        let ecdhe = try TLSTestOrigin(leaf: "good-rsa", arguments: ["--max", "TLSv1_2"])
        let rsa = try TLSTestOrigin(leaf: "good-rsa", arguments: ["--max", "TLSv1_2", "--ciphers", "AES128-SHA"])
        let directory = try TemporaryDirectory()
        // RSA key exchange is allowed only without forward secrecy (R14).
        let policy = try directory.write("ats.json", #"{"NSExceptionDomains": {"127.0.0.1": {"NSExceptionRequiresForwardSecrecy": false}}}"#)
        let (daemon, _) = try TLSInspectionTests.daemon(port: pq12.port, ["--policy", policy, "--connect-port", "\(ecdhe.port)",
                                                                          "--connect-port", "\(rsa.port)"])
        #expect(try Self.pqClient(daemon, port: pq12.port).group == "x25519")
        #expect(try Self.pqClient(daemon, port: ecdhe.port).group == "x25519")
        #expect(try Self.curl(daemon, port: rsa.port).stdout == "ok from tls_origin\n")
        let (_, records) = try daemon.stop(expected: 3)
        for port in [pq12.port, ecdhe.port] {
            let record = try Self.record(records, port: port, offered: true)
            #expect(record["key_exchange"] as? String == "x25519", "the ServerKeyExchange's curve: \(record)")
            #expect(record["tls_version"] as? String == "TLSv1.2")
        }
        let noGroup = try Self.record(records, port: rsa.port, offered: false)
        #expect(noGroup["key_exchange"] is NSNull, "present and null: \(noGroup)")
        #expect(noGroup["cipher"] as? String == "TLS_RSA_WITH_AES_128_CBC_SHA")
    }

    @Test func aRecordShowsTheOfferEvenWhenTheHandshakeIsRefused() throws {
        // A TLS 1.0 server: the proxy refuses at the ServerHello (R14); the offer is on the record
        // all the same.
        let old = try TLSTestOrigin(leaf: "good-rsa", arguments: ["--max", "TLSv1", "--ciphers", "ALL:@SECLEVEL=0"])
        let (daemon, _) = try TLSInspectionTests.daemon(port: old.port)
        let curl = try TLSInspectionTests.curl(daemon, "https://127.0.0.1:\(old.port)/")
        #expect(curl.status != 0)
        let (_, records) = try daemon.stop()
        let record = try #require(records.first)
        #expect(record["reason"] as? String == "tls-version")
        #expect(record["pq_offered"] as? Bool == false)
        #expect(record.keys.contains("key_exchange"))
    }

    @Test func thePlainHTTPRecordsCarryNoKeyExchangeFields() throws {
        let origin = try Origin()
        let daemon = try Daemon(["--resolve", "legacy.example.com=127.0.0.1"])
        _ = try Subprocess.curl(["-x", daemon.proxy, "http://legacy.example.com:\(origin.httpPort)/small"])
        let (_, records) = try daemon.stop()
        let record = try #require(records.first)
        #expect(record["key_exchange"] == nil && record["pq_offered"] == nil, "\(record)")
    }

    @Test func debiansChromiumOffersTheHybridToo() throws {
        let browser = try #require(LivePageTests.chromium, "chromium is not installed (scripts/install-deps installs it)")
        let pq = try Self.pqServer()
        let (daemon, _) = try TLSInspectionTests.daemon(port: pq.port)
        // Through the proxy even to loopback (<-loopback> drops Chromium's implicit bypass); the
        // daemon, not Chromium, judges the test certificate. Background fetches are switched off (and
        // would be refused by the proxy: only the test port is allowed).
        let run = try Subprocess.run(browser, [
            "--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=\(NSTemporaryDirectory())atsgate-chromium-pq-\(getpid())",
            "--proxy-server=\(daemon.proxy)", "--proxy-bypass-list=<-loopback>", "--ignore-certificate-errors",
            "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
            "--virtual-time-budget=3000", "--dump-dom", "https://127.0.0.1:\(pq.port)/",
        ], timeout: 60)
        #expect(run.stdout.contains("ok from pq_peer group=X25519MLKEM768"), "\(run.stdout) \(run.stderr)")
        try daemon.process.wait { out, _ in out.contains("\"port\":\(pq.port),") }
        let (_, records) = try daemon.stop()
        let record = try Self.record(records, port: pq.port, offered: true)
        #expect(record["key_exchange"] as? String == "X25519MLKEM768", "\(record)")
        #expect((record["user_agent"] as? String ?? "").contains("Chrome/"))
    }

    @Test func theLivePageShowsThePostQuantumSharePerApp() throws {
        let pq = try Self.pqServer()
        let classical = try TLSTestOrigin(leaf: "good-rsa", arguments: ["--min", "TLSv1_3"])
        let (daemon, _) = try Self.daemon(ports: [pq.port, classical.port], ["--admin", "127.0.0.1:0"])
        // Before the page opens: in its snapshot. While it is open: through /events.
        _ = try Self.pqClient(daemon, port: pq.port)
        _ = try Self.curl(daemon, port: classical.port)
        try daemon.waitForRecords(2)
        let page = "http://127.0.0.1:\(try daemon.adminPort())/"
        let dom = try LivePageTests.dumpDOM(page, stream: 15) {
            sleep(2)
            _ = try Self.pqClient(daemon, port: classical.port)
            _ = try Self.pqClient(daemon, port: pq.port)
            _ = try Self.pqClient(daemon, port: pq.port)
        }
        // app, TLS handshakes, post-quantum offered, answered post-quantum, answered classically, share
        func row(_ app: String) -> [String]? {
            guard let match = dom.firstMatch(of: try! Regex(#"<tr class="pq-app" data-app="\#(app)">(.*?)</tr>"#)),
                  let cells = match.output[1].substring else { return nil }
            return cells.matches(of: /<td[^>]*>([^<]*)<\/td>/).map { String($0.output.1) }
        }
        #expect(row("com.example.pq") == ["com.example.pq", "4", "4", "3", "1", "75%"], "\(dom)")
        #expect(row("com.example.classic") == ["com.example.classic", "1", "0", "0", "0", "-"])
        _ = try daemon.stop(expected: 5)
    }
}
