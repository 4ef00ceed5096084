import Foundation
import Testing
import TestSupport

/// `atsgate run` end to end: the real daemon on a loopback port, real curl and openssl clients, a local
/// origin. Each test asserts bytes on the wire and the decision log record.
@Suite(.serialized) struct RunDaemonTests {
    /// Names pinned to loopback so that "public" hosts reach the local origins.
    static let pins = ["--resolve", "api.example.com=127.0.0.1", "--resolve", "tls.test=127.0.0.1",
                       "--resolve", "legacy.example.com=127.0.0.1"]

    static let legacyPolicy = #"{"NSExceptionDomains": {"legacy.example.com": {"NSExceptionAllowsInsecureHTTPLoads": true}}}"#

    @Test func plainHTTPToALocalOriginIsForwardedAndLogged() throws {
        let origin = try Origin()
        let daemon = try Daemon(["--connect-port", "443"])
        let run = try Subprocess.curl(["-x", daemon.proxy, "http://127.0.0.1:\(origin.httpPort)/headers"])
        #expect(run.status == 0)
        #expect(run.stdout.hasPrefix("GET /headers HTTP/1.1\r\n"), "origin got: \(run.stdout)")
        #expect(run.stdout.contains("Via: 1.1 atsgate"))
        #expect(!run.stdout.lowercased().contains("proxy-connection"))
        let (status, records) = try daemon.stop()
        #expect(status == 0)
        let record = try #require(records.first)
        #expect(record["action"] as? String == "allow")
        #expect(record["ats"] as? String == "exempt")
        #expect(record["class"] as? String == "ip")
        #expect(record["enforced"] as? Bool == true)
        #expect(record["upstream_ip"] as? String == "127.0.0.1")
        #expect((record["bytes_down"] as? Int ?? 0) > 0)
        #expect((record["bytes_up"] as? Int ?? 0) > 0, "the request head went up")
        for field in ["time", "client", "policy", "method", "scheme", "host", "port", "class", "direct", "exception",
                      "ats", "action", "reason", "message", "enforced", "tls_version", "cipher", "upstream_ip",
                      "bytes_up", "bytes_down", "duration_ms"] {
            #expect(record.keys.contains(field), "log record lacks \(field)")
        }
    }

    /// A name that is not pinned goes to the system resolver (getaddrinfo, off the loop) and its
    /// answer comes back to the connection's loop: `localhost`, an unqualified name (local, R11).
    @Test func namesAreResolvedByTheSystemOffTheLoop() throws {
        let origin = try Origin()
        let daemon = try Daemon(["--connect-port", "\(origin.httpPort)"])
        let plain = try Subprocess.curl(["-x", daemon.proxy, "http://localhost:\(origin.httpPort)/small"])
        #expect(plain.stdout == String(repeating: "a", count: 100), "\(plain.stderr)")
        let tunnel = try Subprocess.curl(["-p", "-x", daemon.proxy, "http://localhost:\(origin.httpPort)/small"])
        #expect(tunnel.stdout == String(repeating: "a", count: 100), "\(tunnel.stderr)")
        let (_, records) = try daemon.stop(expected: 2)
        #expect(records.map { $0["method"] as? String ?? "" }.sorted() == ["CONNECT", "GET"])
        for record in records {
            #expect(record["host"] as? String == "localhost")
            #expect(record["class"] as? String == "unqualified")
            #expect(record["action"] as? String == "allow")
            #expect(["127.0.0.1", "::1"].contains(record["upstream_ip"] as? String ?? ""), "\(record)")
        }
    }

    @Test func cleartextToAPublicHostIsBlockedWith403AndItsReason() throws {
        let origin = try Origin()
        let daemon = try Daemon(Self.pins)
        let run = try Subprocess.curl(["-x", daemon.proxy, "-D", "-", "http://api.example.com:\(origin.httpPort)/small"])
        #expect(run.stdout.hasPrefix("HTTP/1.1 403 Forbidden\r\n"))
        #expect(run.stdout.contains("X-ATS-Action: block\r\n"))
        #expect(run.stdout.contains("X-ATS-Reason: cleartext-http\r\n"))
        #expect(run.stdout.contains("cleartext HTTP to api.example.com is not allowed"))
        let (_, records) = try daemon.stop()
        let record = try #require(records.first)
        #expect(record["action"] as? String == "block")
        #expect(record["reason"] as? String == "cleartext-http")
        #expect(record["status"] as? Int == 403)
        #expect(record["host"] as? String == "api.example.com")
        #expect(record["upstream_ip"] is NSNull, "a blocked request must not reach the origin")
    }

    @Test func anExceptionEntryLetsCleartextThrough() throws {
        let origin = try Origin()
        let directory = try TemporaryDirectory()
        let policy = try directory.write("policy.json", Self.legacyPolicy)
        let daemon = try Daemon(Self.pins + ["--policy", policy])
        let run = try Subprocess.curl(["-x", daemon.proxy, "http://legacy.example.com:\(origin.httpPort)/small"])
        #expect(run.stdout == String(repeating: "a", count: 100))
        let (_, records) = try daemon.stop()
        #expect(records.first?["exception"] as? String == "legacy.example.com")
        #expect(records.first?["policy"] as? String == policy)
    }

    @Test func reportModeLogsTheBlockAndLetsItThrough() throws {
        let origin = try Origin()
        let daemon = try Daemon(Self.pins + ["--mode", "report"])
        let run = try Subprocess.curl(["-x", daemon.proxy, "http://api.example.com:\(origin.httpPort)/small"])
        #expect(run.stdout == String(repeating: "a", count: 100))
        let (_, records) = try daemon.stop()
        let record = try #require(records.first)
        #expect(record["action"] as? String == "block")
        #expect(record["reason"] as? String == "cleartext-http")
        #expect(record["enforced"] as? Bool == false)
    }

    @Test func reportModeKeepsTheWouldBeBlockWhenTheOriginThenFails() throws {
        let closed = try freePort()
        let daemon = try Daemon(Self.pins + ["--mode", "report"])
        let run = try Subprocess.curl(["-x", daemon.proxy, "-o", "/dev/null", "-w", "%{http_code}",
                                       "http://api.example.com:\(closed)/small"])
        #expect(run.stdout == "502", "the origin refused: \(run.stdout)")
        let record = try #require(try daemon.stop().records.first)
        // What the gate is for: this load would have been blocked. What followed is in the message.
        #expect(record["action"] as? String == "block")
        #expect(record["reason"] as? String == "cleartext-http")
        #expect(record["enforced"] as? Bool == false)
        #expect(record["status"] as? Int == 502)
        let message = record["message"] as? String ?? ""
        #expect(message.hasPrefix("cleartext HTTP to api.example.com is not allowed"), "\(message)")
        #expect(message.contains("; then upstream-refused: cannot connect to api.example.com:\(closed)"), "\(message)")
    }

    @Test func aRequestNoPolicyWasRoutedToStillSaysWhereItWasGoing() throws {
        let directory = try TemporaryDirectory()
        let app = try directory.write("app.json", "{}")
        let daemon = try Daemon(["--policy", "app=" + app, "--route", "port:1=app", "--unrouted", "block"])
        let run = try Subprocess.curl(["-x", daemon.proxy, "-o", "/dev/null", "-w", "%{http_code}", "http://a.example/x"])
        #expect(run.stdout == "403")
        let record = try #require(try daemon.stop().records.first)
        #expect(record["reason"] as? String == "no-policy")
        #expect(record["scheme"] as? String == "http" && record["host"] as? String == "a.example"
                && record["port"] as? Int == 80, "\(record)")
        #expect(record["policy"] is NSNull && record["app"] is NSNull, "no policy was chosen: \(record)")
        // The report counts it as the block it is, with no ATS finding or fix: nothing was decided.
        let log = try directory.write("decisions.log", try JSONSerialization.data(withJSONObject: record))
        let report = try Atsgate.run(["report", log])
        #expect(report.status == 1, "\(report.stdout)")
        #expect(report.stdout.contains("http://a.example:80  no-policy  1 record"), "\(report.stdout)")
        #expect(!report.stdout.contains("cleartext-http") && !report.stdout.contains("fix: "), "\(report.stdout)")
    }

    @Test func redirectModeAnswers308ToHTTPS() throws {
        let daemon = try Daemon(Self.pins + ["--cleartext", "redirect"])
        let run = try Subprocess.curl(["-x", daemon.proxy, "-D", "-", "-o", "/dev/null", "http://api.example.com/v1?q=1"])
        #expect(run.stdout.hasPrefix("HTTP/1.1 308 Permanent Redirect\r\n"))
        #expect(run.stdout.contains("Location: https://api.example.com/v1?q=1\r\n"))
        let (_, records) = try daemon.stop()
        #expect(records.first?["action"] as? String == "upgrade")
    }

    /// The relay itself; TLSInspectionTests covers what the inspection decides.
    @Test func tlsThroughConnectIsTunnelled() throws {
        let tls = try TLSOrigin()
        let daemon = try Daemon(Self.pins + ["--connect-port", "\(tls.port)", "--tls-inspection", "off"])
        let run = try Subprocess.curl(["-k", "-x", daemon.proxy, "https://tls.test:\(tls.port)/"])
        #expect(run.status == 0, "curl: \(run.stderr)")
        #expect(run.stdout.contains("s_server"), "s_server -www page expected")
        try daemon.waitForRecords(1)
        let (_, records) = try daemon.stop()
        let record = try #require(records.first)
        #expect(record["method"] as? String == "CONNECT")
        #expect(record["scheme"] as? String == "https")
        #expect(record["action"] as? String == "allow")
        #expect(record["ats"] as? String == "on")
        #expect((record["bytes_up"] as? Int ?? 0) > 100, "the ClientHello went up")
        #expect((record["bytes_down"] as? Int ?? 0) > 500, "the certificate and page came down")
    }

    @Test func cleartextInsideATunnelIsBlocked() throws {
        let origin = try Origin()
        let daemon = try Daemon(Self.pins + ["--connect-port", "\(origin.httpPort)"])
        let run = try Subprocess.curl(["-p", "-x", daemon.proxy, "http://api.example.com:\(origin.httpPort)/small"])
        #expect(run.status != 0)
        #expect(!run.stdout.contains("aaaa"))
        let (_, records) = try daemon.stop()
        let record = try #require(records.first)
        #expect(record["action"] as? String == "block")
        #expect(record["reason"] as? String == "cleartext-in-tunnel")
        #expect((record["message"] as? String ?? "").contains("add NSExceptionAllowsInsecureHTTPLoads=YES"))
    }

    @Test func connectToAPortOffTheAllowListIsRefused() throws {
        let daemon = try Daemon(Self.pins)
        let run = try Subprocess.curl(["-p", "-x", daemon.proxy, "-D", "-", "https://tls.test:8443/"])
        #expect(run.status != 0)
        let (_, records) = try daemon.stop()
        #expect(records.first?["reason"] as? String == "port-not-allowed")
        #expect(records.first?["status"] as? Int == 403)
    }

    @Test func clientsOutsideTheAllowListAreRefused() throws {
        let daemon = try Daemon(["--allow-client", "10.0.0.0/8"])
        let run = try Subprocess.curl(["-x", daemon.proxy, "-D", "-", "http://127.0.0.1:1/"])
        #expect(run.stdout.hasPrefix("HTTP/1.1 403 Forbidden\r\n"))
        #expect(run.stdout.contains("X-ATS-Reason: client-not-allowed"))
        let (_, records) = try daemon.stop()
        #expect(records.first?["reason"] as? String == "client-not-allowed")
    }

    @Test func connectWithoutHostHeaderAndHalfCloseArePropagated() throws {
        let origin = try Origin()
        let daemon = try Daemon(["--connect-port", "\(origin.eofPort)"])
        let client = try RawClient(port: daemon.port)
        // No Host header, as some iOS clients send it; cleartext to a local origin is exempt (R11).
        client.send("CONNECT 127.0.0.1:\(origin.eofPort) HTTP/1.1\r\n\r\n")
        #expect(client.read(until: "\r\n\r\n") == "HTTP/1.1 200 Connection Established\r\nProxy-Status: atsgate\r\n\r\n")
        client.send(String(repeating: "x", count: 70_000))
        client.shutdownWrite()
        // The origin answers only after it sees end of input: our half-close reached it.
        let reply = client.readAll()
        #expect(reply == "got 70000 bytes\n", "daemon: \(daemon.process.stdout) \(daemon.process.stderr)")
        try daemon.waitForRecords(1)
        let (_, records) = try daemon.stop()
        #expect(records.first?["bytes_up"] as? Int == 70_000)
        #expect(records.first?["bytes_down"] as? Int == 16)
    }

    /// A client that sends its whole request and half-closes at once (as `printf ... | nc -N` does)
    /// still gets its answer: the end of its input is seen after the request, not instead of it.
    @Test func requestsFollowedAtOnceByTheClientsHalfCloseAreAnswered() throws {
        let origin = try Origin()
        let daemon = try Daemon(["--connect-port", "\(origin.httpPort)"])
        let plain = try RawClient(port: daemon.port)
        let request = "GET http://127.0.0.1:\(origin.httpPort)/small HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        plain.send(request + request) // the second pipelined behind the first, then the end
        plain.shutdownWrite()
        let answer = plain.readAll()
        #expect(answer.hasPrefix("HTTP/1.1 200 "), "\(answer)")
        #expect(answer.components(separatedBy: "HTTP/1.1 200 ").count == 3, "both answered: \(answer)")
        #expect(answer.hasSuffix(String(repeating: "a", count: 100)))

        let tunnel = try RawClient(port: daemon.port)
        tunnel.send("CONNECT 127.0.0.1:\(origin.httpPort) HTTP/1.1\r\n\r\n"
            + "GET /small HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        tunnel.shutdownWrite()
        let tunnelled = tunnel.readAll()
        #expect(tunnelled.hasPrefix("HTTP/1.1 200 Connection Established\r\nProxy-Status: atsgate\r\n\r\nHTTP/1.1 200 "), "\(tunnelled)")
        #expect(tunnelled.hasSuffix(String(repeating: "a", count: 100)))
        let (_, records) = try daemon.stop(expected: 3)
        #expect(records.map { $0["method"] as? String }.sorted { ($0 ?? "") < ($1 ?? "") } == ["CONNECT", "GET", "GET"])
        #expect(records.allSatisfy { $0["action"] as? String == "allow" })
    }

    @Test func unreachableOriginGets502WithItsCause() throws {
        let closed = try freePort()
        let daemon = try Daemon(["--connect-port", "\(closed)"])
        let plain = try Subprocess.curl(["-x", daemon.proxy, "-D", "-", "http://127.0.0.1:\(closed)/"])
        #expect(plain.stdout.hasPrefix("HTTP/1.1 502 Bad Gateway\r\n"))
        #expect(plain.stdout.contains("X-ATS-Reason: upstream-refused"))
        let tunnel = try Subprocess.curl(["-p", "-x", daemon.proxy, "-D", "-", "http://127.0.0.1:\(closed)/"])
        #expect(tunnel.stdout.hasPrefix("HTTP/1.1 502 Bad Gateway\r\n"), "CONNECT answers 200 only once the upstream is up")
        let (_, records) = try daemon.stop(expected: 2)
        #expect(records.count == 2)
        #expect(records.allSatisfy { $0["reason"] as? String == "upstream-refused" })
    }

    /// Each bad request gets its status; the daemon keeps serving the good request after it.
    @Test(arguments: [
        ("GARBAGE\r\n\r\n", "HTTP/1.1 400 "),
        ("GET http://127.0.0.1/ HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", "HTTP/1.1 400 "),
        ("GET http://127.0.0.1/ HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", "HTTP/1.1 400 "),
        ("GET http://127.0.0.1/ HTTP/1.1\r\nX-A: 1\r\n  folded\r\n\r\n", "HTTP/1.1 400 "),
        ("GET http://127.0.0.1/ HTTP/1.1\r\nX-A: 1\nX-B: 2\r\n\r\n", "HTTP/1.1 400 "),
        ("GET http://127.0.0.1/ HTTP/1.1\r\nX-Big: " + String(repeating: "b", count: 17_000) + "\r\n\r\n", "HTTP/1.1 431 "),
        ("GET example.com:443 HTTP/1.1\r\n\r\n", "HTTP/1.1 405 "),
        ("GET / HTTP/1.1\r\nHost: proxy\r\n\r\n", "HTTP/1.1 400 "),
        ("GET http://bad..host/ HTTP/1.1\r\n\r\n", "HTTP/1.1 400 "),
    ])
    func badRequestsGetAClearAnswerAndTheDaemonKeepsServing(request: String, expected: String) throws {
        let origin = try Origin()
        let daemon = try Daemon([])
        let bad = try RawClient(port: daemon.port)
        bad.send(request)
        let answer = bad.readAll()
        #expect(answer.hasPrefix(expected), "got: \(answer.prefix(80))")
        let good = try Subprocess.curl(["-x", daemon.proxy, "http://127.0.0.1:\(origin.httpPort)/small"])
        #expect(good.stdout == String(repeating: "a", count: 100))
        let (status, records) = try daemon.stop(expected: 2)
        #expect(status == 0)
        #expect(records.count == 2, "one record for the bad request, one for the good")
    }

    @Test func theProxysOwnAddressGetsAUsagePage() throws {
        let daemon = try Daemon([])
        let run = try Subprocess.curl(["-D", "-", daemon.proxy + "/"])
        #expect(run.stdout.hasPrefix("HTTP/1.1 400 Bad Request\r\n"))
        #expect(run.stdout.contains("Use it as your HTTP proxy"))
        let (_, records) = try daemon.stop()
        #expect(records.first?["reason"] as? String == "not-a-proxy-request")
    }

    @Test func aSlowClientIsCutOffAfterTheHeadTimeout() throws {
        let daemon = try Daemon(["--head-timeout", "0.5"])
        let client = try RawClient(port: daemon.port)
        client.send("GET http://127.0.0.1/ HTTP/1.1\r\nX-Slow: ")
        let answer = client.readAll()
        #expect(answer.hasPrefix("HTTP/1.1 408 Request Timeout\r\n"))
        let (_, records) = try daemon.stop()
        #expect(records.first?["reason"] as? String == "request-timeout")
    }

    @Test func startupErrorsExitNonZeroWithOneLine() throws {
        let daemon = try Daemon([])
        let busy = try Atsgate.run(["run", "--listen", "127.0.0.1:\(daemon.port)"], timeout: 10)
        #expect(busy.status == 2, "every start-up failure exits 2, a busy port too")
        #expect(busy.stderr.contains("cannot listen: bind 127.0.0.1:\(daemon.port): Address already in use"))
        _ = try daemon.stop(expected: 0)
        let policy = try Atsgate.run(["run", "--policy", "/nonexistent.plist"], timeout: 10)
        #expect(policy.status == 2)
        #expect(policy.stderr == "atsgate: /nonexistent.plist: no such file\n")
        let caFile = try Atsgate.run(["run", "--ca-file", "/nonexistent.pem"], timeout: 10)
        #expect(caFile.status == 2)
        #expect(caFile.stderr.hasPrefix("atsgate: --ca-file: CA file /nonexistent.pem: "), "\(caFile.stderr)")
    }

    @Test func theConfigFileSetsOptionsAndFlagsOverrideIt() throws {
        let origin = try Origin()
        let directory = try TemporaryDirectory()
        let config = try directory.write("atsgate.conf", """
            # report mode from the file, pinned name, text log
            mode = report
            resolve = api.example.com=127.0.0.1
            log-format = json
            connect-port = 443
            """)
        // The file says report; the flag says enforce and wins.
        let daemon = try Daemon(["--config", config, "--mode", "enforce"])
        let blocked = try Subprocess.curl(["-x", daemon.proxy, "-o", "/dev/null", "-w", "%{http_code}",
                                           "http://api.example.com:\(origin.httpPort)/small"])
        #expect(blocked.stdout == "403", "the file's resolve applies and the flag's mode wins")
        let (_, records) = try daemon.stop()
        #expect(records.first?["enforced"] as? Bool == true)

        let reporting = try Daemon(["--config", config])
        let through = try Subprocess.curl(["-x", reporting.proxy, "http://api.example.com:\(origin.httpPort)/small"])
        #expect(through.stdout == String(repeating: "a", count: 100), "report mode from the file lets it through")
        _ = try reporting.stop()
    }

    @Test(arguments: [
        ("lisen = 127.0.0.1:0\n", ":1: unknown key 'lisen' (did you mean 'listen'?)"),
        ("listen = 127.0.0.1:0\nprofile = ios8\n", ":2: The value 'ios8' is invalid for '--profile"),
        ("just words\n", ":1: expected 'key = value'"),
        ("no-builtin-exceptions = maybe\n", ":1: no-builtin-exceptions takes true or false"),
    ])
    func aBrokenConfigFileNamesTheFileAndLine(contents: String, expected: String) throws {
        let directory = try TemporaryDirectory()
        let config = try directory.write("broken.conf", contents)
        let run = try Atsgate.run(["run", "--config", config], timeout: 10)
        #expect(run.status == 2)
        #expect(run.stderr.hasPrefix("atsgate: \(config)\(expected)"), "stderr: \(run.stderr)")
    }

    @Test func theShippedExampleConfigIsValid() throws {
        let example = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("config/atsgate.conf").path
        let daemon = try Daemon(["--config", example])
        _ = try daemon.stop(expected: 0)
    }

    /// What the origin receives: the request line in origin form, hop-by-hop fields, the fields
    /// Connection names and every Proxy-* field removed, an existing Via kept and ours appended.
    @Test func theOriginGetsTheRewrittenHead() throws {
        let origin = try Origin()
        let daemon = try Daemon([])
        let client = try RawClient(port: daemon.port)
        client.send("GET http://127.0.0.1:\(origin.httpPort)/headers?q=1 HTTP/1.1\r\nHost: 127.0.0.1:\(origin.httpPort)\r\n"
                    + "Connection: close, X-Hop\r\nX-Hop: 1\r\nKeep-Alive: 5\r\nProxy-Authorization: Basic eA==\r\n"
                    + "Proxy-Trace: 1\r\nTE: trailers\r\nVia: 1.0 edge\r\nX-Kept:  yes \r\n\r\n")
        let reply = client.readAll()
        let body = try #require(reply.range(of: "\r\n\r\n").map { String(reply[$0.upperBound...]) })
        let expected = "GET /headers?q=1 HTTP/1.1\r\nHost: 127.0.0.1:\(origin.httpPort)\r\nVia: 1.0 edge\r\n"
            + "X-Kept: yes\r\nVia: 1.1 atsgate\r\n"
        #expect(body.hasPrefix(expected), "origin got: \(body)")
        #expect(reply.contains("Connection: close\r\n"), "the client asked for close: \(reply)")
        _ = try daemon.stop()
    }

    /// A request sent while the one before it is still in flight is read early (the client's read
    /// interest stays on during an exchange) and answered after it, in order.
    @Test func aRequestSentDuringAnExchangeIsAnsweredAfterIt() throws {
        let origin = try Origin()
        let daemon = try Daemon([])
        let client = try RawClient(port: daemon.port)
        let base = "http://127.0.0.1:\(origin.httpPort)"
        client.send("GET \(base)/slow HTTP/1.1\r\nHost: x\r\n\r\n")
        usleep(100_000) // the origin takes 0.3 s: the next request arrives while this one is in flight
        client.send("GET \(base)/small HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        let reply = client.readAll()
        let slow = try #require(reply.range(of: "\r\n\r\nslow\n"), "reply: \(reply)")
        let rest = reply[slow.upperBound...]
        #expect(rest.hasPrefix("HTTP/1.1 200 "), "the second response follows the first: \(reply)")
        #expect(rest.hasSuffix(String(repeating: "a", count: 100)))
        let (_, records) = try daemon.stop(expected: 2)
        #expect(records.map { $0["status"] as? Int } == [200, 200])
    }

    /// Several requests on one client connection, bodies of both framings, and a pipelined pair.
    @Test func forwardedRequestsKeepTheClientConnection() throws {
        let origin = try Origin()
        let daemon = try Daemon([])
        let base = "http://127.0.0.1:\(origin.httpPort)"
        // curl reuses one connection for URLs given together; -w shows how many it opened.
        let run = try Subprocess.curl(["-x", daemon.proxy, "-w", "[%{num_connects}]",
                                       "\(base)/small", "\(base)/small", "\(base)/small"])
        let small = String(repeating: "a", count: 100)
        #expect(run.stdout == "\(small)[1]\(small)[0]\(small)[0]", "one connection for three requests")

        let client = try RawClient(port: daemon.port)
        // A short marker ends the body: searching the reply for the whole body would be quadratic.
        let body = String(repeating: "b", count: 69_999) + "Z"
        client.send("POST \(base)/echo HTTP/1.1\r\nHost: x\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
        let first = client.read(until: "Z")
        #expect(first.hasPrefix("HTTP/1.1 200 "))
        #expect(first.contains("Via: 1.1 atsgate\r\n") || first.contains("Via: 1.0 atsgate\r\n"))
        #expect(first.hasSuffix(body))
        // Chunked upload, pipelined with a GET behind it in the same write.
        client.send("POST \(base)/echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                    + "5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\n\r\n"
                    + "GET \(base)/small HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        let rest = client.readAll()
        #expect(rest.contains("\r\n\r\nhello world"), "chunked body arrives: \(rest.prefix(300))")
        #expect(rest.hasSuffix(String(repeating: "a", count: 100)), "the pipelined GET is answered after it")
        #expect(rest.contains("Connection: close\r\n"))
        let (_, records) = try daemon.stop(expected: 6)
        #expect(records.count == 6)
        #expect(records.allSatisfy { $0["action"] as? String == "allow" && $0["status"] as? Int == 200 })
    }

    /// Origin connections are pooled per event-loop queue (no locks); client connections are spread
    /// over the queues round robin, so among three clients in turn two share a queue and must reach
    /// the origin over the same connection.
    @Test func originConnectionsArePooledAcrossClients() throws {
        let origin = try Origin()
        let daemon = try Daemon(["--max-connections", "100"])
        func originPort() throws -> String {
            let run = try Subprocess.curl(["-x", daemon.proxy, "http://127.0.0.1:\(origin.httpPort)/headers"])
            return String(try #require(run.stdout.firstMatch(of: /X-Origin-Saw-Port: (\d+)/)).1)
        }
        let ports = try (0..<3).map { _ in try originPort() }
        #expect(Set(ports).count < 3, "some request should reuse a pooled origin connection: \(ports)")
        let (_, records) = try daemon.stop(expected: 3)
        #expect(records.count == 3)
    }

    /// The load context comes from the User-Agent (R12 per context) unless the operator fixes it.
    @Test func loadContextFromUserAgentOrFlag() throws {
        let origin = try Origin()
        let directory = try TemporaryDirectory()
        let policy = try directory.write("media.json", #"{"NSAllowsArbitraryLoadsForMedia": true}"#)
        let daemon = try Daemon(Self.pins + ["--policy", policy])
        let url = "http://api.example.com:\(origin.httpPort)/small"
        let media = try Subprocess.curl(["-x", daemon.proxy, "-o", "/dev/null", "-w", "%{http_code}",
                                         "-A", "AppleCoreMedia/1.0.0.21A329 (iPhone; U; CPU OS 17_0 like Mac OS X)", url])
        let web = try Subprocess.curl(["-x", daemon.proxy, "-o", "/dev/null", "-w", "%{http_code}", "-A",
                                       "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148", url])
        #expect(media.stdout == "200", "AVFoundation loads are exempt under NSAllowsArbitraryLoadsForMedia")
        #expect(web.stdout == "403", "a WKWebView load is not media")
        let (_, records) = try daemon.stop(expected: 2)
        // Two client connections may be on two loops, whose log batches go out in either order.
        #expect(records.compactMap { $0["ats"] as? String }.sorted() == ["off", "on"])

        let forced = try Daemon(Self.pins + ["--policy", policy, "--context", "media"])
        let plain = try Subprocess.curl(["-x", forced.proxy, "-o", "/dev/null", "-w", "%{http_code}", url])
        #expect(plain.stdout == "200", "--context media applies to every request")
        _ = try forced.stop()
    }

    @Test func anIdleTunnelIsClosedAndLogged() throws {
        let origin = try Origin()
        let daemon = try Daemon(["--connect-port", "\(origin.eofPort)", "--idle-timeout", "0.3"])
        let client = try daemon.openTunnel(to: origin.eofPort)
        client.send("hello")
        // Nothing more moves: the daemon closes the tunnel; the origin, cut off, answers nothing.
        #expect(client.readAll() == "")
        let (_, records) = try daemon.stop()
        let message = records.first?["message"] as? String ?? ""
        #expect(message.contains("idle for"), "\(records)")
        #expect(records.first?["bytes_up"] as? Int == 5)
    }

    /// At the connection cap the daemon stops accepting (the kernel queues the rest) and resumes
    /// when a connection closes.
    @Test func theConnectionCapPausesAccepting() throws {
        let origin = try Origin()
        let daemon = try Daemon(["--max-connections", "1", "--head-timeout", "5"])
        let holder = try RawClient(port: daemon.port)
        holder.send("GET http://127.0.0.1:\(origin.httpPort)/small HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(holder.read(until: String(repeating: "a", count: 100)).hasSuffix(String(repeating: "a", count: 100)))
        let waiting = try Subprocess.curl(["-x", daemon.proxy, "--max-time", "1", "-o", "/dev/null", "-w", "%{http_code}",
                                           "http://127.0.0.1:\(origin.httpPort)/small"])
        #expect(waiting.stdout == "000", "no answer while the one allowed connection is held")
        holder.close()
        let after = try Subprocess.curl(["-x", daemon.proxy, "-o", "/dev/null", "-w", "%{http_code}",
                                         "http://127.0.0.1:\(origin.httpPort)/small"])
        #expect(after.stdout == "200", "accepting resumes once the held connection closes")
        _ = try daemon.stop(expected: 2)
    }
}
