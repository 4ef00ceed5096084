import Foundation
import Glibc
import Testing
import TestSupport

/// Proxy-Status (RFC 9209) on the real daemon's own answers, one of each class: blocks, the proxy's
/// errors, 407, 502 and 504 (DNS, connect, parent), the 308, the PAC file, the CONNECT 200 and a TLS
/// listener's cleartext 400; each parsed by a real Structured Field Values parser and checked against
/// the record the daemon logged for it. (The 429 is checked in ThrottledLoginTests.)
@Suite(.serialized) struct ProxyStatusDaemonTests {
    typealias Member = StructuredFieldParser.Member

    /// One raw request on its own connection; the answer's head and body.
    static func ask(_ daemon: Daemon, _ request: String) throws -> String {
        let client = try RawClient(port: daemon.port)
        client.send(request)
        return client.read(until: "\r\n\r\n")
    }

    /// What every answer shares: the proxy's name as a token, the error type as a token, details as
    /// a string naming the reason (and the rule the record names, for an ATS reason).
    static func expect(_ member: Member, error: String, details: String, name: String = "atsgate",
                       sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(member.name == name && member.nameType == "token", "\(member)", sourceLocation: sourceLocation)
        #expect(member.token("error") == error, "\(member)", sourceLocation: sourceLocation)
        #expect(member.string("details") == details, "\(member)", sourceLocation: sourceLocation)
    }

    @Test func blocksErrorsAndOriginFailuresSayWhyInProxyStatus() throws {
        let origin = try Origin()
        let closed = try freePort()
        let dns = try DNSTestServer(zone: ["fail.test": ["mode": "servfail"], "silent.test": ["mode": "never"],
                                           "nodata.test": ["A": [], "AAAA": []]])
        let daemon = try Daemon(["--local-network", "192.0.2.0/24", "--head-timeout", "1", "--dns-server", dns.address,
                                 "--dns-timeout", "1", "--deny-dest", "127.0.0.9", "--connect-port", "443",
                                 "--connect-port", "\(closed)", "--connect-port", "\(origin.httpPort)"])
        let long = String(repeating: "a", count: 9000)
        // (label, request, status, error type, details without the rule)
        let cases: [(String, String, Int, String, String)] = [
            ("cleartext", "GET http://api.example.com/ HTTP/1.1\r\nHost: api.example.com\r\n\r\n", 403,
             "http_request_denied", "cleartext-http"),
            ("two hosts", "GET http://a.example/ HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400, "http_request_error", "bad-request"),
            ("to the proxy", "GET / HTTP/1.1\r\nHost: x\r\n\r\n", 400, "http_request_error", "not-a-proxy-request"),
            ("authority form", "GET 127.0.0.1:443 HTTP/1.1\r\nHost: x\r\n\r\n", 405, "http_request_error", "method-not-allowed"),
            ("slow head", "GET http://a.example/ HTTP/1.1\r\n", 408, "http_request_error", "request-timeout"),
            ("long target", "GET http://a.example/\(long) HTTP/1.1\r\nHost: a\r\n\r\n", 414, "http_request_error", "bad-request"),
            ("big head", "GET http://a.example/ HTTP/1.1\r\nHost: a\r\nX-Big: \(String(repeating: "b", count: 17000))\r\n\r\n",
             431, "http_request_error", "bad-request"),
            ("coding", "POST http://a.example/ HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: sideways, chunked\r\n\r\n", 501,
             "http_request_error", "bad-request"),
            ("version", "GET http://a.example/ HTTP/2.0\r\nHost: a\r\n\r\n", 505, "http_request_error", "bad-request"),
            ("loop", "GET http://127.0.0.1:\(daemon.port)/ HTTP/1.1\r\nHost: x\r\n\r\n", 508, "proxy_loop_detected", "loop-detected"),
            ("refused", "CONNECT 127.0.0.1:\(closed) HTTP/1.1\r\n\r\n", 502, "connection_refused", "upstream-refused"),
            ("denied destination", "CONNECT 127.0.0.9:443 HTTP/1.1\r\n\r\n", 403, "destination_ip_prohibited",
             "destination-not-allowed"),
            // The proxy's own port rule: no ATS rule in its details, none in its record.
            ("port", "CONNECT a.example:8443 HTTP/1.1\r\n\r\n", 403, "http_request_denied", "port-not-allowed"),
            ("nxdomain", "CONNECT nx.test:443 HTTP/1.1\r\n\r\n", 502, "dns_error", "dns-nxdomain"),
            ("nodata", "CONNECT nodata.test:443 HTTP/1.1\r\n\r\n", 502, "dns_error", "dns-nxdomain"),
            ("servfail", "CONNECT fail.test:443 HTTP/1.1\r\n\r\n", 502, "dns_error", "dns-failure"),
            ("dns timeout", "CONNECT silent.test:443 HTTP/1.1\r\n\r\n", 504, "dns_timeout", "dns-timeout"),
        ]
        let responses = try cases.map { try Self.ask(daemon, $0.1) }
        let members = try StructuredFieldParser.proxyStatus(of: responses)
        let records = try daemon.stop(expected: cases.count).records
        for ((label, _, status, error, reason), (response, member)) in zip(cases, zip(responses, members)) {
            #expect(response.hasPrefix("HTTP/1.1 \(status) "), "\(label): \(response)")
            let record = try #require(records.first { $0["reason"] as? String == reason && $0["status"] as? Int == status },
                                      "\(label): no \(reason) record")
            // An ATS reason's details name the rule the record names; the proxy's own reasons none.
            let details = reason == "cleartext-http" ? "\(reason) \(try #require(record["rule"] as? String))" : reason
            Self.expect(member, error: error, details: details)
            if reason == "port-not-allowed" { #expect(record["rule"] == nil, "no ATS rule refused it: \(record)") }
        }
        #expect(members[0].string("details")?.hasPrefix("cleartext-http R1") == true, "\(members[0])")
        #expect(members[13].string("rcode") == "NXDOMAIN", "\(members[13])")
        #expect(members[14].string("rcode") == "NOERROR", "a name without an address: \(members[14])")
        // c-ares reports a resolver that answered SERVFAIL as "no server gave an answer", without its
        // code: no rcode is better than a guessed one. No answer at all has none either.
        #expect(members[15].parameters["rcode"] == nil, "\(members[15])")
        #expect(members[16].parameters["rcode"] == nil, "no answer, no rcode")
    }

    @Test func theProxysOwnDocumentsAndTheConnect200SayWhoAnswered() throws {
        let origin = try Origin()
        let daemon = try Daemon(["--connect-port", "\(origin.httpPort)"])
        let pac = try Self.ask(daemon, "GET /proxy.pac HTTP/1.1\r\nHost: 127.0.0.1:\(daemon.port)\r\n\r\n")
        let tunnel = try RawClient(port: daemon.port)
        tunnel.send("CONNECT 127.0.0.1:\(origin.httpPort) HTTP/1.1\r\n\r\n")
        let established = tunnel.read(until: "\r\n\r\n")
        tunnel.close()
        let passed = try Subprocess.curl(["-x", daemon.proxy, "-D", "-", "-o", "/dev/null", "http://127.0.0.1:\(origin.httpPort)/small"])
        let members = try StructuredFieldParser.proxyStatus(of: [pac, established])
        #expect(pac.hasPrefix("HTTP/1.1 200 "), "\(pac)")
        #expect(members[0].name == "atsgate" && members[0].token("error") == "proxy_internal_response", "\(members[0])")
        #expect(members[0].parameters.keys.sorted() == ["error"], "\(members[0])")
        #expect(established.hasPrefix("HTTP/1.1 200 Connection Established\r\n"), "\(established)")
        #expect(members[1].name == "atsgate" && members[1].parameters.isEmpty, "only who answered: \(members[1])")
        #expect(!passed.stdout.lowercased().contains("proxy-status"), "the origin's answer is passed as it came: \(passed.stdout)")
        _ = try daemon.stop(expected: 2) // a tunnel closed before its first byte has no record
    }

    @Test func aRedirectA407AndAnUnroutedRequestCarryTheNameGiven() throws {
        let directory = try TemporaryDirectory()
        let users = try directory.write("users", try DeviceLabTests.sha512Line("ann", "s3cret") + "\n")
        let redirecting = try Daemon(["--cleartext", "redirect", "--local-network", "192.0.2.0/24",
                                      "--proxy-name", "lab proxy 3"])
        let redirect = try Self.ask(redirecting, "GET http://api.example.com/x HTTP/1.1\r\nHost: api.example.com\r\n\r\n")
        let locked = try Daemon(["--auth-file", users, "--proxy-name", "lab-3"])
        let challenge = try Self.ask(locked, "GET http://a.example/ HTTP/1.1\r\nHost: a\r\n\r\n")
        let unrouted = try Daemon(["--policy", "app=" + (try directory.write("app.json", "{}")), "--route", "port:1=app",
                                   "--unrouted", "block"])
        let refused = try Self.ask(unrouted, "GET http://a.example/ HTTP/1.1\r\nHost: a\r\n\r\n")
        let members = try StructuredFieldParser.proxyStatus(of: [redirect, challenge, refused])
        #expect(redirect.hasPrefix("HTTP/1.1 308 "), "\(redirect)")
        #expect(members[0].name == "lab proxy 3" && members[0].nameType == "string", "a name that is no token: \(members[0])")
        #expect(members[0].token("error") == "http_request_denied")
        // A redirect is the action `upgrade`, not a refusal: its details say that, as its record does.
        #expect(members[0].string("details")?.hasPrefix("upgrade R") == true, "\(members[0])")
        #expect(challenge.hasPrefix("HTTP/1.1 407 "), "\(challenge)")
        Self.expect(members[1], error: "http_request_denied", details: "auth-required", name: "lab-3")
        #expect(refused.hasPrefix("HTTP/1.1 403 "), "\(refused)")
        Self.expect(members[2], error: "http_request_denied", details: "no-policy")
        for daemon in [redirecting, locked, unrouted] { _ = try daemon.stop() }
    }

    @Test func aParentsRefusalNamesTheParentAndItsStatus() throws {
        let parent = try RawOrigin(always: "HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
        let daemon = try Daemon(["--parent", "http://127.0.0.1:\(parent.port)"])
        let answer = try Self.ask(daemon, "CONNECT api.example.com:443 HTTP/1.1\r\n\r\n")
        let member = try #require(try StructuredFieldParser.proxyStatus(of: [answer]).first)
        #expect(answer.hasPrefix("HTTP/1.1 502 "), "\(answer)")
        Self.expect(member, error: "connection_refused", details: "parent-refused")
        #expect(member.integer("received-status") == 403, "\(member)")
        #expect(member.string("next-hop") == "127.0.0.1:\(parent.port)", "\(member)")
        #expect(try daemon.stop().records.first?["reason"] as? String == "parent-refused")
    }

    @Test func theTLSListenersCleartext400SaysSoToo() throws {
        let listener = try TLSListenerTests.Listener()
        let client = try RawClient(port: listener.tlsPort)
        client.send("GET http://a.example/ HTTP/1.1\r\nHost: a\r\n\r\n")
        let answer = client.readAll()
        let member = try #require(try StructuredFieldParser.proxyStatus(of: [answer]).first)
        #expect(answer.hasPrefix("HTTP/1.1 400 "), "\(answer)")
        Self.expect(member, error: "http_request_error", details: "bad-request")
        _ = try listener.daemon.stop()
    }

    @Test func aProxyNameThatCannotBeAMemberIsRefusedAtStart() throws {
        for name in ["caf\u{e9}", "tab\there", ""] {
            let run = try Atsgate.run(["run", "--listen", "127.0.0.1:0", "--proxy-name", name])
            #expect(run.status == 2, "\(name): \(run.status) \(run.stderr)")
            #expect(run.stderr.contains("--proxy-name"), "\(run.stderr)")
        }
    }
}
