import Foundation
import Glibc
import Testing
import TestSupport

/// Behind a corporate proxy: a real Squid as the parent (`--parent`), with Basic credentials checked by
/// `basic_ncsa_auth`, a stopped one for failover, and hostile parents of the tests' own (RawOrigin) for
/// what is sent upstream and for garbage. Every answer on the wire and every record is asserted.
@Suite(.serialized) struct ParentProxyTests {
    static let pki = TestPKI.shared
    static let user = (name: "lab", password: "s3cret:with@signs")
    /// `lab:s3cret:with@signs` percent-encoded for a URL.
    static let credentials = "lab:s3cret%3Awith%40signs"

    /// A daemon under full ATS for 127.0.0.1, trusting the test CA (as TLSInspectionTests), with `extra`.
    static func daemon(_ extra: [String], policy: String? = nil) throws -> (Daemon, TemporaryDirectory) {
        let directory = try TemporaryDirectory()
        var arguments = ["--local-network", "192.0.2.0/24", "--ca-file", try pki.path("ca.pem")] + extra
        if let policy { arguments += ["--policy", try directory.write("policy.json", policy)] }
        return (try Daemon(arguments), directory)
    }

    static func curl(_ daemon: Daemon, _ url: String, _ extra: [String] = []) throws -> AtsgateRun {
        try Subprocess.curl(["-k", "-p", "-x", daemon.proxy, "--tlsv1.0", "--ciphers", "DEFAULT:@SECLEVEL=0"] + extra + [url])
    }

    // MARK: tunnels through the parent

    /// TLS 1.2 (the chain judged on the wire) and TLS 1.3 (judged by a probe of our own, which must go
    /// through the parent too): allowed, with the parent's credentials, and the record names the parent.
    @Test(arguments: ["TLSv1_2", "TLSv1_3"])
    func tunnelsGoThroughTheParentAndTheirHandshakeIsJudgedAsDirectly(version: String) throws {
        let origin = try TLSTestOrigin(leaf: "good-rsa", arguments: ["--min", version, "--max", version])
        let squid = try SquidParent(connectPorts: [origin.port], user: Self.user)
        let (daemon, _) = try Self.daemon(["--connect-port", "\(origin.port)",
                                           "--parent", "http://\(Self.credentials)@\(squid.address)"])
        let run = try Self.curl(daemon, "https://127.0.0.1:\(origin.port)/")
        #expect(run.stdout == "ok from tls_origin\n", "\(run.stderr)")
        let (_, records) = try daemon.stop()
        let record = try #require(records.first)
        #expect(record["action"] as? String == "allow")
        #expect(record["parent"] as? String == squid.address)
        #expect(record["tls_version"] as? String == version.replacingOccurrences(of: "_", with: "."))
        #expect((record["cert_issuer"] as? String ?? "").contains("atsgate Test Intermediate CA"), "judged: \(record)")
        #expect(record["dns_cached"] is NSNull, "the parent resolves, not the proxy")
        let line = try #require(squid.waitForAccess("CONNECT 127.0.0.1:\(origin.port)"))
        #expect(line.contains(" lab "), "the parent saw its own user: \(line)")
        if version == "TLSv1_3" {
            // The certificate travels encrypted: the proxy's own probe handshake went through the parent too.
            let deadline = Date().addingTimeInterval(10)
            while squid.accessLog.filter({ $0.contains("CONNECT 127.0.0.1:\(origin.port)") }).count < 2, Date() < deadline {
                usleep(50_000)
            }
            #expect(squid.accessLog.filter { $0.contains("CONNECT 127.0.0.1:\(origin.port)") && $0.contains(" lab ") }.count == 2)
        }
    }

    @Test func aWeakServerIsRefusedThroughTheParentExactlyAsDirectly() throws {
        let origin = try TLSTestOrigin(leaf: "good-rsa", arguments: ["--max", "TLSv1"])
        let squid = try SquidParent(connectPorts: [origin.port])
        let (daemon, _) = try Self.daemon(["--connect-port", "\(origin.port)", "--parent", "http://\(squid.address)"])
        let run = try Self.curl(daemon, "https://127.0.0.1:\(origin.port)/")
        #expect(run.status != 0)
        #expect(run.stderr.contains("alert protocol version"), "the client hears why: \(run.stderr)")
        let (_, records) = try daemon.stop()
        let record = try #require(records.first)
        #expect(record["action"] as? String == "block")
        #expect(record["reason"] as? String == "tls-version")
        #expect(record["parent"] as? String == squid.address)
    }

    @Test func anUpgradedRequestGetsItsTLSThroughTheParent() throws {
        let origin = try TLSTestOrigin(leaf: "good-rsa", arguments: [])
        let squid = try SquidParent(connectPorts: [origin.port])
        let (daemon, _) = try Self.daemon(["--cleartext", "upgrade", "--upgrade-port", "8080=\(origin.port)",
                                           "--parent", "http://\(squid.address)"])
        let run = try Subprocess.curl(["-x", daemon.proxy, "http://127.0.0.1:8080/"])
        #expect(run.stdout == "ok from tls_origin\n", "\(run.stderr)")
        let (_, records) = try daemon.stop()
        let record = try #require(records.first)
        #expect(record["action"] as? String == "upgrade")
        #expect(record["parent"] as? String == squid.address)
        #expect(squid.waitForAccess("CONNECT 127.0.0.1:\(origin.port)") != nil)
    }

    // MARK: what goes upstream

    /// Allowed cleartext goes to the parent in absolute form with the parent's credentials; the
    /// client's own Proxy-Authorization (for this proxy's --auth-file) goes nowhere. A CONNECT carries
    /// the parent's credentials and nothing of the client's either.
    @Test func theParentGetsItsOwnCredentialsAndNeverTheClients() throws {
        let parent = try RawOrigin(reply: { index in
            index == 0 ? "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n" : "HTTP/1.1 200 Connection established\r\n\r\n"
        })
        let directory = try TemporaryDirectory()
        let hash = try Subprocess.run("/usr/bin/openssl", ["passwd", "-6", "-salt", "abcdefgh", "client-pass"])
        let users = try directory.write("users", "alice:\(hash.stdout.trimmingCharacters(in: .whitespacesAndNewlines))\n")
        let policy = #"{"NSExceptionDomains": {"legacy.example.com": {"NSExceptionAllowsInsecureHTTPLoads": true}}}"#
        let (daemon, _) = try Self.daemon(["--auth-file", users, "--connect-port", "443",
                                           "--parent", "http://pu:pp@127.0.0.1:\(parent.port)"], policy: policy)
        let plain = try Subprocess.curl(["-x", daemon.proxy, "--proxy-user", "alice:client-pass",
                                         "http://legacy.example.com:8081/v1?q=1"])
        #expect(plain.stdout == "ok\n", "\(plain.stderr)")
        let tunnel = try RawClient(port: daemon.port)
        tunnel.send("CONNECT legacy.example.com:443 HTTP/1.1\r\nProxy-Authorization: Basic "
                    + Data("alice:client-pass".utf8).base64EncodedString() + "\r\n\r\n")
        #expect(tunnel.read(until: "\r\n\r\n").hasPrefix("HTTP/1.1 200 "))
        tunnel.close()
        let parentCredentials = "Proxy-Authorization: Basic " + Data("pu:pp".utf8).base64EncodedString() + "\r\n"
        let alice = Data("alice:client-pass".utf8).base64EncodedString()
        let received = parent.received.joined(separator: "\n----\n")
        #expect(received.contains("GET http://legacy.example.com:8081/v1?q=1 HTTP/1.1\r\nHost: legacy.example.com:8081\r\n"),
                "\(received)")
        #expect(received.contains("CONNECT legacy.example.com:443 HTTP/1.1\r\nHost: legacy.example.com:443\r\n"))
        #expect(received.components(separatedBy: parentCredentials).count == 3, "the parent's credentials, twice")
        #expect(!received.contains(alice), "the client's credentials went upstream: \(received)")
        #expect(received.contains("Via: 1.1 atsgate"))
        let (_, records) = try daemon.stop(expected: 1)
        #expect(records.first?["parent"] as? String == "127.0.0.1:\(parent.port)")
        #expect(records.first?["proxy_user"] as? String == "alice")
    }

    // MARK: the parent's failures

    @Test func aParentThatWantsOtherCredentialsIsParentAuth() throws {
        let squid = try SquidParent(connectPorts: [443], user: Self.user, hosts: ["legacy.example.com"])
        let policy = #"{"NSExceptionDomains": {"legacy.example.com": {"NSExceptionAllowsInsecureHTTPLoads": true}}}"#
        for parent in ["http://lab:wrong@\(squid.address)", "http://\(squid.address)"] {
            let (daemon, _) = try Self.daemon(["--parent", parent], policy: policy)
            let tunnel = try Subprocess.curl(["-p", "-x", daemon.proxy, "-o", "/dev/null", "-w", "%{http_connect}",
                                              "http://legacy.example.com:443/"])
            #expect(tunnel.stdout == "502", "\(tunnel.stdout)")
            let plain = try Subprocess.curl(["-x", daemon.proxy, "-D", "-", "-o", "/dev/null", "http://legacy.example.com:8081/"])
            #expect(plain.stdout.hasPrefix("HTTP/1.1 502 "), "\(plain.stdout)")
            #expect(plain.stdout.contains("X-ATS-Reason: parent-auth\r\n"))
            let (_, records) = try daemon.stop(expected: 2)
            for record in records {
                #expect(record["reason"] as? String == "parent-auth", "\(record)")
                #expect((record["message"] as? String ?? "").contains("407"), "the parent's status: \(record)")
                #expect(record["parent"] as? String == squid.address)
            }
        }
    }

    @Test func aParentThatRefusesIsParentRefusedWithItsStatus() throws {
        let squid = try SquidParent(connectPorts: [443])
        let (daemon, _) = try Self.daemon(["--connect-port", "8443", "--parent", "http://\(squid.address)"])
        let run = try Subprocess.curl(["-p", "-x", daemon.proxy, "-o", "/dev/null", "-w", "%{http_connect}",
                                       "https://127.0.0.1:8443/"])
        #expect(run.stdout == "502")
        let (_, records) = try daemon.stop()
        let record = try #require(records.first)
        #expect(record["reason"] as? String == "parent-refused")
        #expect((record["message"] as? String ?? "").contains("403"), "\(record)")
        #expect(record["status"] as? Int == 502)
    }

    @Test func noReachableParentIsParentUnreachableAndASilentOneIsParentTimeout() throws {
        let stopped = try freePort()
        let (unreachable, _) = try Self.daemon(["--parent", "http://127.0.0.1:\(stopped)"])
        let refused = try Subprocess.curl(["-p", "-x", unreachable.proxy, "-o", "/dev/null", "-w", "%{http_connect}",
                                           "https://127.0.0.1:443/"])
        #expect(refused.stdout == "502")
        let (_, unreachableRecords) = try unreachable.stop()
        #expect(unreachableRecords.first?["reason"] as? String == "parent-unreachable")
        #expect((unreachableRecords.first?["message"] as? String ?? "").contains("127.0.0.1:\(stopped)"))

        // The kernel accepts its connections, and nothing ever answers.
        let silent = try loopbackListener()
        defer { close(silent.fd) }
        let (daemon, _) = try Self.daemon(["--parent", "http://127.0.0.1:\(silent.port)", "--connect-timeout", "2"])
        let timedOut = try Subprocess.curl(["-p", "-x", daemon.proxy, "-o", "/dev/null", "-w", "%{http_connect}",
                                            "https://127.0.0.1:443/"])
        #expect(timedOut.stdout == "504")
        let (_, records) = try daemon.stop()
        #expect(records.first?["reason"] as? String == "parent-timeout")
    }

    /// Garbage from the parent: 502 parent-protocol, for a tunnel and for a forwarded request, and
    /// the daemon goes on serving.
    @Test func aParentAnsweringGarbageIsParentProtocolAndTheDaemonGoesOn() throws {
        let parent = try RawOrigin(closeAfterReply: true, always: "SSH-2.0-OpenSSH_9.2\r\n\r\n")
        let origin = try Origin()
        let policy = #"{"NSAllowsArbitraryLoads": true}"#
        let (daemon, _) = try Self.daemon(["--parent", "http://127.0.0.1:\(parent.port)", "--parent-bypass", "127.0.0.1",
                                           "--connect-port", "443"], policy: policy)
        let tunnel = try Subprocess.curl(["-p", "-x", daemon.proxy, "-o", "/dev/null", "-w", "%{http_connect}",
                                          "http://elsewhere.test:443/"])
        #expect(tunnel.stdout == "502")
        let plain = try Subprocess.curl(["-x", daemon.proxy, "-D", "-", "-o", "/dev/null", "http://elsewhere.test/"])
        #expect(plain.stdout.hasPrefix("HTTP/1.1 502 "), "\(plain.stdout)")
        #expect(plain.stdout.contains("X-ATS-Reason: parent-protocol\r\n"))
        let direct = try Subprocess.curl(["-x", daemon.proxy, "http://127.0.0.1:\(origin.httpPort)/small"])
        #expect(direct.stdout == String(repeating: "a", count: 100), "still serving: \(direct.stderr)")
        let records = try daemon.stopInTimeOrder(expected: 3)
        #expect(records.prefix(2).allSatisfy { $0["reason"] as? String == "parent-protocol" }, "\(records)")
        #expect(records.last?["parent"] is NSNull, "127.0.0.1 bypasses the parent")
    }

    /// Through a parent the name is the parent's to resolve: the destination ACL checks the name or
    /// literal as the client gave it, before anything reaches the parent.
    @Test func aDeniedDestinationNeverReachesTheParent() throws {
        let parent = try RawOrigin(always: "HTTP/1.1 200 Connection Established\r\n\r\n")
        let (daemon, _) = try Self.daemon(["--parent", "http://127.0.0.1:\(parent.port)", "--deny-dest", ".blocked.test",
                                           "--deny-dest", "198.51.100.0/24"])
        for url in ["https://api.blocked.test/", "https://198.51.100.7/"] {
            let run = try Subprocess.curl(["-p", "-x", daemon.proxy, "-o", "/dev/null", "-w", "%{http_connect}", url])
            #expect(run.stdout == "403", "\(url): \(run.stderr)")
        }
        let records = try daemon.stopInTimeOrder(expected: 2)
        #expect(records.allSatisfy { $0["reason"] as? String == "destination-not-allowed" }, "\(records)")
        #expect(parent.connections == 0, "nothing reached the parent")
    }

    /// A parent whose answer ends its lines in LF alone has answered as far as it knows: that is
    /// parent-protocol at once, never a wait for a CRLFCRLF until parent-timeout.
    @Test func aParentAnsweringWithBareLineFeedsIsParentProtocolAtOnce() throws {
        let parent = try RawOrigin(always: "HTTP/1.1 200 Connection Established\n\n")
        let (daemon, _) = try Self.daemon(["--parent", "http://127.0.0.1:\(parent.port)", "--connect-timeout", "60"])
        let run = try Subprocess.curl(["-p", "-x", daemon.proxy, "-o", "/dev/null", "-w", "%{http_connect}",
                                       "https://127.0.0.1:443/"])
        #expect(run.stdout == "502", "\(run.stderr)")
        let (_, records) = try daemon.stop()
        #expect(records.first?["reason"] as? String == "parent-protocol", "\(records)")
        #expect((records.first?["message"] as? String ?? "").contains("bare LF"), "\(records)")
    }

    // MARK: choosing the way out

    /// Two real parents: the first is stopped mid-test; the next request fails over to the second,
    /// and the stopped one is passed over afterwards (/metrics says it is down).
    @Test func aStoppedParentIsPassedOverForTheNext() throws {
        let origin = try TLSTestOrigin(leaf: "good-rsa", arguments: [])
        let first = try SquidParent(connectPorts: [origin.port])
        let second = try SquidParent(connectPorts: [origin.port])
        let admin = try freePort()
        let (daemon, _) = try Self.daemon(["--connect-port", "\(origin.port)", "--admin", "127.0.0.1:\(admin)",
                                           "--parent", "http://\(first.address)", "--parent", "http://\(second.address)"])
        #expect(try Self.curl(daemon, "https://127.0.0.1:\(origin.port)/").stdout == "ok from tls_origin\n")
        first.stop()
        for _ in 0..<2 {
            let run = try Self.curl(daemon, "https://127.0.0.1:\(origin.port)/")
            #expect(run.stdout == "ok from tls_origin\n", "\(run.stderr)")
        }
        let metrics = try Subprocess.curl(["http://127.0.0.1:\(admin)/metrics"]).stdout
        #expect(metrics.contains("atsgate_parent_up{parent=\"\(first.address)\"} 0\n"), "\(metrics)")
        #expect(metrics.contains("atsgate_parent_up{parent=\"\(second.address)\"} 1\n"))
        #expect(metrics.contains("atsgate_upstream_connections_total{parent=\"\(second.address)\",result=\"connected\"} 2\n"))
        let records = try daemon.stopInTimeOrder(expected: 3)
        #expect(records.map { $0["parent"] as? String } == [first.address, second.address, second.address])
        #expect(records.allSatisfy { $0["action"] as? String == "allow" })
    }

    /// `--parent-bypass` and a route's own `parent=URL` or `direct` choose the way out per request.
    @Test func bypassAndRoutesChooseTheWayOut() throws {
        let origin = try Origin()
        let squid = try SquidParent(connectPorts: [origin.httpPort], user: Self.user, hosts: ["routed.test"])
        let stopped = try freePort()
        let policy = #"{"NSAllowsArbitraryLoads": true}"#
        let (daemon, _) = try Self.daemon(["--connect-port", "\(origin.httpPort)", "--parent", "http://127.0.0.1:\(stopped)",
                                           "--parent-bypass", ".bypassed.test", "--resolve", "a.bypassed.test=127.0.0.1",
                                           "--resolve", "routed.test=127.0.0.1",
                                           "--route", "agent:DirectApp=direct",
                                           "--route", "agent:ParentApp=parent=http://\(Self.credentials)@\(squid.address)"],
                                          policy: policy)
        func get(_ host: String, agent: String) throws -> AtsgateRun {
            try Subprocess.curl(["-p", "-x", daemon.proxy, "-A", "\(agent)/1.0 CFNetwork/1490 Darwin/23.0.0",
                                 "-o", "/dev/null", "-w", "%{http_connect}", "http://\(host):\(origin.httpPort)/small"])
        }
        #expect(try get("a.bypassed.test", agent: "Other").stdout == "200")
        #expect(try get("routed.test", agent: "DirectApp").stdout == "200")
        #expect(try get("routed.test", agent: "ParentApp").stdout == "200")
        #expect(try get("routed.test", agent: "Other").stdout == "502", "the global parent is stopped")
        let records = try daemon.stopInTimeOrder(expected: 4)
        let parents = records.map { $0["parent"] as? String ?? "direct" }
        #expect(parents == ["direct", "direct", squid.address, "127.0.0.1:\(stopped)"], "\(records)")
        #expect(records.last?["reason"] as? String == "parent-unreachable")
        #expect(squid.waitForAccess("CONNECT routed.test:\(origin.httpPort)")?.contains(" lab ") == true)
    }

    // MARK: bad input

    @Test(arguments: [
        (["--parent", "socks5://127.0.0.1:1080"], "--parent socks5://127.0.0.1:1080"),
        (["--parent", "https://proxy.corp:3128"], "--parent https://proxy.corp:3128"),
        (["--parent", "http://proxy.corp"], "--parent http://proxy.corp"),
        (["--parent", "proxy.corp:3128"], "--parent proxy.corp:3128"),
        (["--parent", "http://:secret@proxy.corp:3128"], "credentials"),
        (["--parent-bypass", "not a name"], "--parent-bypass"),
        (["--route", "agent:App=parent=ftp://x:21"], "--route agent:App=parent=ftp://x:21"),
    ])
    func aParentThatDoesNotParseExitsTwoNamingTheFlag(arguments: [String], words: String) throws {
        let run = try Atsgate.run(["run", "--listen", "127.0.0.1:0"] + arguments, timeout: 20)
        #expect(run.status == 2, "\(arguments): \(run.stderr)")
        #expect(run.stderr.contains(words), "\(run.stderr)")
    }

    @Test func theConfigFileTakesTheParentAndDNSKeys() throws {
        let directory = try TemporaryDirectory()
        let config = try directory.write("atsgate.conf", """
            parent = http://127.0.0.1:1
            parent = http://lab:pw@127.0.0.1:2
            parent-bypass = .corp.example
            dns-timeout = 3
            dns-server = 127.0.0.1:53
            dns-max-ttl = 60

            """)
        let admin = try freePort()
        let daemon = try Daemon(["--config", config, "--admin", "127.0.0.1:\(admin)"])
        let metrics = try Subprocess.curl(["http://127.0.0.1:\(admin)/metrics"]).stdout
        #expect(metrics.contains("atsgate_parent_up{parent=\"127.0.0.1:1\"} 1\n"), "\(metrics)")
        #expect(metrics.contains("atsgate_parent_up{parent=\"127.0.0.1:2\"} 1\n"))
        _ = daemon.process.stop()
        let bad = try directory.write("bad.conf", "parent = ftp://127.0.0.1:1\n")
        let run = try Atsgate.run(["run", "--config", bad], timeout: 20)
        #expect(run.status == 2)
        #expect(run.stderr.contains("bad.conf"), "\(run.stderr)")
        #expect(run.stderr.contains("--parent"))
    }
}
