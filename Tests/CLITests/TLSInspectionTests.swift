import Foundation
import Glibc
import Testing
import TestSupport

/// TLS enforcement end to end (ATS-SPEC R13-R17): real curl and openssl clients through the daemon,
/// which watches the handshake; real TLS origins with the test PKI; `curl -k`, so the proxy is the
/// judge. 127.0.0.1 is made an external IP (`--local-network` elsewhere), so full ATS applies to it.
@Suite(.serialized) struct TLSInspectionTests {
    static let pki = TestPKI.shared

    /// A daemon trusting the test CA, with 127.0.0.1 under full ATS, CONNECT allowed to `port`.
    static func daemon(port: Int, policy: String? = nil, _ extra: [String] = []) throws -> (Daemon, TemporaryDirectory) {
        let directory = try TemporaryDirectory()
        var arguments = ["--local-network", "192.0.2.0/24", "--ca-file", try pki.path("ca.pem"),
                         "--connect-port", "\(port)"] + extra
        if let policy { arguments += ["--policy", try directory.write("policy.json", policy)] }
        return (try Daemon(arguments), directory)
    }

    /// curl through the proxy with CONNECT (-p), accepting any certificate itself (-k); TLS 1.0 allowed.
    static func curl(_ daemon: Daemon, _ url: String, _ extra: [String] = []) throws -> AtsgateRun {
        try Subprocess.curl(["-k", "-p", "-x", daemon.proxy, "--tlsv1.0", "--ciphers", "DEFAULT:@SECLEVEL=0"] + extra + [url])
    }

    static func exception(_ entry: String) -> String {
        #"{"NSExceptionDomains": {"127.0.0.1": \#(entry)}}"#
    }

    // MARK: version and cipher (R14), on the ServerHello

    @Test(arguments: ["TLSv1_2", "TLSv1_3"])
    func aStrongServerPasses(version: String) throws {
        let origin = try TLSTestOrigin(leaf: "good-rsa", arguments: ["--min", version, "--max", version])
        let (daemon, _) = try Self.daemon(port: origin.port)
        let run = try Self.curl(daemon, "https://127.0.0.1:\(origin.port)/")
        #expect(run.stdout == "ok from tls_origin\n", "\(run.stderr)")
        let (_, records) = try daemon.stop()
        let record = try #require(records.first)
        #expect(record["action"] as? String == "allow")
        #expect(record["tls_version"] as? String == version.replacingOccurrences(of: "_", with: "."))
        #expect((record["cipher"] as? String ?? "").hasPrefix("TLS_"))
        #expect((record["cert_subject"] as? String ?? "").contains("localhost"))
        #expect((record["cert_issuer"] as? String ?? "").contains("atsgate Test Intermediate CA"))
        #expect(record["cert_key"] as? String == "RSA-2048")
        #expect((record["bytes_down"] as? Int ?? 0) > 1000, "the handshake and the answer went down")
    }

    @Test func aHelloRetryRequestReachesTheClientAndTheRealServerHelloIsJudged() throws {
        // The server accepts only P-384; curl offers an X25519 key share first, so the server asks
        // again (HelloRetryRequest) before its real ServerHello.
        let origin = try TLSTestOrigin(leaf: "good-rsa", arguments: ["--min", "TLSv1_3", "--curve", "secp384r1"])
        let (daemon, _) = try Self.daemon(port: origin.port)
        let run = try Self.curl(daemon, "https://127.0.0.1:\(origin.port)/")
        #expect(run.stdout == "ok from tls_origin\n", "\(run.stderr)")
        let (_, records) = try daemon.stop()
        #expect(records.first?["action"] as? String == "allow")
        #expect(records.first?["tls_version"] as? String == "TLSv1.3")
    }

    @Test func anOpenSSLServerWithAnECDSACertificatePasses() throws {
        let origin = try OpenSSLTestServer(leaf: "good-ec", arguments: ["-tls1_2"])
        let (daemon, _) = try Self.daemon(port: origin.port)
        let run = try Self.curl(daemon, "https://127.0.0.1:\(origin.port)/")
        #expect(run.status == 0, "\(run.stderr)")
        let (_, records) = try daemon.stop()
        let record = try #require(records.first)
        #expect(record["action"] as? String == "allow")
        #expect((record["cipher"] as? String ?? "").hasPrefix("TLS_ECDHE_ECDSA_"))
        #expect(record["cert_key"] as? String == "EC-P-256")
    }

    @Test func tls10IsRefusedWithAProtocolVersionAlertUnlessAnExceptionAllowsIt() throws {
        let origin = try TLSTestOrigin(leaf: "good-rsa", arguments: ["--max", "TLSv1"])
        let (daemon, _) = try Self.daemon(port: origin.port)
        let run = try Self.curl(daemon, "https://127.0.0.1:\(origin.port)/")
        #expect(run.status != 0)
        #expect(run.stderr.contains("alert protocol version"), "the client hears why: \(run.stderr)")
        let (_, records) = try daemon.stop()
        let record = try #require(records.first)
        #expect(record["action"] as? String == "block")
        #expect(record["reason"] as? String == "tls-version")
        #expect(record["rule"] as? String == "R14", "a TLS-level refusal names its rule, not the policy lookup's")
        #expect(record["tls_version"] as? String == "TLSv1.0")
        #expect((record["message"] as? String ?? "").contains("NSExceptionMinimumTLSVersion=TLSv1.0"))

        let (allowed, _) = try Self.daemon(port: origin.port, policy: Self.exception(#"{"NSExceptionMinimumTLSVersion": "TLSv1.0"}"#))
        #expect(try Self.curl(allowed, "https://127.0.0.1:\(origin.port)/").stdout == "ok from tls_origin\n")
        #expect(try allowed.stop().records.first?["action"] as? String == "allow")
    }

    @Test func rsaKeyExchangeIsRefusedUnlessForwardSecrecyIsNotRequired() throws {
        let origin = try TLSTestOrigin(leaf: "good-rsa", arguments: ["--max", "TLSv1_2", "--ciphers", "AES128-SHA"])
        let (daemon, _) = try Self.daemon(port: origin.port)
        let run = try Self.curl(daemon, "https://127.0.0.1:\(origin.port)/")
        #expect(run.stderr.contains("alert insufficient security"), "\(run.stderr)")
        let (_, records) = try daemon.stop()
        #expect(records.first?["reason"] as? String == "cipher-suite")
        #expect(records.first?["rule"] as? String == "R14")
        #expect(records.first?["cipher"] as? String == "TLS_RSA_WITH_AES_128_CBC_SHA")

        let (allowed, _) = try Self.daemon(port: origin.port,
                                           policy: Self.exception(#"{"NSExceptionRequiresForwardSecrecy": false}"#))
        #expect(try Self.curl(allowed, "https://127.0.0.1:\(origin.port)/").stdout == "ok from tls_origin\n")
        _ = try allowed.stop()
    }

    // MARK: certificates (R15), on the wire (TLS 1.2) and by probe (TLS 1.3)

    static let weakLeaves: [(leaf: String, reason: String)] = [
        ("expired", "certificate-expired"), ("wrong-name", "certificate-hostname"),
        ("rsa1024", "certificate-key-size"), ("sha1", "certificate-signature-hash"),
        ("self-signed", "certificate-untrusted"),
    ]

    @Test(arguments: ["TLSv1_2", "TLSv1_3"])
    func eachWeakCertificateIsRefusedWithItsReason(version: String) throws {
        for (leaf, reason) in Self.weakLeaves {
            let origin = try TLSTestOrigin(leaf: leaf, arguments: ["--min", version, "--max", version])
            let (daemon, _) = try Self.daemon(port: origin.port)
            let run = try Self.curl(daemon, "https://127.0.0.1:\(origin.port)/")
            #expect(run.status != 0, "\(leaf) over \(version) got through")
            let (_, records) = try daemon.stop()
            let record = try #require(records.first)
            #expect(record["action"] as? String == "block", "\(leaf) \(version)")
            #expect(record["reason"] as? String == reason, "\(leaf) \(version): \(record["message"] ?? "")")
            #expect(record["rule"] as? String == "R15", "\(leaf) \(version)")
            #expect(record["cert_subject"] != nil, "\(leaf): the certificate is named in the log")
        }
    }

    @Test(arguments: ["TLSv1_2", "TLSv1_3"])
    func aHostThatAllowsCleartextToleratesAWeakCertificateAndLogsIt(version: String) throws {
        let origin = try TLSTestOrigin(leaf: "expired", arguments: ["--min", version, "--max", version])
        let (daemon, _) = try Self.daemon(port: origin.port,
                                          policy: Self.exception(#"{"NSExceptionAllowsInsecureHTTPLoads": true}"#))
        #expect(try Self.curl(daemon, "https://127.0.0.1:\(origin.port)/").stdout == "ok from tls_origin\n")
        let (_, records) = try daemon.stop()
        let record = try #require(records.first)
        #expect(record["action"] as? String == "allow")
        #expect(record["cert_tolerated"] as? [String] == ["certificate-expired"], "\(record)")
        #expect((record["message"] as? String ?? "").contains("tolerated"))
    }

    @Test func aProbeThatCannotReachTheServerIsTheOriginsFailureNotABlock() throws {
        // s_server takes one connection at a time: the client's TLS 1.3 handshake holds it, so the
        // proxy's own probe of the certificate waits until its timeout.
        let origin = try OpenSSLTestServer(leaf: "good-rsa", arguments: ["-tls1_3"])
        let (daemon, _) = try Self.daemon(port: origin.port, ["--connect-timeout", "1"])
        let run = try Self.curl(daemon, "https://127.0.0.1:\(origin.port)/", ["--max-time", "20"])
        #expect(run.status != 0, "the tunnel is refused when its certificate cannot be judged")
        let record = try #require(try daemon.stop().records.first)
        #expect(record["reason"] as? String == "upstream-tls", "\(record)")
        #expect(record["action"] as? String == "error", "a failure of the way to the origin, as the README lists it")
    }

    @Test func aCachedVerdictAnswersTheSecondTunnel() throws {
        let origin = try TLSTestOrigin(leaf: "good-rsa", arguments: ["--min", "TLSv1_3"])
        let (daemon, _) = try Self.daemon(port: origin.port, ["--admin", "127.0.0.1:0"])
        for _ in 0..<2 {
            #expect(try Self.curl(daemon, "https://127.0.0.1:\(origin.port)/").stdout == "ok from tls_origin\n")
        }
        try daemon.waitForRecords(2)
        let metrics = try daemon.admin("/metrics")
        #expect(metrics.contains("atsgate_probe_cache_total{result=\"hit\"} 1\n"), "\(metrics)")
        #expect(metrics.contains("atsgate_probe_cache_total{result=\"miss\"} 1\n"))
        _ = try daemon.stop(expected: 2)
    }

    @Test func parallelModeLetsTheFirstHandshakeGoOnAndRefusesOnceTheVerdictIsKnown() throws {
        let origin = try TLSTestOrigin(leaf: "self-signed", arguments: ["--max", "TLSv1_2"])
        let (daemon, _) = try Self.daemon(port: origin.port, ["--certificate-check", "parallel"])
        _ = try Self.curl(daemon, "https://127.0.0.1:\(origin.port)/")
        // The first record is written once the verdict is known, so the second tunnel finds it cached.
        try daemon.waitForRecords(1)
        let second = try Self.curl(daemon, "https://127.0.0.1:\(origin.port)/")
        #expect(second.stderr.contains("alert insufficient security"), "\(second.stderr)")
        let (_, records) = try daemon.stop(expected: 2)
        #expect(records.contains { ($0["message"] as? String ?? "").contains("does not lead to a trusted root") })
        #expect(records.last?["reason"] as? String == "certificate-untrusted")
        #expect(records.last?["action"] as? String == "block")
    }

    @Test func certificateChecksOffLetsAnExpiredCertificateThroughButNotTLS10() throws {
        let expired = try TLSTestOrigin(leaf: "expired", arguments: ["--max", "TLSv1_2"])
        let (daemon, _) = try Self.daemon(port: expired.port, ["--certificate-check", "off"])
        #expect(try Self.curl(daemon, "https://127.0.0.1:\(expired.port)/").stdout == "ok from tls_origin\n")
        _ = try daemon.stop()

        let tls10 = try TLSTestOrigin(leaf: "good-rsa", arguments: ["--max", "TLSv1"])
        let (strict, _) = try Self.daemon(port: tls10.port, ["--certificate-check", "off"])
        #expect(try Self.curl(strict, "https://127.0.0.1:\(tls10.port)/").status != 0)
        #expect(try strict.stop().records.first?["reason"] as? String == "tls-version")
    }

    @Test func reportModeLogsTheRefusalAndLetsTheHandshakeThrough() throws {
        let origin = try TLSTestOrigin(leaf: "good-rsa", arguments: ["--max", "TLSv1"])
        let (daemon, _) = try Self.daemon(port: origin.port, ["--mode", "report"])
        #expect(try Self.curl(daemon, "https://127.0.0.1:\(origin.port)/").stdout == "ok from tls_origin\n")
        let (_, records) = try daemon.stop()
        let record = try #require(records.first)
        #expect(record["reason"] as? String == "tls-version")
        #expect(record["rule"] as? String == "R14", "a TLS-level refusal names its rule, not the policy lookup's")
        #expect(record["enforced"] as? Bool == false)
    }

    // MARK: pins (R17) and SNI

    @Test func pinsAreEnforcedForAPinnedName() throws {
        let origin = try TLSTestOrigin(leaf: "good-rsa", arguments: [])
        let spki = try Self.pki.spkiHash("good-rsa.pem")
        let right = #"{"NSPinnedDomains": {"localhost": {"NSPinnedLeafIdentities": [{"SPKI-SHA256-BASE64": "\#(spki)"}]}}}"#
        let wrong = #"{"NSPinnedDomains": {"localhost": {"NSPinnedLeafIdentities": [{"SPKI-SHA256-BASE64": "\#(String(repeating: "A", count: 43))="}]}}}"#
        for (policy, expected) in [(right, "allow"), (wrong, "block")] {
            let (daemon, _) = try Self.daemon(port: origin.port, policy: policy)
            _ = try Self.curl(daemon, "https://localhost:\(origin.port)/")
            let (_, records) = try daemon.stop()
            #expect(records.first?["action"] as? String == expected)
            if expected == "block" { #expect(records.first?["reason"] as? String == "certificate-pin") }
        }
    }

    @Test func aServerNameOtherThanTheConnectHostIsRefused() throws {
        let origin = try TLSTestOrigin(leaf: "good-rsa", arguments: [])
        let (daemon, _) = try Self.daemon(port: origin.port)
        let run = try Subprocess.run("/usr/bin/openssl", ["s_client", "-proxy", "127.0.0.1:\(daemon.port)",
            "-connect", "127.0.0.1:\(origin.port)", "-servername", "elsewhere.example"], stdin: "")
        #expect(run.status != 0)
        let (_, records) = try daemon.stop()
        let record = try #require(records.first)
        #expect(record["reason"] as? String == "sni-mismatch")
        #expect(record["sni"] as? String == "elsewhere.example")
    }

    // MARK: upgrade (--cleartext upgrade)

    @Test func upgradeCarriesAPlainRequestOverTLS() throws {
        let origin = try TLSTestOrigin(leaf: "good-rsa", arguments: [])
        let (daemon, _) = try Self.daemon(port: origin.port, ["--cleartext", "upgrade", "--upgrade-port", "8080=\(origin.port)"])
        let run = try Subprocess.curl(["-x", daemon.proxy, "http://127.0.0.1:8080/"])
        #expect(run.stdout == "ok from tls_origin\n", "\(run.stderr)")
        let (_, records) = try daemon.stop()
        let record = try #require(records.first)
        #expect(record["action"] as? String == "upgrade")
        #expect(record["tls_version"] as? String == "TLSv1.3")
        #expect(record["upstream_ip"] as? String == "127.0.0.1")
    }

    @Test(arguments: [("expired", ["--max", "TLSv1_3"], "certificate-expired"), ("good-rsa", ["--max", "TLSv1"], "tls-version")])
    func aServerThatFailsTheRequirementsGets502OnUpgrade(leaf: String, arguments: [String], reason: String) throws {
        let origin = try TLSTestOrigin(leaf: leaf, arguments: arguments)
        let (daemon, _) = try Self.daemon(port: origin.port, ["--cleartext", "upgrade", "--upgrade-port", "8080=\(origin.port)"])
        let run = try Subprocess.curl(["-x", daemon.proxy, "-D", "-", "http://127.0.0.1:8080/"])
        #expect(run.stdout.hasPrefix("HTTP/1.1 502"), "\(run.stdout)")
        #expect(run.stdout.contains("X-ATS-Reason: \(reason)\r\n"))
        let (_, records) = try daemon.stop()
        #expect(records.first?["reason"] as? String == reason)
    }
}

/// The test PKI of Tests/Fixtures/make-pki.sh, made once per test run.
final class TestPKI: Sendable {
    static let shared = TestPKI()
    let directory: String
    let failure: String?

    private init() {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/make-pki.sh").path
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("atsgate-pki-\(getpid())").path
        self.directory = directory
        let run = try? Subprocess.run("/bin/sh", [script, directory], timeout: 120)
        failure = run?.status == 0 ? nil : "make-pki.sh failed: \(run?.stderr ?? "did not run")"
    }

    func path(_ name: String) throws -> String {
        if let failure { throw HarnessError(failure) }
        return directory + "/" + name
    }

    /// The SPKI SHA-256 pin of a certificate, as NSPinnedDomains spells it.
    func spkiHash(_ certificate: String) throws -> String {
        let pem = try path(certificate)
        let run = try Subprocess.run("/bin/sh", ["-c",
            "openssl x509 -in '\(pem)' -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64"])
        return run.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// Tests/Fixtures/tls_origin.py: a concurrent TLS origin (a proxy's probe may arrive while its
/// client's handshake is open), serving a leaf of the test PKI with its chain.
final class TLSTestOrigin {
    let process: BackgroundProcess
    let port: Int

    init(leaf: String, arguments: [String]) throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/tls_origin.py").path
        let pki = TestPKI.shared
        process = try BackgroundProcess(Origin.python, [script, "--cert", try pki.path("\(leaf)-chain.pem"),
                                                        "--key", try pki.path("\(leaf).key")] + arguments)
        try process.wait { out, _ in out.contains("port=") }
        guard let match = process.stdout.firstMatch(of: /port=(\d+)/), let port = Int(match.1) else {
            throw HarnessError("tls_origin.py: \(process.stderr)")
        }
        self.port = port
    }
}

/// `openssl s_server` with a leaf of the test PKI and its chain (one connection at a time, so only
/// for TLS 1.2, where the chain is judged on the wire and no probe is needed).
final class OpenSSLTestServer {
    let process: BackgroundProcess
    let port: Int

    init(leaf: String, arguments: [String]) throws {
        let pki = TestPKI.shared
        port = try freePort()
        process = try BackgroundProcess("/usr/bin/openssl", ["s_server", "-accept", "127.0.0.1:\(port)",
            "-cert", try pki.path("\(leaf).pem"), "-key", try pki.path("\(leaf).key"),
            "-cert_chain", try pki.path("intermediate.pem"), "-www", "-quiet"] + arguments)
        try waitUntilListening(port)
    }
}
