import Foundation
import Glibc
import Testing
import TestSupport

/// The transparent gate end to end (issue 30): a lab device with no proxy setting behind the shipped
/// nftables ruleset (deploy/gateway/atsgate-gateway.nft) reaches its origins only through atsgate, and
/// every connection it makes (TCP and QUIC) is judged by the proxy path's rules and recorded with its
/// path and original destination. Real clients: curl, headless Chromium, aioquic. Each test builds its
/// own lab (GatewayBench) and takes a few seconds.
@Suite(.serialized) struct TransparentGateTests {
    @Test func tlsFromADeviceWithNoProxySettingIsJudgedAsACONNECTToItsServerName() throws {
        let bench = try GatewayBench()
        let good = try bench.curl(["https://good.test/"])
        #expect(good.status == 0 && good.stdout.contains("lab origin: GET / HTTP/1.1 host=good.test served=good"), "\(good.stderr)")
        // TLS 1.0 only: refused at the ServerHello with the CONNECT path's alert.
        let old = try bench.curl(["--tlsv1.0", "--ciphers", "DEFAULT:@SECLEVEL=0", "https://tls10.test/"])
        #expect(old.status != 0 && old.stderr.contains("alert protocol version"), "\(old.stderr)")
        // The certificate names another host.
        let wrong = try bench.curl(["--insecure", "https://wrong.test/"])
        #expect(wrong.status != 0, "\(wrong.stdout)")
        // IPv6, and no server name at all (curl sends none for an address): the address is the host.
        let v6 = try bench.curl(["-6", "https://[\(GatewayBench.goodV6)]/"])
        #expect(v6.status == 0 && v6.stdout.contains("host=[\(GatewayBench.goodV6)]"), "\(v6.stderr)")

        let records = try bench.records(atLeast: 4)
        let byHost = Dictionary(records.map { ($0["host"] as? String ?? "-", $0) }, uniquingKeysWith: { first, _ in first })
        let allowed = try #require(byHost["good.test"])
        #expect(allowed["path"] as? String == "transparent")
        #expect(allowed["original_dst"] as? String == "\(GatewayBench.good):443")
        #expect(allowed["sni"] as? String == "good.test")
        #expect(allowed["action"] as? String == "allow" && allowed["reason"] is NSNull)
        #expect(allowed["tls_version"] as? String == "TLSv1.3")
        #expect(allowed["upstream_ip"] as? String == GatewayBench.good, "the original address, never another")
        #expect(allowed["device"] as? String == "phone" && allowed["client"] as? String != nil)
        #expect(allowed["method"] as? String == "-" && allowed["scheme"] as? String == "https" && allowed["port"] as? Int == 443)
        let refused = try #require(byHost["tls10.test"])
        #expect(refused["action"] as? String == "block" && refused["reason"] as? String == "tls-version", "\(refused)")
        #expect(refused["path"] as? String == "transparent" && refused["original_dst"] as? String == "\(GatewayBench.tls10):443")
        let misnamed = try #require(byHost["wrong.test"])
        #expect(misnamed["action"] as? String == "block" && misnamed["reason"] as? String == "certificate-hostname", "\(misnamed)")
        let address = try #require(byHost[GatewayBench.goodV6])
        #expect(address["class"] as? String == "ip" && address["sni"] == nil)
        #expect(address["original_dst"] as? String == "[\(GatewayBench.goodV6)]:443" && address["action"] as? String == "allow")
    }

    @Test func plainHTTPGetsTheProxyPathsAnswersAndIsForwardedToItsOriginalDestination() throws {
        let files = try TemporaryDirectory()
        let policy = try files.write("policy.json", """
            {"NSExceptionDomains": {"allowed.test": {"NSExceptionAllowsInsecureHTTPLoads": true}}}
            """)
        let bench = try GatewayBench(["--policy", "lab=\(policy)", "--head-timeout", "2"])
        // Blocked: the proxy path's 403, with its headers.
        let blocked = try bench.curl(["--include", "http://plain.test/page"])
        #expect(blocked.stdout.hasPrefix("HTTP/1.1 403 "), "\(blocked.stdout)\(blocked.stderr)")
        #expect(blocked.stdout.contains("X-ATS-Reason: cleartext-http"))
        // Allowed by the app's exception: forwarded to the address the device was going to, its Host
        // kept, although the gateway's resolver does not know the name.
        let allowed = try bench.curl(["--include", "--resolve", "allowed.test:80:\(GatewayBench.good)", "http://allowed.test/x?y=1"])
        #expect(allowed.stdout.contains("lab origin: GET /x?y=1 HTTP/1.1 host=allowed.test served=http"), "\(allowed.stdout)\(allowed.stderr)")
        // Two requests on one kept-alive connection: both judged.
        let two = try bench.curl(["--resolve", "allowed.test:80:\(GatewayBench.good)", "http://allowed.test/1", "http://allowed.test/2"])
        #expect(two.stdout.contains("GET /1 ") && two.stdout.contains("GET /2 "), "\(two.stdout)\(two.stderr)")
        let records = try bench.records(atLeast: 4)
        let block = try #require(records.first { $0["host"] as? String == "plain.test" })
        #expect(block["action"] as? String == "block" && block["reason"] as? String == "cleartext-http" && block["status"] as? Int == 403)
        #expect(block["path"] as? String == "transparent" && block["original_dst"] as? String == "\(GatewayBench.good):80")
        #expect(block["app"] as? String == "lab" && block["method"] as? String == "GET")
        let forwarded = records.filter { $0["host"] as? String == "allowed.test" }
        #expect(forwarded.count == 3)
        #expect(forwarded.allSatisfy { $0["action"] as? String == "allow" && $0["upstream_ip"] as? String == GatewayBench.good
                                       && $0["path"] as? String == "transparent" && $0["status"] as? Int == 200 })
        #expect(forwarded.allSatisfy { $0["user_agent"] as? String != nil }, "HTTP carries a User-Agent, so agent routes apply")
    }

    @Test func underCleartextRedirectPlainHTTPGetsThe308() throws {
        let bench = try GatewayBench(["--cleartext", "redirect"])
        let redirected = try bench.curl(["--include", "http://plain.test/page?q=1"])
        #expect(redirected.stdout.hasPrefix("HTTP/1.1 308 "), "\(redirected.stdout)\(redirected.stderr)")
        #expect(redirected.stdout.contains("Location: https://plain.test/page?q=1\r\n"))
        // Followed, the https URL is the transparent TLS path.
        let followed = try bench.curl(["--location", "--resolve", "plain.test:443:\(GatewayBench.good)", "http://plain.test/"])
        #expect(followed.status != 0 || followed.stdout.contains("served=good"), "\(followed.stderr)")
        let record = try #require(try bench.records(atLeast: 1).first)
        #expect(record["action"] as? String == "upgrade" && record["status"] as? Int == 308 && record["path"] as? String == "transparent")
    }
}
