import ATSPolicy
import Foundation
import Testing

/// R15 over the whole chain, R16 under Apple's CT policy, and date-based distrust, as values: facts in,
/// the rule's reason, depth and words out.
@Suite struct ChainRuleTableTests {
    static let day: TimeInterval = 86_400
    /// 2026-01-01.
    static let issued = Date(timeIntervalSince1970: 1_767_225_600)

    static func certificate(_ depth: Int, key: PublicKeyFacts = PublicKeyFacts(kind: .rsa, bits: 2048),
                            hash: SignatureHash = .sha256, algorithm: String = "sha256WithRSAEncryption",
                            anchor: Bool = false, distrust: ChainCertificate.Distrust? = nil) -> ChainCertificate {
        ChainCertificate(depth: depth, subject: depth == 0 ? "CN=api.example.com" : "CN=CA \(depth)", key: key,
                         signatureHash: hash, signatureAlgorithm: algorithm, isAnchor: anchor, distrust: distrust)
    }

    static func facts(_ chain: [ChainCertificate], anchor: TrustAnchor = .system, days: Double = 90,
                      notBefore: Date = issued, scts: [SCTFacts] = []) -> CertificateChainFacts {
        let leaf = RuleTableTests.leaf(days: days, from: notBefore)
        return CertificateChainFacts(host: "api.example.com", leaf: leaf, anchor: anchor, scts: scts, chain: chain)
    }

    // MARK: R15 on every certificate

    @Test("R15 key size: every certificate, the anchor included; the failure names the first weak one", arguments: [
        ([2048, 2048, 2048], nil),
        ([2048, 1024, 2048], 1),
        ([2048, 2048, 1024], 2),
        ([1024, 1024, 2048], 0),
    ] as [([Int], Int?)])
    func keySizeOnTheChain(bits: [Int], weakDepth: Int?) throws {
        let chain = bits.enumerated().map { depth, size in
            Self.certificate(depth, key: PublicKeyFacts(kind: .rsa, bits: size), anchor: depth == bits.count - 1)
        }
        let result = KeySizeRule().evaluate(Self.facts(chain))
        #expect(result.failure?.depth == weakDepth)
        if let weakDepth {
            let failure = try #require(result.failure)
            #expect(failure.reason == .certificateKeySize && failure.rule == .r15)
            #expect(failure.message.contains("RSA-1024"))
            #expect(failure.message.contains(weakDepth == 0 ? "certificate for api.example.com" : "(depth \(weakDepth))"),
                    "\(failure.message)")
        }
    }

    @Test("R15 signature hash: every certificate but the anchor's own self-signature")
    func signatureHashOnTheChain() throws {
        let sha1 = (SignatureHash.sha1, "sha1WithRSAEncryption")
        let intermediate = [Self.certificate(0), Self.certificate(1, hash: sha1.0, algorithm: sha1.1), Self.certificate(2, anchor: true)]
        let failure = try #require(SignatureHashRule().evaluate(Self.facts(intermediate)).failure)
        #expect(failure.depth == 1)
        #expect(failure.reason == .certificateSignatureHash)
        #expect(failure.message == "intermediate certificate CN=CA 1 (depth 1) is signed with sha1WithRSAEncryption;"
            + " ATS requires a SHA-256 or stronger signature hash for every certificate of the chain")
        // A root's SHA-1 self-signature is nobody's business.
        let root = [Self.certificate(0), Self.certificate(1), Self.certificate(2, hash: sha1.0, algorithm: sha1.1, anchor: true)]
        #expect(SignatureHashRule().evaluate(Self.facts(root)).passed)
        // Unless the chain did not end at an anchor: then nothing is exempt.
        let unanchored = [Self.certificate(0), Self.certificate(1), Self.certificate(2, hash: sha1.0, algorithm: sha1.1)]
        #expect(SignatureHashRule().evaluate(Self.facts(unanchored)).failure?.depth == 2)
    }

    @Test func certificateRulesCarryTheDepthToTheFinding() throws {
        let chain = [Self.certificate(0), Self.certificate(1, key: PublicKeyFacts(kind: .rsa, bits: 1024)),
                     Self.certificate(2, anchor: true)]
        let findings = CertificateRules(.ats(.full), now: Self.issued.addingTimeInterval(Self.day)).findings(Self.facts(chain))
        #expect(findings.map(\.reason) == [.certificateKeySize])
        #expect(findings.first?.depth == 1)
    }

    // MARK: Distrust

    static let entrust = ChainCertificate.Distrust(name: "Entrust Root Certification Authority - G2",
                                                   from: Date(timeIntervalSince1970: 1_731_715_200),
                                                   source: "https://support.apple.com/121668")

    @Test("distrust: leaves issued from the day after the effective date are refused, earlier ones are not", arguments: [
        (Date(timeIntervalSince1970: 1_731_715_199), true),   // 2024-11-15T23:59:59Z
        (Date(timeIntervalSince1970: 1_731_715_200), false),  // 2024-11-16T00:00:00Z
        (issued, false),
    ])
    func distrust(notBefore: Date, passes: Bool) throws {
        let chain = [Self.certificate(0), Self.certificate(1), Self.certificate(2, anchor: true, distrust: Self.entrust)]
        let result = DistrustRule().evaluate(Self.facts(chain, notBefore: notBefore))
        #expect(result.passed == passes)
        if let failure = result.failure {
            #expect(failure.depth == 2)
            #expect(failure.rule == .r15)
            #expect(failure.reason == DistrustRule.reason)
            #expect(failure.message.contains("Apple distrusts (Entrust Root Certification Authority - G2) for certificates"
                + " issued after 2024-11-15 (https://support.apple.com/121668)"), "\(failure.message)")
        }
    }

    @Test func aDistrustedLeafIsNotItsOwnCA() {
        // Only CAs are distrusted: a leaf that happens to match the table (by key) is judged as a leaf.
        let chain = [Self.certificate(0, distrust: Self.entrust), Self.certificate(1, anchor: true)]
        #expect(DistrustRule().evaluate(Self.facts(chain)).passed)
    }

    // MARK: R16 under Apple's policy

    static func log(_ name: String, _ operatorName: String, _ standing: CTLogFacts.Standing = .approved,
                    rfc6962: Bool = true) -> CTLogFacts {
        CTLogFacts(description: name, operatorName: operatorName, standing: standing, rfc6962: rfc6962)
    }

    static func sct(_ id: UInt8, _ log: CTLogFacts?, _ source: SCTFacts.Source = .embedded,
                    verified: Bool = true) -> SCTFacts {
        SCTFacts(logID: [UInt8](repeating: id, count: 32), source: source, verified: verified, log: log)
    }

    static let a1 = log("A one", "A"), a2 = log("A two", "A"), b1 = log("B one", "B"), c1 = log("C one", "C")

    @Test("R16 with a log list: Apple's policy", arguments: [
        // Up to 180 days: 2 from distinct logs, at most 1 per operator.
        (90.0, [sct(1, a1), sct(2, b1)], nil as String?),
        (90, [sct(1, a1), sct(2, a2)], "at most 1 per log operator counts: 1 of the 2 embedded do"),
        // Above 180 days: 3, at most 2 per operator.
        (365, [sct(1, a1), sct(2, a2), sct(3, b1)], nil),
        (365, [sct(1, a1), sct(2, a2), sct(3, log("A three", "A"))], "at most 2 per log operator counts: 2 of the 3"),
        // A once-approved (retired after the SCT) log counts, but one SCT must be from a current one.
        (90, [sct(1, log("A old", "A", .onceApproved)), sct(2, b1)], nil),
        (90, [sct(1, log("A old", "A", .onceApproved)), sct(2, log("B old", "B", .onceApproved))],
         "one embedded SCT from a currently approved log"),
        // Rejected, pending and retired-before-the-SCT logs do not count.
        (90, [sct(1, a1), sct(2, log("B bad", "B", .notCounted("rejected")))], "at least 2 from distinct logs"),
        (90, [sct(1, a1), sct(2, log("B new", "B", .notCounted("pending")))], "at least 2 from distinct logs"),
        // An SCT that does not verify, or from a log the list does not name, does not count.
        (90, [sct(1, a1), sct(2, b1, verified: false)], "at least 2 from distinct logs"),
        (90, [sct(1, a1), sct(2, nil)], "at least 2 from distinct logs"),
        // Tiled (static-ct-api) logs count, but one SCT must be from an RFC 6962 log.
        (90, [sct(1, a1), sct(2, log("B tiled", "B", rfc6962: false))], nil),
        (90, [sct(1, log("A tiled", "A", rfc6962: false)), sct(2, log("B tiled", "B", rfc6962: false))],
         "at least one from an RFC 6962 log"),
        // Delivered in the handshake: no per-operator cap, one from a currently approved log.
        (365, [sct(1, a1, .tlsExtension), sct(2, a2, .tlsExtension), sct(3, log("A three", "A"), .ocsp)], nil),
        (365, [sct(1, a1, .tlsExtension), sct(2, a2, .tlsExtension)], "Apple requires 3 from distinct logs"),
        (365, [sct(1, a1), sct(2, b1), sct(3, c1, .tlsExtension)], nil),
    ] as [(Double, [SCTFacts], String?)])
    func applePolicy(days: Double, scts: [SCTFacts], shortfall: String?) {
        let result = CertificateTransparencyRule(verifying: true).evaluate(Self.facts([], days: days, scts: scts))
        #expect(result.passed == (shortfall == nil), "\(result.failure?.message ?? "passed")")
        if let shortfall, let failure = result.failure {
            #expect(failure.message.contains(shortfall), "\(failure.message)")
            #expect(failure.rule == .r16 && failure.reason == .certificateTransparency && failure.depth == 0)
        }
    }

    @Test func theMessageNamesLogsThatDoNotCount() throws {
        let scts = [Self.sct(1, Self.a1), Self.sct(2, Self.log("StartCom log", "StartCom", .notCounted("rejected"))),
                    Self.sct(3, Self.b1, verified: false)]
        let failure = try #require(CertificateTransparencyRule(verifying: true).evaluate(Self.facts([], scts: scts)).failure)
        #expect(failure.message.hasPrefix("certificate for api.example.com has SCTs from 1 distinct log (3 x509),"
            + " 1 failing verification against the log list, 1 from logs that do not count: StartCom log (rejected);"),
                "\(failure.message)")
    }

    @Test("Apple's lifetime: notBefore through notAfter inclusive, any part of a day a day", arguments: [
        (7_775_999, 90), (7_776_000, 91), (15_551_999, 180), (31_536_000, 366),
    ] as [(TimeInterval, Int)])
    func lifetimeDays(seconds: TimeInterval, days: Int) {
        #expect(CertificateTransparencyRule.lifetimeDays(seconds) == days)
    }

    @Test("leaves issued before 2021-04-21 get Apple's earlier table, by months", arguments: [
        (365.0, 2), (600, 3), (900, 4), (1200, 5),
    ])
    func earlierTable(days: Double, logs: Int) {
        let notBefore = Date(timeIntervalSince1970: 1_577_836_800)  // 2020-01-01
        let requirement = CertificateTransparencyRule.requirement(notBefore: notBefore, lifetime: days * Self.day)
        #expect(requirement.logs == logs)
        #expect(requirement.perOperator == nil)
    }
}
