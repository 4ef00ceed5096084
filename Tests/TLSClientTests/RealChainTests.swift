import ATSPolicy
import Foundation
import Testing
import TestSupport
import TLSClient

/// A real chain with real SCTs (Tests/Fixtures/real-chains, another project's published test data),
/// judged against the shipped Apple store and its log list at a time the leaf was valid.
@Suite struct RealChainTests {
    /// 2023-05-11T03:31:42Z, when the chain was captured.
    static let captured = Date(timeIntervalSince1970: 1_683_775_902)
    static let oak = "7A328C54D8B72DB620EA38E0521EE98416703213854D3BD22BC13A57A352EB52"
    static let nimbus = "B73EFB24DF9C4DBA75F239C5BA58F46C5DFC42CF7A9F35C49E1D098125EDB499"

    static func chain() throws -> [[UInt8]] {
        let text = try String(contentsOfFile: fixturePath("real-chains/tracker.mywaifu.best.pem"), encoding: .utf8)
        return text.components(separatedBy: "-----BEGIN CERTIFICATE-----").dropFirst().map { block in
            let body = block.components(separatedBy: "-----END CERTIFICATE-----")[0].filter { !$0.isWhitespace }
            return [UInt8](Data(base64Encoded: body) ?? Data())
        }
    }

    static func verdict(_ transparency: TransparencyCheck) throws -> CertificateVerdict {
        CertificateEvaluator.evaluate(chain: try chain(), host: "tracker.mywaifu.best", requirements: .full, pin: nil,
                                      store: try TrustStore(.apple), now: captured, transparency: transparency)
    }

    /// The shipped log list with Oak 2023 and Nimbus 2023 usable, as Apple listed them in 2023.
    static func listOf2023() throws -> CTLogList {
        let url = AppleTrustStoreTests.folder.appendingPathComponent("certificate_transparency/log_list.json")
        var list = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
        var operators = try #require(list["operators"] as? [[String: Any]])
        for index in operators.indices {
            var logs = operators[index]["logs"] as? [[String: Any]] ?? []
            for log in logs.indices {
                let id = Data(base64Encoded: logs[log]["log_id"] as? String ?? "").map { $0.map { String(format: "%02X", $0) }.joined() }
                if id == oak || id == nimbus { logs[log]["state"] = ["usable": ["timestamp": "2022-06-01T00:00:00Z"]] }
            }
            operators[index]["logs"] = logs
        }
        list["operators"] = operators
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("atsgate-loglist-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: file) }
        try JSONSerialization.data(withJSONObject: list).write(to: file)
        return try CTLogList(file: file.path)
    }

    @Test func itsRealSCTsVerifyAgainstApplesLogKeysAndPassAsTheyDidIn2023() throws {
        let verdict = try Self.verdict(TransparencyCheck(logList: try Self.listOf2023()))
        #expect(verdict.findings == [], "\(verdict.findings.map(\.message))")
        #expect(verdict.anchor == .system)
        #expect(verdict.facts.chain.map(\.subject).last == "CN=ISRG Root X1,O=Internet Security Research Group,C=US")
        #expect(verdict.facts.scts.count == 2)
        #expect(verdict.facts.scts.allSatisfy { $0.verified == true && $0.source == .embedded })
        #expect(Set(verdict.facts.scts.compactMap { $0.log?.operatorName }) == ["Let's Encrypt", "Cloudflare"])
    }

    @Test func withTodaysListItsLogsAreRejectedAndCTFails() throws {
        let store = try TrustStore(.apple)
        let verdict = try Self.verdict(try #require(store.defaultTransparency))
        #expect(verdict.findings.map(\.reason) == [.certificateTransparency])
        let message = try #require(verdict.blockingFinding?.message)
        #expect(message.contains("2 from logs that do not count:"), "\(message)")
        #expect(message.contains("Let's Encrypt 'Oak2023' log (rejected)"))
        #expect(message.contains("Cloudflare 'Nimbus 2023' log (rejected)"))
        // Rejected logs are not loaded into OpenSSL: their SCTs are identified, not verified.
        #expect(verdict.facts.scts.allSatisfy { $0.verified == nil })
    }
}
