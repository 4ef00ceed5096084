import Foundation
import Testing
import TestSupport

/// `atsgate diagnose` against real `openssl s_server` origins: PASS/FAIL per configuration, exit codes.
@Suite(.serialized) struct DiagnoseCommandTests {
    /// Runs diagnose for https://tls.test:PORT/ pinned to loopback, trusting the origin's certificate.
    static func diagnose(_ origin: TLSOrigin, trust: Bool = true, _ extra: [String] = []) throws -> AtsgateRun {
        let trustArguments = trust ? ["--ca-file", origin.directory.url.appendingPathComponent("cert.pem").path] : []
        return try Atsgate.run(["diagnose", "--resolve", "tls.test=127.0.0.1"] + trustArguments + extra
                               + ["https://tls.test:\(origin.port)/"])
    }

    /// test name -> "PASS" / "FAIL reason" from JSON output.
    static func results(_ run: AtsgateRun) throws -> [String: String] {
        var results: [String: String] = [:]
        for object in try run.jsonLines() {
            let test = try #require(object["test"] as? String)
            let result = try #require(object["result"] as? String)
            results[test] = result == "PASS" ? "PASS" : "FAIL \(object["reason"] as? String ?? "?")"
        }
        return results
    }

    static let matrix = [
        "ATS Default Connection", "Allow All Loads", "TLSv1.3", "TLSv1.2", "TLSv1.1", "TLSv1.0",
        "Disabling Perfect Forward Secrecy", "Disabling Perfect Forward Secrecy and Allowing Insecure HTTP",
        "TLSv1.3 with PFS disabled", "TLSv1.2 with PFS disabled", "TLSv1.1 with PFS disabled",
        "TLSv1.0 with PFS disabled",
        "TLSv1.3 with PFS disabled and insecure HTTP allowed", "TLSv1.2 with PFS disabled and insecure HTTP allowed",
        "TLSv1.1 with PFS disabled and insecure HTTP allowed", "TLSv1.0 with PFS disabled and insecure HTTP allowed",
    ]

    @Test func strongServerPassesEveryTestInNscurlOrder() throws {
        let origin = try TLSOrigin()
        let run = try Self.diagnose(origin)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("ATS Default Connection\nATS Dictionary:\n{\n}\nResult : PASS\n"))
        #expect(run.stdout.contains("16 of 16 tests passed; the default ATS configuration passes."))
        // nscurl's order, each test once.
        let names = run.stdout.split(separator: "\n").map(String.init).filter(Self.matrix.contains)
        #expect(names == Self.matrix)

        let json = try Self.diagnose(origin, ["--format", "json"])
        #expect(json.status == 0)
        let objects = try json.jsonLines()
        #expect(objects.map { $0["test"] as? String } == Self.matrix)
        #expect(objects.allSatisfy { $0["result"] as? String == "PASS" })
        let first = try #require(objects.first)
        #expect(first["tls_version"] as? String == "TLSv1.3")
        #expect((first["cipher"] as? String)?.hasPrefix("TLS_") == true)
        #expect(first["reason"] is NSNull)
        let certificate = try #require(first["certificate"] as? [String: Any])
        #expect(certificate["subject"] as? String == "CN=tls.test")
        #expect(certificate["issuer"] as? String == "CN=tls.test")
        #expect(certificate["key"] as? String == "RSA-2048")
        #expect(certificate["signature"] as? String == "sha256WithRSAEncryption")
    }

    @Test func tls10ServerFailsTheDefaultAndPassesTheTLS10Exceptions() throws {
        let origin = try TLSOrigin(extraArguments: ["-tls1", "-cipher", "ALL:@SECLEVEL=0"])
        let run = try Self.diagnose(origin, ["--format", "json"])
        #expect(run.status == 1)
        let results = try Self.results(run)
        for test in Self.matrix {
            let passes = test == "Allow All Loads" || test.hasPrefix("TLSv1.0")
            #expect(results[test] == (passes ? "PASS" : "FAIL tls-version"), "\(test)")
        }
        let first = try #require(try run.jsonLines().first)
        #expect((first["message"] as? String)?.contains("tls.test speaks at most TLSv1.0; the requirements need TLSv1.2") == true)
        #expect(first["tls_version"] as? String == "TLSv1.0")
        #expect(first["handshake"] as? String == "unrestricted")

        let text = try Self.diagnose(origin)
        #expect(text.status == 1)
        #expect(text.stdout.contains("Result : FAIL (tls-version) tls.test speaks at most TLSv1.0"))
    }

    @Test func rsaKeyExchangeServerNeedsForwardSecrecyDisabled() throws {
        let origin = try TLSOrigin(extraArguments: ["-cipher", "AES128-SHA", "-no_tls1_3"])
        let run = try Self.diagnose(origin, ["--format", "json"])
        #expect(run.status == 1)
        let results = try Self.results(run)
        #expect(results["ATS Default Connection"] == "FAIL cipher-suite")
        #expect(results["TLSv1.2"] == "FAIL cipher-suite")
        #expect(results["TLSv1.3"] == "FAIL tls-version")
        #expect(results["Allow All Loads"] == "PASS")
        #expect(results["Disabling Perfect Forward Secrecy"] == "PASS")
        #expect(results["TLSv1.0 with PFS disabled"] == "PASS")
        #expect(results["TLSv1.3 with PFS disabled"] == "FAIL tls-version")
        let pfsOff = try #require(try run.jsonLines().first { $0["test"] as? String == "Disabling Perfect Forward Secrecy" })
        #expect(pfsOff["cipher"] as? String == "TLS_RSA_WITH_AES_128_CBC_SHA")
    }

    /// R15: an untrusted certificate fails where insecure HTTP is not allowed, and is tolerated where it is.
    @Test func untrustedCertificateIsToleratedOnlyWithInsecureHTTP() throws {
        let origin = try TLSOrigin()
        let run = try Self.diagnose(origin, trust: false, ["--format", "json"])
        #expect(run.status == 1)
        let results = try Self.results(run)
        for test in Self.matrix {
            let tolerated = test == "Allow All Loads" || test.contains("Insecure HTTP") || test.contains("insecure HTTP")
            #expect(results[test] == (tolerated ? "PASS" : "FAIL certificate-untrusted"), "\(test)")
        }
        let allowAll = try #require(try run.jsonLines().first { $0["test"] as? String == "Allow All Loads" })
        let tolerated = try #require(allowAll["tolerated"] as? [[String: Any]])
        #expect(tolerated.map { $0["reason"] as? String } == ["certificate-untrusted"])
    }

    @Test func appPolicyIsTheLastTest() throws {
        let origin = try TLSOrigin(extraArguments: ["-tls1", "-cipher", "ALL:@SECLEVEL=0"])
        let directory = try TemporaryDirectory()
        let legacy = try directory.write("legacy.json", """
            {"NSExceptionDomains": {"tls.test": {"NSExceptionMinimumTLSVersion": "TLSv1.0"}}}
            """)
        let run = try Self.diagnose(origin, ["--format", "json", "--policy", legacy])
        #expect(run.status == 1, "the default configuration still fails")
        let last = try #require(try run.jsonLines().last)
        #expect(last["test"] as? String == "App policy")
        #expect(last["result"] as? String == "PASS")
        #expect(last["tls_version"] as? String == "TLSv1.0")

        let pinned = try directory.write("pinned.json", """
            {"NSExceptionDomains": {"tls.test": {"NSExceptionMinimumTLSVersion": "TLSv1.0"}},
             "NSPinnedDomains": {"tls.test": {"NSPinnedLeafIdentities": [
                {"SPKI-SHA256-BASE64": "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}]}}}
            """)
        let pinnedRun = try Self.diagnose(origin, ["--format", "json", "--policy", pinned])
        let pinnedLast = try #require(try pinnedRun.jsonLines().last)
        #expect(pinnedLast["result"] as? String == "FAIL")
        #expect(pinnedLast["reason"] as? String == "certificate-pin")
    }

    /// http:// is judged without a server: only configurations allowing insecure HTTP pass.
    @Test func cleartextURLNeedsNoNetwork() throws {
        let run = try Atsgate.run(["diagnose", "--format", "json", "http://nothing-listens.invalid/"])
        #expect(run.status == 1)
        let results = try Self.results(run)
        for test in Self.matrix {
            let allowed = test == "Allow All Loads" || test.contains("Insecure HTTP") || test.contains("insecure HTTP")
            #expect(results[test] == (allowed ? "PASS" : "FAIL cleartext-http"), "\(test)")
        }
    }

    @Test func unreachableServerFailsWithAnUpstreamReason() throws {
        let run = try Atsgate.run(["diagnose", "--format", "json", "https://127.0.0.1:\(try freePort())/"])
        #expect(run.status == 1)
        #expect(try Self.results(run).values.allSatisfy { $0 == "FAIL upstream-refused" })
    }

    @Test(arguments: [
        (["--ca-file", "/nonexistent/ca.pem", "https://tls.test/"], "atsgate: --ca-file: CA file /nonexistent/ca.pem: no such file"),
        (["ftp://tls.test/"], "atsgate: invalid URL ftp://tls.test/: unsupported scheme 'ftp'"),
        (["--resolve", "tls.test", "https://tls.test/"], "atsgate: --resolve tls.test: expected NAME=IP"),
    ])
    func usageErrorsExitTwo(arguments: [String], message: String) throws {
        let run = try Atsgate.run(["diagnose"] + arguments)
        #expect(run.status == 2)
        #expect(run.stdout.isEmpty)
        #expect(run.stderr.hasPrefix(message), "\(run.stderr)")
    }
}
