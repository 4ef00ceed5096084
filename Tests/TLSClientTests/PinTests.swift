import ATSPolicy
import Foundation
import Testing
import TLSClient

/// R17: NSPinnedLeafIdentities and NSPinnedCAIdentities, with hashes from the openssl CLI.
@Suite struct PinTests {
    /// The NSPinnedDomains entry for localhost, read from a JSON policy the way the daemon reads it.
    static func pin(leaf: [Data]? = nil, ca: [Data]? = nil) throws -> PinnedDomain {
        func identities(_ hashes: [Data]) -> [[String: String]] {
            hashes.map { ["SPKI-SHA256-BASE64": $0.base64EncodedString()] }
        }
        var entry: [String: Any] = [:]
        if let leaf { entry["NSPinnedLeafIdentities"] = identities(leaf) }
        if let ca { entry["NSPinnedCAIdentities"] = identities(ca) }
        let json = try JSONSerialization.data(withJSONObject: ["NSPinnedDomains": ["localhost": entry]])
        let policy = Policy(try PolicyLoader.parse(data: json, origin: "pins.json"))
        return try #require(policy.pinnedDomains["localhost"])
    }

    static func reasons(_ pin: PinnedDomain, leaf: String = "good-rsa", requirements: Requirements = .full,
                        store: TrustStore? = nil) throws -> [CertificateFinding] {
        try CertificateEvaluatorTests.verdict(leaf, requirements: requirements, pin: pin, store: store).findings
    }

    static let other = Data(repeating: 7, count: 32)

    @Test func matchingLeafIdentityPasses() throws {
        #expect(try Self.reasons(try Self.pin(leaf: [Self.other, try TestPKI.spkiHash(key: "good-rsa.key")])) == [])
    }

    @Test func otherLeafIdentityFailsAndNamesTheActualHash() throws {
        let findings = try Self.reasons(try Self.pin(leaf: [Self.other]))
        #expect(findings.map(\.reason) == [.certificatePin])
        let actual = try TestPKI.spkiHash(key: "good-rsa.key").base64EncodedString()
        #expect(findings[0].message.contains(actual))
        #expect(findings[0].message.contains("NSPinnedLeafIdentities"))
    }

    @Test(arguments: ["ca.key", "intermediate.key"])
    func anyCAOfTheVerifiedChainMatches(key: String) throws {
        #expect(try Self.reasons(try Self.pin(ca: [try TestPKI.spkiHash(key: key)])) == [])
    }

    @Test func theLeafIsNotACAIdentity() throws {
        let findings = try Self.reasons(try Self.pin(ca: [try TestPKI.spkiHash(key: "good-rsa.key")]))
        #expect(findings.map(\.reason) == [.certificatePin])
    }

    @Test func caIdentityNeedsAVerifiedChain() throws {
        // The root's hash is right, but without the CA file no chain is verified, so nothing can match.
        let findings = try Self.reasons(try Self.pin(ca: [try TestPKI.spkiHash(key: "ca.key")]), store: try TrustStore())
        #expect(findings.map(\.reason) == [.certificateUntrusted, .certificatePin])
    }

    @Test func bothArraysNeedAMatchEach() throws {
        let leaf = try TestPKI.spkiHash(key: "good-rsa.key"), root = try TestPKI.spkiHash(key: "ca.key")
        #expect(try Self.reasons(try Self.pin(leaf: [leaf], ca: [root])) == [])
        #expect(try Self.reasons(try Self.pin(leaf: [leaf], ca: [Self.other])).map(\.reason) == [.certificatePin])
        #expect(try Self.reasons(try Self.pin(leaf: [Self.other], ca: [root])).map(\.reason) == [.certificatePin])
    }

    @Test func anEmptyIdentityArrayMatchesNothing() throws {
        #expect(try Self.reasons(try Self.pin(leaf: [])).map(\.reason) == [.certificatePin])
    }

    /// Pins bind even where cleartext is allowed: the other findings are tolerated, the pin is not.
    @Test func pinFailureBlocksEvenWithCleartextAllowed() throws {
        let verdict = try CertificateEvaluatorTests.verdict("self-signed", requirements: .none,
                                                            pin: try Self.pin(leaf: [Self.other]))
        #expect(verdict.findings.map(\.reason) == [.certificateUntrusted, .certificatePin], "\(verdict.findings.map(\.message))")
        #expect(verdict.findings.map(\.blocking) == [false, true])
        #expect(verdict.blockingFinding?.reason == .certificatePin)
    }
}
