import ATSPolicy
import Foundation
import Testing
import TLSClient

/// R15 on the whole chain, Apple's policy constraints and date-based distrust, through real certificates
/// (make-trust-store.py) judged against a store in Apple's layout.
@Suite struct ChainJudgementTests {
    static func verdict(_ leaf: String, requirements: Requirements = .full, store: TrustStore? = nil) throws -> CertificateVerdict {
        CertificateEvaluator.evaluate(chain: try TestTrustStore.chain(leaf), host: "localhost", requirements: requirements,
                                      pin: nil, store: try store ?? TestTrustStore.store())
    }

    @Test func aGoodChainToTheStoreIsTrustedAsPubliclyTrusted() throws {
        let verdict = try Self.verdict("leaf-good")
        #expect(verdict.findings == [])
        #expect(verdict.anchor == .system)
        #expect(verdict.facts.chain.map(\.depth) == [0, 1, 2])
        #expect(verdict.facts.chain.map(\.isAnchor) == [false, false, true])
        #expect(verdict.facts.chain.last?.subject == "CN=atsgate Apple-layout Root A,O=atsgate test")
        #expect(verdict.certificateDepth == nil)
        #expect(verdict.distrust == nil)
    }

    @Test("an intermediate with a weak key or a SHA-1 signature is refused at depth 1", arguments: [
        ("leaf-weak-int", BlockReason.certificateKeySize, "intermediate certificate CN=atsgate Weak-Key Intermediate,O=atsgate test (depth 1) has a RSA-1024 key"),
        ("leaf-sha1-int", .certificateSignatureHash, "intermediate certificate CN=atsgate SHA-1 Intermediate,O=atsgate test (depth 1) is signed with sha1WithRSAEncryption"),
    ])
    func weakIntermediate(leaf: String, reason: BlockReason, words: String) throws {
        let verdict = try Self.verdict(leaf)
        #expect(verdict.trusted)
        #expect(verdict.findings.map(\.reason) == [reason])
        let finding = try #require(verdict.blockingFinding)
        #expect(finding.depth == 1)
        #expect(verdict.certificateDepth == 1)
        #expect(finding.rule == .r15)
        #expect(finding.message.contains(words), "\(finding.message)")
        // Tolerated where cleartext is allowed, and still at depth 1.
        let tolerated = try Self.verdict(leaf, requirements: .none)
        #expect(tolerated.blockingFinding == nil)
        #expect(tolerated.toleratedFindings.map(\.depth) == [1])
    }

    @Test func aWeakIntermediateUnderAUserInstalledRootIsRefusedToo() throws {
        // R15's key size and hash bind whatever the anchor; only CT and the 398-day rule spare user roots.
        let store = try TrustStore(.system, caFiles: [try TestTrustStore.path("root-a.pem")])
        let verdict = try Self.verdict("leaf-weak-int", store: store)
        #expect(verdict.anchor == .operator)
        #expect(verdict.findings.map(\.reason) == [.certificateKeySize])
        #expect(verdict.certificateDepth == 1)
    }

    @Test func aRootConstrainedAwayFromTLSAnchorsNothing() throws {
        let verdict = try Self.verdict("leaf-smime")
        #expect(!verdict.trusted)
        #expect(verdict.findings.map(\.reason) == [.certificateUntrusted])
        let message = try #require(verdict.blockingFinding?.message)
        #expect(message.contains("the chain ends at CN=atsgate S/MIME-only Root,O=atsgate test, which the"
            + " \(try TestTrustStore.storePath()) trust store (atsgate-test-store) holds for other uses only"), "\(message)")
        #expect(message.contains("allow 1.2.840.113635.100.1.2, 1.2.840.113635.100.1.8, not TLS server authentication"))
        #expect(verdict.certificateDepth == 1)
        // The same root sent by the server changes nothing: it is still not an anchor for TLS.
        let withRoot = CertificateEvaluator.evaluate(chain: try TestTrustStore.chain("leaf-smime") + [try TestTrustStore.der("root-smime")],
                                                     host: "localhost", requirements: .full, pin: nil, store: try TestTrustStore.store())
        #expect(withRoot.blockingFinding?.message.contains("holds for other uses only") == true, "\(withRoot.findings.map(\.message))")
    }

    @Test func aRootConstrainedToTLSServersAnchors() throws {
        let verdict = try Self.verdict("leaf-ssl")
        #expect(verdict.trusted)
        #expect(verdict.findings == [])
    }

    @Test func aLeafIssuedAfterItsCAsDistrustDateIsRefused() throws {
        let verdict = try Self.verdict("leaf-distrusted")
        #expect(verdict.trusted)
        #expect(verdict.findings.map(\.reason) == [DistrustRule.reason])
        let finding = try #require(verdict.blockingFinding)
        #expect(finding.depth == 2)
        #expect(finding.message.contains("under root certificate CN=atsgate Distrusted Root,O=atsgate test (depth 2),"
            + " which Apple distrusts (atsgate Distrusted Root)"), "\(finding.message)")
        #expect(verdict.distrust?.name == "atsgate Distrusted Root")
        // Apple's own table does not name the test root.
        let apple = try Self.verdict("leaf-distrusted", store: try TrustStore(.directory(try TestTrustStore.storePath())))
        #expect(apple.findings == [])
        #expect(apple.distrust == nil)
    }

    @Test func aDistrustMatchesTheRootsKeyToo() throws {
        // The table names the key only (as for a cross-signed copy of a distrusted root).
        let root = try TestTrustStore.manifest("root-distrusted")
        let byKey = DistrustedCA(certificateSHA256: String(repeating: "00", count: 32), spkiSHA256: root.spki,
                                 distrust: try TestTrustStore.distrustOfTestRoot().distrust)
        let store = try TrustStore(.directory(try TestTrustStore.storePath()), distrusted: [byKey])
        #expect(try Self.verdict("leaf-distrusted", store: store).findings.map(\.depth) == [2])
    }

    @Test func appleDistrustsEntrustAndCamerfirmaRootsOfItsOwnStore() throws {
        let folder = AppleTrustStoreTests.folder.appendingPathComponent("certificates/roots")
        for entry in AppleDistrust.table {
            let bytes = [UInt8](try Data(contentsOf: folder.appendingPathComponent("\(entry.certificateSHA256).cer")))
            let facts = CertificateEvaluator.facts(chain: [bytes, bytes], host: "x", store: try TrustStore(.system))
            // The table's SPKI hash is the certificate's own key.
            #expect(facts.chain.last?.spkiSHA256 == Data(Self.bytes(hex: entry.spkiSHA256)), "\(entry.distrust.name)")
            #expect(entry.distrust.from == Date(timeIntervalSince1970: 1_731_715_200))
        }
        #expect(AppleDistrust.table.count == 11)
    }

    static func bytes(hex: String) -> [UInt8] {
        stride(from: 0, to: hex.count, by: 2).map { index in
            let start = hex.index(hex.startIndex, offsetBy: index)
            return UInt8(hex[start..<hex.index(start, offsetBy: 2)], radix: 16) ?? 0
        }
    }
}
