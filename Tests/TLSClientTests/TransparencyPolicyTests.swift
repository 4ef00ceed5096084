import ATSPolicy
import Foundation
import Testing
import TLSClient

/// R16 by default with a store that has a log list: SCTs signed by the test store's logs (checked once
/// by OpenSSL's own CT code when make-trust-store.py made them), counted by Apple's policy.
@Suite struct TransparencyPolicyTests {
    static func verdict(_ leaf: String, presented: [PresentedSCT] = [], store: TrustStore? = nil,
                        transparency: TransparencyCheck?? = nil) throws -> CertificateVerdict {
        let store = try store ?? TestTrustStore.store()
        let check = transparency ?? store.defaultTransparency
        return CertificateEvaluator.evaluate(chain: try TestTrustStore.chain(leaf), host: "localhost", requirements: .full,
                                             pin: nil, store: store, transparency: check, presentedSCTs: presented)
    }

    @Test("Apple's policy over the store's logs", arguments: [
        ("leaf-good", nil as String?),
        ("leaf-same-operator", "at most 1 per log operator counts: 1 of the 2 embedded do"),
        ("leaf-retired", "atsgate test log b2 (retired 2020-01-01T00:00:00Z, before the SCT)"),
        ("leaf-once", nil),
        ("leaf-rejected", "atsgate test log c1 (rejected)"),
        ("leaf-pending", "atsgate test log c2 (pending)"),
        ("leaf-tiled", nil),
        ("leaf-no-sct", "has SCTs from 0 distinct logs; Apple requires at least 2 from distinct logs"),
    ])
    func policy(leaf: String, words: String?) throws {
        let verdict = try Self.verdict(leaf)
        #expect(verdict.findings.map(\.reason) == (words == nil ? [] : [.certificateTransparency]),
                "\(verdict.findings.map(\.message))")
        if let words {
            let finding = try #require(verdict.blockingFinding)
            #expect(finding.rule == .r16)
            #expect(finding.depth == 0)
            #expect(finding.message.contains(words), "\(finding.message)")
        }
    }

    @Test func theSCTsCarryTheirLogAndItsStanding() throws {
        let scts = try Self.verdict("leaf-once").facts.scts
        #expect(scts.count == 2)
        #expect(scts.allSatisfy { $0.verified == true && $0.source == .embedded })
        #expect(scts.map { $0.log?.operatorName } == ["Test Operator A", "Test Operator B"])
        #expect(scts.map { $0.log?.standing } == [.approved, .onceApproved])
        #expect(scts.allSatisfy { ($0.timestamp ?? .distantPast) < Date() })
        #expect(try Self.verdict("leaf-tiled").facts.scts.map { $0.log?.rfc6962 } == [true, false])
    }

    /// The SCTs of a TLS-encoded list, one by one, as PresentedSCT wants them.
    static func presented(_ file: String, _ source: SCTFacts.Source) throws -> [PresentedSCT] {
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: try TestTrustStore.path(file))))
        var result: [PresentedSCT] = []
        var index = 2
        while index < bytes.count {
            let length = Int(bytes[index]) << 8 | Int(bytes[index + 1])
            result.append(PresentedSCT(source: source, bytes: Array(bytes[(index + 2)..<(index + 2 + length)])))
            index += 2 + length
        }
        return result
    }

    @Test("SCTs in the TLS extension or a stapled OCSP response count", arguments: [
        ("leaf-no-sct.tls-scts", SCTFacts.Source.tlsExtension), ("leaf-no-sct.ocsp-scts", .ocsp),
    ])
    func deliveredSCTs(file: String, source: SCTFacts.Source) throws {
        let presented = try Self.presented(file, source)
        #expect(presented.count == 2)
        let verdict = try Self.verdict("leaf-no-sct", presented: presented)
        #expect(verdict.findings == [], "\(verdict.findings.map(\.message))")
        #expect(verdict.facts.scts.map(\.source) == [source, source])
        #expect(verdict.facts.scts.allSatisfy { $0.verified == true })
    }

    @Test func aDamagedSCTFailsVerification() throws {
        let verdict = try Self.verdict("leaf-no-sct", presented: try Self.presented("damaged.tls-scts", .tlsExtension))
        let finding = try #require(verdict.blockingFinding)
        #expect(finding.reason == .certificateTransparency)
        #expect(finding.message.contains("SCTs from 1 distinct log (2 tls-extension), 1 failing verification"), "\(finding.message)")
    }

    @Test func aUserInstalledRootIsExempt() throws {
        let store = try TrustStore(.system, caFiles: [try TestTrustStore.path("root-a.pem")])
        let logs = try #require(try TestTrustStore.store().logList)
        let verdict = try Self.verdict("leaf-no-sct", store: store, transparency: TransparencyCheck(logList: logs))
        #expect(verdict.anchor == .operator)
        #expect(verdict.findings == [])
    }

    @Test func turnedOffItJudgesNothing() throws {
        #expect(try Self.verdict("leaf-no-sct", transparency: .some(nil)).findings == [])
    }
}
