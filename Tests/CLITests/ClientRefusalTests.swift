import Foundation
import Glibc
import Testing
import TestSupport

/// The client's own refusal of the server, end to end: real clients that distrust the origin's
/// issuer (curl with a --cacert of another root, headless Chromium without the test root) through
/// the daemon, which trusts it, against TLS 1.2 and TLS 1.3 origins. The proxy lets the handshake
/// through; the client refuses it after the server's Certificate; each record says what could be
/// seen: the alert's name when it travels in the clear, or that an encrypted alert ended a TLS 1.3
/// handshake (BoringSSL's), and the pinned-domain entry of the policy.
@Suite(.serialized) struct ClientRefusalTests {
    static let pki = TestPKI.shared

    /// A daemon trusting the test root (127.0.0.1 under full ATS), with its admin listener.
    static func daemon(port: Int, policy: String? = nil) throws -> (Daemon, TemporaryDirectory) {
        try TLSInspectionTests.daemon(port: port, policy: policy, ["--admin", "127.0.0.1:0"])
    }

    /// curl through the proxy trusting only `root` (the test's other root: it does not hold the
    /// origin's issuer).
    static func curl(_ daemon: Daemon, _ url: String, root: String = "system-ca.pem", _ extra: [String] = []) throws -> AtsgateRun {
        try Subprocess.curl(["-p", "-x", daemon.proxy, "--cacert", try pki.path(root)] + extra + [url])
    }

    /// Once `expected` records are logged: /metrics, then the records of tunnels to `port` (a
    /// browser adds its own background requests).
    static func stop(_ daemon: Daemon, port: Int, expected: Int) throws -> (records: [[String: Any]], metrics: String) {
        try daemon.waitForRecords(expected)
        let metrics = try daemon.admin("/metrics")
        return (try daemon.stop(expected: expected).records.filter { $0["port"] as? Int == port }, metrics)
    }

    @Test(arguments: ["TLSv1_2", "TLSv1_3"])
    func curlDistrustingTheIssuerIsRecordedWithItsAlert(version: String) throws {
        let origin = try TLSTestOrigin(leaf: "good-rsa", arguments: ["--min", version, "--max", version])
        let (daemon, _) = try Self.daemon(port: origin.port)
        let run = try Self.curl(daemon, "https://127.0.0.1:\(origin.port)/")
        #expect(run.status == 60, "curl refuses the certificate itself: \(run.stderr)")
        let (records, metrics) = try Self.stop(daemon, port: origin.port, expected: 1)
        let record = try #require(records.first)
        #expect(record["action"] as? String == "error", "\(record)")
        #expect(record["reason"] as? String == "client-refused-certificate")
        // OpenSSL sends its alert before it switches to the handshake keys, TLS 1.3 included: in the clear.
        #expect(record["client_alert"] as? String == "unknown_ca")
        #expect(record.keys.contains("pinned_domain") && record["pinned_domain"] is NSNull, "no pin for this host")
        #expect(record["tls_version"] as? String == version.replacingOccurrences(of: "_", with: "."))
        #expect((record["message"] as? String ?? "").contains("unknown_ca(48)"), "\(record["message"] ?? "")")
        #expect(record["cert_subject"] != nil, "the proxy judged the certificate good meanwhile")
        #expect(metrics.contains(#"atsgate_client_refused_certificates_total{app="embedded",alert="unknown_ca"} 1"#),
                "\(metrics)")
    }

    /// What the lab reads: per app and per device, the servers the app itself refused.
    @Test func theReportListsTheRefusedServerWithItsDevice() throws {
        let origin = try TLSTestOrigin(leaf: "good-rsa", arguments: ["--max", "TLSv1_2"])
        let directory = try TemporaryDirectory()
        let log = directory.url.appendingPathComponent("decisions.log").path
        let (daemon, _) = try TLSInspectionTests.daemon(port: origin.port, ["--log-file", log, "--device", "lab-phone=127.0.0.2"])
        _ = try Self.curl(daemon, "https://127.0.0.1:\(origin.port)/", ["--interface", "127.0.0.2"])
        try daemon.process.wait { _, _ in (try? DecisionLogLines(contentsOf: log))?.records.count == 1 }
        daemon.process.stop()
        let record = try #require(try DecisionLogLines(contentsOf: log).records.first)
        #expect(record["device"] as? String == "lab-phone" && record["client_alert"] as? String == "unknown_ca", "\(record)")
        let report = try Atsgate.run(["report", "--local-network", "192.0.2.0/24", log])
        #expect(report.status == 0, "the app's refusal is no ATS block: \(report.stdout)")
        #expect(report.stdout.contains("THE APP REFUSED THIS SERVER (1)"), "\(report.stdout)")
        #expect(report.stdout.contains("    https://127.0.0.1:\(origin.port)  unknown_ca \u{d7}1  devices: lab-phone\n"), "\(report.stdout)")
    }

    @Test func aClientThatTrustsTheServerLeavesAnAllowWithoutTheFields() throws {
        let origin = try TLSTestOrigin(leaf: "good-rsa", arguments: ["--max", "TLSv1_2"])
        let (daemon, _) = try Self.daemon(port: origin.port)
        #expect(try Self.curl(daemon, "https://127.0.0.1:\(origin.port)/", root: "ca.pem").stdout == "ok from tls_origin\n")
        let (records, metrics) = try Self.stop(daemon, port: origin.port, expected: 1)
        let record = try #require(records.first)
        #expect(record["action"] as? String == "allow")
        #expect(record["client_alert"] == nil && record["pinned_domain"] == nil, "\(record)")
        #expect(!metrics.contains("atsgate_client_refused_certificates_total{"))
    }

    @Test func thePinnedDomainEntryOfThePolicyIsNamed() throws {
        let origin = try TLSTestOrigin(leaf: "good-rsa", arguments: ["--max", "TLSv1_3"])
        let spki = try Self.pki.spkiHash("good-rsa.pem")
        let policy = #"{"NSPinnedDomains": {"localhost": {"NSPinnedLeafIdentities": [{"SPKI-SHA256-BASE64": "\#(spki)"}]}}}"#
        let (daemon, _) = try Self.daemon(port: origin.port, policy: policy)
        _ = try Self.curl(daemon, "https://localhost:\(origin.port)/")
        let (records, metrics) = try Self.stop(daemon, port: origin.port, expected: 1)
        let record = try #require(records.first)
        #expect(record["reason"] as? String == "client-refused-certificate", "\(record)")
        #expect(record["pinned_domain"] as? String == "localhost")
        #expect((record["message"] as? String ?? "").contains("the policy pins localhost"))
        #expect(metrics.contains("atsgate_client_refused_certificates_total{"), "\(metrics)")
    }

    /// A pin checked after the handshake (curl --pinnedpubkey, as OkHttp's CertificatePinner does)
    /// ends a completed handshake: nothing in the handshake shows it, and the record stays an allow
    /// whose client sent no request (README: what can and cannot be seen).
    @Test func aPinCheckedAfterTheHandshakeIsNotARefusalOfTheHandshake() throws {
        let origin = try TLSTestOrigin(leaf: "good-rsa", arguments: ["--max", "TLSv1_3"])
        let (daemon, _) = try Self.daemon(port: origin.port)
        let run = try Self.curl(daemon, "https://127.0.0.1:\(origin.port)/", root: "ca.pem",
                                ["--pinnedpubkey", "sha256//" + String(repeating: "A", count: 43) + "="])
        #expect(run.status == 90, "curl's pin failed: \(run.stderr)")
        let (records, metrics) = try Self.stop(daemon, port: origin.port, expected: 1)
        let record = try #require(records.first)
        #expect(record["action"] as? String == "allow", "\(record)")
        #expect(record["client_alert"] == nil)
        #expect(!metrics.contains("atsgate_client_refused_certificates_total{"), "\(metrics)")
    }

    /// Chromium's BoringSSL, like Apple's stack: in TLS 1.2 the alert is in the clear
    /// (certificate_unknown); in TLS 1.3 it is encrypted, told by its size, its name unseen.
    @Test(arguments: [("TLSv1_2", "certificate_unknown"), ("TLSv1_3", nil)] as [(String, String?)])
    func chromiumDistrustingTheIssuer(version: String, alert: String?) throws {
        let browser = try #require(LivePageTests.chromium, "chromium is not installed (scripts/install-deps installs it)")
        let origin = try TLSTestOrigin(leaf: "good-rsa", arguments: ["--min", version, "--max", version])
        let (daemon, _) = try Self.daemon(port: origin.port)
        let profile = try TemporaryDirectory()
        let run = try Subprocess.run(browser, ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                                               "--disable-background-networking", "--disable-component-update",
                                               "--user-data-dir=\(profile.url.path)", "--proxy-server=\(daemon.proxy)",
                                               "--proxy-bypass-list=<-loopback>", "--dump-dom",
                                               "https://127.0.0.1:\(origin.port)/"], timeout: 60)
        #expect(!run.stdout.contains("ok from tls_origin"), "the browser refused the page")
        try daemon.process.wait { out, _ in out.contains("client-refused-certificate") }
        let (records, metrics) = try Self.stop(daemon, port: origin.port, expected: 1)
        let refused = records.filter { $0["reason"] as? String == "client-refused-certificate" }
        #expect(!refused.isEmpty, "\(records)")
        for record in refused {
            #expect(record["action"] as? String == "error")
            #expect((record["user_agent"] as? String ?? "").contains("Chrome/"))
            if let alert {
                #expect(record["client_alert"] as? String == alert, "\(record)")
            } else {
                #expect(record.keys.contains("client_alert") && record["client_alert"] is NSNull, "\(record)")
                #expect((record["message"] as? String ?? "").contains("encrypted alert"), "\(record["message"] ?? "")")
            }
        }
        let label = alert ?? "encrypted"
        #expect(metrics.contains(#"atsgate_client_refused_certificates_total{app="embedded",alert="\#(label)"} "#),
                "\(metrics)")
    }
}
