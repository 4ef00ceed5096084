import Foundation
import Testing
import TestSupport

/// R15a, R16 and R18 end to end: `atsgate diagnose` and `diagnose --system` against real Python TLS
/// origins serving leaves of the test PKI on loopback.
@Suite(.serialized) struct AppleRulesDiagnoseTests {
    static let pki = TestPKI.shared

    /// diagnose https://localhost:PORT/ trusting the test CA; the trust store is the host's (`system`),
    /// whose bundle is the test PKI's system root (SSL_CERT_FILE), so sys-* leaves count as publicly trusted.
    static func diagnose(_ origin: TLSTestOrigin, _ extra: [String]) throws -> AtsgateRun {
        try Atsgate.run(["diagnose", "--resolve", "localhost=127.0.0.1", "--trust-store", "system",
                         "--ca-file", try pki.path("ca.pem"),
                         "--format", "json"] + extra + ["https://localhost:\(origin.port)/"],
                        environment: ["SSL_CERT_FILE": try pki.path("system-ca.pem"), "SSL_CERT_DIR": "/nonexistent"])
    }

    static func only(_ run: AtsgateRun) throws -> [String: Any] {
        let objects = try run.jsonLines()
        #expect(objects.count == 1, "--system runs one test")
        return try #require(objects.first)
    }

    // MARK: R18, diagnose --system

    @Test func aTLS12ServerWithTheExtendedMasterSecretPasses() throws {
        let origin = try TLSTestOrigin(leaf: "good-rsa", arguments: ["--max", "TLSv1_2"])
        let run = try Self.diagnose(origin, ["--system"])
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        let result = try Self.only(run)
        #expect(result["test"] as? String == "System Connection")
        #expect(result["result"] as? String == "PASS")
        #expect(result["tls_version"] as? String == "TLSv1.2")
        #expect(result["extended_master_secret"] as? Bool == true)
        #expect(result["rule"] is NSNull)
    }

    @Test func aTLS12ServerWithoutTheExtendedMasterSecretFailsR18() throws {
        let origin = try TLSTestOrigin(leaf: "good-rsa", arguments: ["--max", "TLSv1_2", "--no-ems"])
        let run = try Self.diagnose(origin, ["--system"])
        #expect(run.status == 1)
        let result = try Self.only(run)
        #expect(result["result"] as? String == "FAIL")
        #expect(result["reason"] as? String == "extended-master-secret")
        #expect(result["rule"] as? String == "R18")
        #expect(result["extended_master_secret"] as? Bool == false)
        #expect((result["message"] as? String ?? "").contains("without the extended master secret extension (RFC 7627)"))

        let text = try Self.diagnose(origin, ["--system", "--format", "text"])
        #expect(text.status == 1)
        #expect(text.stdout.hasPrefix("Starting System Connection Diagnostics\n"))
        #expect(text.stdout.contains("Result : FAIL (extended-master-secret) localhost negotiated TLSv1.2 without"))
        #expect(text.stdout.contains("Rule : R18\n"))
        #expect(text.stdout.contains("Extended master secret : no\n"))
        #expect(text.stdout.contains("does not meet Apple's requirements for system connections."))

        // The same server passes the app ATS matrix: the extended master secret is R18's alone.
        let ats = try Self.diagnose(origin, [])
        #expect(ats.status == 0, "\(ats.stdout)")
    }

    @Test func tls13NeedsNoExtendedMasterSecretExtension() throws {
        let origin = try TLSTestOrigin(leaf: "good-rsa", arguments: ["--min", "TLSv1_3", "--no-ems"])
        let run = try Self.diagnose(origin, ["--system"])
        #expect(run.status == 0, "\(run.stdout)")
        #expect(try Self.only(run)["tls_version"] as? String == "TLSv1.3")
    }

    @Test(arguments: [
        (["--max", "TLSv1_1"], "tls-version"),
        (["--max", "TLSv1_2", "--ciphers", "AES128-SHA"], "cipher-suite"),
    ])
    func versionAndSuiteFailAsR18(arguments: [String], reason: String) throws {
        let origin = try TLSTestOrigin(leaf: "good-rsa", arguments: arguments)
        let run = try Self.diagnose(origin, ["--system"])
        #expect(run.status == 1)
        let result = try Self.only(run)
        #expect(result["reason"] as? String == reason)
        #expect(result["rule"] as? String == "R18")
        #expect(!(result["message"] as? String ?? "").contains("NSException"), "no ATS key changes a system connection")
    }

    @Test(arguments: [("life-1000", "certificate-lifetime"), ("eku-client", "certificate-usage"),
                      ("no-san", "certificate-hostname"), ("sys-400", "certificate-lifetime")])
    func certificatesAreJudgedAsR15aWithNothingTolerated(leaf: String, reason: String) throws {
        let origin = try TLSTestOrigin(leaf: leaf, arguments: [])
        let run = try Self.diagnose(origin, ["--system"])
        #expect(run.status == 1)
        let result = try Self.only(run)
        #expect(result["reason"] as? String == reason)
        #expect(result["rule"] as? String == "R15a")
        #expect((result["message"] as? String ?? "").contains("R18: system connections need certificates as R15a"))
    }

    @Test(arguments: [
        (["--system", "http://localhost/"], "atsgate: --system judges TLS servers: give an https:// URL"),
        (["--system", "--policy", "/dev/null", "https://localhost/"], "--system judges a server by Apple's system connection rules"),
        (["--ct-log-list", "/nonexistent/logs.json", "https://localhost/"], "atsgate: --ct-log-list: CT log list /nonexistent/logs.json: cannot read it"),
    ])
    func usageErrorsExitTwo(arguments: [String], message: String) throws {
        let run = try Atsgate.run(["diagnose"] + arguments)
        #expect(run.status == 2)
        #expect(run.stderr.contains(message), "\(run.stderr)")
    }

    // MARK: R15a through the ATS matrix

    @Test(arguments: [
        ("life-800", nil as String?), ("life-826", "certificate-lifetime"), ("life-1000", "certificate-lifetime"),
        ("eku-client", "certificate-usage"), ("eku-none", nil), ("eku-any", nil), ("no-san", "certificate-hostname"),
        ("sys-365", nil), ("sys-400", "certificate-lifetime"),
    ])
    func appleLeafRulesInTheMatrix(leaf: String, reason: String?) throws {
        let origin = try TLSTestOrigin(leaf: leaf, arguments: [])
        let run = try Self.diagnose(origin, [])
        #expect(run.status == (reason == nil ? 0 : 1), "\(run.stdout)")
        let objects = try run.jsonLines()
        let first = try #require(objects.first)
        #expect(first["reason"] as? String == reason)
        if reason != nil {
            #expect(first["rule"] as? String == "R15a")
            // Tolerated (reported, not failed) where insecure HTTP is allowed, like every certificate finding.
            let allowAll = try #require(objects.first { $0["test"] as? String == "Allow All Loads" })
            #expect(allowAll["result"] as? String == "PASS")
            let tolerated = try #require(allowAll["tolerated"] as? [[String: Any]])
            #expect(tolerated.map { $0["reason"] as? String } == [reason])
            #expect(tolerated.map { $0["rule"] as? String } == ["R15a"])
        }
        let certificate = try #require(first["certificate"] as? [String: Any])
        #expect(certificate["anchor"] as? String == (leaf.hasPrefix("sys-") ? "system" : "operator"))
    }

    @Test func theRuleOfAVersionRefusalIsR14() throws {
        let origin = try TLSTestOrigin(leaf: "good-rsa", arguments: ["--max", "TLSv1"])
        let run = try Self.diagnose(origin, [])
        #expect(run.status == 1)
        let first = try #require(try run.jsonLines().first)
        #expect(first["reason"] as? String == "tls-version")
        #expect(first["rule"] as? String == "R14")
        let text = try Self.diagnose(origin, ["--format", "text"])
        #expect(text.stdout.contains("Result : FAIL (tls-version) localhost speaks at most TLSv1.0"))
        #expect(text.stdout.contains("Rule : R14\n"))
    }

    // MARK: R16

    @Test(arguments: [("sys-sct3", nil as String?), ("sys-sct2", "certificate-transparency"),
                      ("sys-sct2-short", nil), ("sys-365", "certificate-transparency"), ("good-rsa", nil)])
    func certificateTransparencyCountsDistinctLogs(leaf: String, reason: String?) throws {
        let origin = try TLSTestOrigin(leaf: leaf, arguments: [])
        let run = try Self.diagnose(origin, ["--certificate-transparency", "on"])
        #expect(run.status == (reason == nil ? 0 : 1), "\(run.stdout)")
        let first = try #require(try run.jsonLines().first)
        #expect(first["reason"] as? String == reason)
        if reason != nil {
            #expect(first["rule"] as? String == "R16")
            #expect((first["message"] as? String ?? "").contains("counted, not verified"))
        }
        // Off by default with the system store (it has no log list): the same server passes.
        #expect(try Self.diagnose(origin, []).status == 0)
    }

    @Test func withoutALogListTheReportSaysSCTsAreNotVerified() throws {
        let origin = try TLSTestOrigin(leaf: "sys-sct3", arguments: [])
        let run = try Self.diagnose(origin, ["--certificate-transparency", "on", "--format", "text"])
        #expect(run.stdout.contains("Certificate Transparency (R16): SCTs counted, NOT verified (no --ct-log-list).\n"))
    }
}

/// R16 with Apple's log list: SCTs in the TLS extension signed by test logs (Fixtures/make-scts.py),
/// served by `openssl s_server -serverinfo`, verified against the list.
@Suite(.serialized) struct CertificateTransparencyLogListTests {
    static let pki = TestPKI.shared

    /// Three SCTs over sys-365 from three test logs, and the log lists: made once, then only read.
    nonisolated(unsafe) static let scts: Result<TemporaryDirectory, HarnessError> = {
        do {
            let directory = try TemporaryDirectory()
            let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent("Fixtures/make-scts.py").path
            let run = try Subprocess.run(Origin.python, [script, directory.url.path, try pki.path("sys-365.pem"), "3"])
            guard run.status == 0 else { return .failure(HarnessError("make-scts.py: \(run.stderr)")) }
            return .success(directory)
        } catch {
            return .failure(HarnessError("make-scts.py: \(error)"))
        }
    }()

    static func file(_ name: String) throws -> String { try scts.get().url.appendingPathComponent(name).path }

    static func diagnose(port: Int, _ extra: [String]) throws -> [String: Any] {
        let run = try Atsgate.run(["diagnose", "--resolve", "localhost=127.0.0.1", "--format", "json", "--trust-store",
                                   "system", "--certificate-transparency", "on"] + extra + ["https://localhost:\(port)/"],
                                  environment: ["SSL_CERT_FILE": try pki.path("system-ca.pem"),
                                                "SSL_CERT_DIR": "/nonexistent"])
        return try #require(try run.jsonLines().first, "\(run.stderr)")
    }

    @Test func signedSCTsInTheTLSExtensionAreCountedAndVerified() throws {
        let server = try OpenSSLTestServer(leaf: "sys-365", arguments: ["-tls1_2", "-serverinfo", try Self.file("scts.serverinfo")])
        let counted = try Self.diagnose(port: server.port, [])
        #expect(counted["result"] as? String == "PASS", "\(counted)")
        #expect((counted["certificate"] as? [String: Any])?["scts"] as? Int == 3)

        let verified = try Self.diagnose(port: server.port, ["--ct-log-list", try Self.file("log-list.json")])
        #expect(verified["result"] as? String == "PASS", "\(verified)")

        // One log missing from the list: its SCT does not verify, two logs are not enough above 180 days.
        let short = try Self.diagnose(port: server.port, ["--ct-log-list", try Self.file("log-list-short.json")])
        #expect(short["reason"] as? String == "certificate-transparency")
        #expect(short["rule"] as? String == "R16")
        #expect((short["message"] as? String ?? "").contains("SCTs from 2 distinct logs (3 tls-extension), 1 failing verification"),
                "\(short["message"] ?? "")")
    }

    @Test func madeUpEmbeddedSCTsCountButDoNotVerify() throws {
        let origin = try TLSTestOrigin(leaf: "sys-sct3", arguments: [])
        #expect(try Self.diagnose(port: origin.port, [])["result"] as? String == "PASS")
        let verified = try Self.diagnose(port: origin.port, ["--ct-log-list", try Self.file("log-list.json")])
        #expect(verified["reason"] as? String == "certificate-transparency")
        #expect((verified["message"] as? String ?? "").contains("3 failing verification"), "\(verified["message"] ?? "")")
    }
}
