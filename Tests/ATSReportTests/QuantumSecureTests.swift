import ATSPolicy
import ATSReport
import Foundation
import FoundationXML
import Testing

/// The quantum-secure section: per app, the servers that answered a post-quantum offer with a
/// classical group, those that used a post-quantum group, and those never seen with an offer.
@Suite struct QuantumSecureTests {
    typealias F = ReportFixtures

    static func record(_ host: String, group: String?, offered: Bool?, tls: String = "TLSv1.3") -> String {
        let groupText = group.map { "\"\($0)\"" } ?? "null"
        let offeredText = offered.map { "\($0)" } ?? "null"
        return F.record("https", host, 443, tls: tls, cipher: tls == "TLSv1.3" ? "TLS_AES_128_GCM_SHA256" : "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
                        extra: #","key_exchange":\#(groupText),"pq_offered":\#(offeredText)"#)
    }

    static let lines = [
        record("pq.example.com", group: "X25519MLKEM768", offered: true),
        record("classic.example.com", group: "x25519", offered: true),
        record("classic.example.com", group: "X25519MLKEM768", offered: true),
        record("rsa.example.com", group: nil, offered: true, tls: "TLSv1.2"),
        record("old-client.example.com", group: "secp256r1", offered: false),
        record("hybrid-draft.example.com", group: "0x6399", offered: nil),
        F.record("https", "no-field.example.com", 443, tls: "TLSv1.3", cipher: "TLS_AES_128_GCM_SHA256"),
        F.record("http", "cleartext.example.com", 80, extra: #","key_exchange":null,"pq_offered":null"#),
        F.record("https", "refused.example.com", 443, action: "error", reason: "upstream-refused",
                 extra: #","key_exchange":null,"pq_offered":true"#),
    ]

    @Test(arguments: [
        ("X25519MLKEM768", true), ("SecP256r1MLKEM768", true), ("SecP384r1MLKEM1024", true), ("MLKEM768", true),
        ("X25519Kyber768Draft00", true), ("0x11EC", true), ("0x11eb", true), ("0x0201", true), ("0x6399", true),
        ("x25519", false), ("secp256r1", false), ("secp384r1", false), ("ffdhe2048", false), ("0x001D", false),
        ("curveSM2MLKEM768", true), ("0x11EE", true), ("x25519kyber512draft00", true), ("0xFE30", true),
    ])
    func postQuantumGroupsAreTheHybridAndMLKEMOnes(group: String, postQuantum: Bool) {
        #expect(PostQuantumGroups.contains(group) == postQuantum)
    }

    @Test func eachDestinationGetsItsStatus() throws {
        let app = try F.app("{}", Self.lines)
        func status(_ host: String) -> QuantumStatus? { app.destinations.first { $0.traffic.host == host }?.quantum }
        #expect(status("pq.example.com") == .postQuantum)
        #expect(status("classic.example.com") == .classical, "one classical answer to an offer is enough")
        #expect(status("rsa.example.com") == .classical, "TLS 1.2 without (EC)DHE can never be quantum-secure")
        #expect(status("old-client.example.com") == .unknown, "the client offered none")
        #expect(status("hybrid-draft.example.com") == .postQuantum, "a post-quantum group chosen was offered")
        #expect(status("no-field.example.com") == .unknown)
        #expect(status("refused.example.com") == .unknown, "no handshake: a null group is no answer")
        #expect(status("cleartext.example.com") == nil, "cleartext has no key exchange to judge")
        #expect(app.quantum(.classical).map(\.traffic.host) == ["classic.example.com", "rsa.example.com"])
    }

    @Test func everyFormatShowsTheSectionAndOnlyTheFlagFails() throws {
        let report = try F.report("{}", Self.lines.filter { !$0.contains("cleartext.example.com") })
        #expect(!report.fails, "by default the exit status does not change")
        let text = report.text
        #expect(text.contains("  quantum-secure (7 TLS destinations): 2 post-quantum, 2 answered a post-quantum offer with a classical group, 3 never seen with an offer (unknown)\n"), "\(text)")
        #expect(text.contains("    not quantum-secure: https://classic.example.com:443 chose X25519MLKEM768, x25519\n"))
        #expect(text.contains("    not quantum-secure: https://rsa.example.com:443 chose none\n"))

        let json = try #require(try JSONSerialization.jsonObject(with: Data(report.jsonText.utf8)) as? [String: Any])
        let section = try #require((json["apps"] as? [[String: Any]])?.first?["quantum_secure"] as? [String: Any])
        #expect((section["classical"] as? [[String: Any]])?.compactMap { $0["url"] as? String }
                == ["https://classic.example.com:443", "https://rsa.example.com:443"])
        #expect(section["post_quantum"] as? [String] == ["https://hybrid-draft.example.com:443", "https://pq.example.com:443"])
        #expect((section["unknown"] as? [String])?.count == 3)

        let html = report.html
        #expect(html.contains("<h3>Quantum-secure TLS</h3>"))
        #expect(html.contains("aria-label=\"quantum-secure share\""))
        #expect(html.contains("classical: 2 (29%)"))

        func sarifResults(_ report: Report) throws -> [[String: Any]] {
            let sarif = try #require(try JSONSerialization.jsonObject(with: Data(report.sarif(toolVersion: "0").pretty.utf8)) as? [String: Any])
            return try #require(((sarif["runs"] as? [[String: Any]])?.first)?["results"] as? [[String: Any]])
        }
        let notes = try sarifResults(report).filter { $0["ruleId"] as? String == "not-quantum-secure" }
        #expect(notes.count == 2)
        #expect(notes.allSatisfy { $0["level"] as? String == "note" })

        let junit = try XMLDocument(data: Data(report.junit.utf8))
        let cases = try junit.nodes(forXPath: "//testcase[contains(@classname, '.quantum-secure')]").compactMap { $0 as? XMLElement }
        #expect(cases.count == 7)
        #expect(try junit.nodes(forXPath: "//testcase[contains(@classname, '.quantum-secure')]/failure").isEmpty)

        // --require-quantum-secure: the classical answers fail, in the exit status, SARIF and JUnit.
        let strict = try F.report("{}", Self.lines, settings: ReportSettings(requireQuantumSecure: true))
        #expect(strict.fails)
        #expect(try sarifResults(strict).filter { $0["ruleId"] as? String == "not-quantum-secure" }.allSatisfy { $0["level"] as? String == "error" })
        let strictJUnit = try XMLDocument(data: Data(strict.junit.utf8))
        let failures = try strictJUnit.nodes(forXPath: "//testcase[contains(@classname, '.quantum-secure')]/failure")
        #expect(failures.count == 2)
        #expect(strict.text.contains("NOT QUANTUM-SECURE (required): https://classic.example.com:443"))
    }

    @Test func logsWithoutTheFieldsSaySo() throws {
        let report = try F.report("{}", [F.record("https", "www.example.com", 443, tls: "TLSv1.3", cipher: "TLS_AES_128_GCM_SHA256")])
        #expect(report.text.contains("  quantum-secure: not recorded"))
        #expect(!report.junit.contains("quantum-secure"))
    }
}
