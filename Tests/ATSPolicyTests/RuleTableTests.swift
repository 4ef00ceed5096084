import ATSPolicy
import Foundation
import Testing

/// The TLS-level rules (R14-R18) as values: facts in, the rule's id, reason and words out. No sockets,
/// no OpenSSL.
@Suite struct RuleTableTests {
    static let day: TimeInterval = 86_400
    /// 2026-01-01, after both of Apple's cut-over dates.
    static let issued = Date(timeIntervalSince1970: 1_767_225_600)
    static let beforeSeptember2020 = Date(timeIntervalSince1970: 1_590_969_600) // 2020-06-01

    static func leaf(days: Double = 365, from notBefore: Date = issued, usages: [String]? = [ExtendedKeyUsage.serverAuth],
                     sans: [String] = ["DNS:api.example.com"], matches: Bool = true,
                     key: PublicKeyFacts = PublicKeyFacts(kind: .rsa, bits: 2048),
                     hash: SignatureHash = .sha256) -> CertificateChainFacts.Leaf {
        CertificateChainFacts.Leaf(subject: "CN=api.example.com", issuer: "CN=Test CA", nameSummary: "api.example.com",
                                   key: key, signatureHash: hash, signatureAlgorithm: "sha256WithRSAEncryption",
                                   notBefore: notBefore, notAfter: notBefore.addingTimeInterval(days * day),
                                   extendedKeyUsages: usages, subjectAlternativeNames: sans, matchesHost: matches,
                                   spkiSHA256: Data(repeating: 7, count: 32))
    }

    static func chain(_ leaf: CertificateChainFacts.Leaf?, anchor: TrustAnchor = .operator,
                      scts: [SCTFacts] = []) -> CertificateChainFacts {
        CertificateChainFacts(host: "api.example.com", leaf: leaf, anchor: anchor, scts: scts)
    }

    // MARK: R15a lifetime

    @Test("R15a lifetime: 825 days from any CA, 398 for system-store leaves issued from 2020-09-01", arguments: [
        (800.0, TrustAnchor.operator, issued, true),
        (825, .operator, issued, true),
        (826, .operator, issued, false),
        (1000, .operator, issued, false),
        (398, .system, issued, true),
        (399, .system, issued, false),
        (800, .system, issued, false),
        // Issued before 2020-09-01, a publicly trusted leaf still had 825 days.
        (800, .system, beforeSeptember2020, true),
        (826, .system, beforeSeptember2020, false),
    ])
    func lifetime(days: Double, anchor: TrustAnchor, issued: Date, passes: Bool) {
        let result = LifetimeRule().evaluate(Self.chain(Self.leaf(days: days, from: issued), anchor: anchor))
        #expect(result.passed == passes)
        if let failure = result.failure {
            #expect(failure.rule == .r15a)
            #expect(failure.reason == .certificateLifetime)
            #expect(failure.message.contains("is valid for \(Int(days)) days"), "\(failure.message)")
            #expect(failure.message.contains(anchor == .system && issued == Self.issued ? "at most 398 days" : "at most 825 days"))
        }
    }

    // MARK: R15a extended key usage

    @Test("R15a usage: serverAuth when the extension is present; anyExtendedKeyUsage accepted", arguments: [
        ([ExtendedKeyUsage.serverAuth], true),
        ([ExtendedKeyUsage.clientAuth, ExtendedKeyUsage.serverAuth], true),
        ([ExtendedKeyUsage.any], true),
        ([ExtendedKeyUsage.clientAuth], false),
        (["1.3.6.1.5.5.7.3.3"], false),
        ([], false),
    ] as [([String], Bool)])
    func usage(usages: [String], passes: Bool) {
        let result = ExtendedKeyUsageRule().evaluate(Self.chain(Self.leaf(usages: usages)))
        #expect(result.passed == passes)
        if let failure = result.failure {
            #expect(failure.rule == .r15a)
            #expect(failure.reason == .certificateUsage)
            #expect(failure.message.contains("without serverAuth"))
        }
    }

    @Test func aLeafWithoutExtendedKeyUsagePasses() {
        #expect(ExtendedKeyUsageRule().evaluate(Self.chain(Self.leaf(usages: nil))).passed)
    }

    @Test func clientAuthOnlyIsNamedInTheMessage() throws {
        let failure = try #require(ExtendedKeyUsageRule().evaluate(Self.chain(Self.leaf(usages: [ExtendedKeyUsage.clientAuth]))).failure)
        #expect(failure.message.contains("extended key usage of clientAuth without serverAuth"))
    }

    // MARK: names

    @Test("R15a/R15 names: a leaf without SAN fails R15a; a SAN that does not match fails R15", arguments: [
        ([String](), false, RuleID?.some(.r15a)),
        (["DNS:other.example"], false, .r15),
        (["DNS:api.example.com"], true, nil),
    ])
    func names(sans: [String], matches: Bool, rule: RuleID?) {
        let facts = Self.chain(Self.leaf(sans: sans, matches: matches))
        let rules = AllRules<CertificateChainFacts>([SubjectAltNameRule(), HostNameRule()])
        let failures = rules.failures(facts)
        #expect(failures.map(\.rule) == (rule.map { [$0] } ?? []), "exactly one rule names a name problem")
        #expect(failures.allSatisfy { $0.reason == .certificateHostname })
        if rule == .r15a { #expect(failures.first?.message.contains("has no subjectAltName") == true) }
    }

    // MARK: R15 key and hash

    @Test("R15 key size", arguments: [
        (PublicKeyFacts(kind: .rsa, bits: 2048), true),
        (PublicKeyFacts(kind: .rsa, bits: 1024), false),
        (PublicKeyFacts(kind: .ec(curve: "P-256"), bits: 256), true),
        (PublicKeyFacts(kind: .ec(curve: "P-224"), bits: 224), false),
        (PublicKeyFacts(kind: .other("ED25519"), bits: 256), false),
    ])
    func keySize(key: PublicKeyFacts, passes: Bool) {
        let result = KeySizeRule().evaluate(Self.chain(Self.leaf(key: key)))
        #expect(result.passed == passes)
        #expect(result.failure.map { $0.reason == .certificateKeySize && $0.rule == .r15 } ?? true)
    }

    @Test("R15 signature hash", arguments: [
        (SignatureHash.sha256, true), (.sha384, true), (.sha512, true), (.sha3_256, true),
        (.sha224, false), (.sha1, false), (.md5, false), (.none, false),
    ])
    func signatureHash(hash: SignatureHash, passes: Bool) {
        let result = SignatureHashRule().evaluate(Self.chain(Self.leaf(hash: hash)))
        #expect(result.passed == passes)
        #expect(result.failure.map { $0.reason == .certificateSignatureHash } ?? true)
    }

    // MARK: R15 validity period

    @Test func validityPeriodNamesTheCertificateAndDate() throws {
        let dated = DatedCertificate(label: "certificate for api.example.com", subject: "CN=api.example.com",
                                     notBefore: Self.issued, notAfter: Self.issued.addingTimeInterval(Self.day))
        #expect(ValidityPeriodRule(now: Self.issued.addingTimeInterval(3600)).evaluate(dated).passed)
        let expired = try #require(ValidityPeriodRule(now: Self.issued.addingTimeInterval(2 * Self.day)).evaluate(dated).failure)
        #expect(expired.message == "certificate for api.example.com expired on 2026-01-02T00:00:00Z")
        let early = try #require(ValidityPeriodRule(now: Self.beforeSeptember2020).evaluate(dated).failure)
        #expect(early.message == "certificate for api.example.com is not valid until 2026-01-01T00:00:00Z")
        #expect(early.rule == .r15 && early.reason == .certificateExpired)
    }

    // MARK: R16

    static func sct(_ log: UInt8, _ source: SCTFacts.Source = .embedded, verified: Bool? = nil) -> SCTFacts {
        SCTFacts(logID: [UInt8](repeating: log, count: 32), source: source, verified: verified)
    }

    @Test("R16: distinct logs against 2 (<= 180 days) or 3", arguments: [
        (365.0, [sct(1), sct(2), sct(3)], true),
        (365, [sct(1), sct(2)], false),
        (365, [sct(1), sct(1), sct(2)], false),            // two SCTs of one log count once
        (365, [sct(1), sct(2, .tlsExtension), sct(3, .ocsp)], true), // every source counts
        // Apple counts notBefore through notAfter inclusive: exactly 180 days apart is 180 days and a second.
        (179.999, [sct(1), sct(2)], true),
        (180, [sct(1), sct(2)], false),
        (181, [sct(1), sct(2)], false),
        (90, [sct(1)], false),
        (365, [sct(1, verified: true), sct(2, verified: true), sct(3, verified: false)], false),
        (365, [sct(1, verified: true), sct(2, verified: true), sct(3, verified: true)], true),
    ])
    func transparency(days: Double, scts: [SCTFacts], passes: Bool) {
        let facts = Self.chain(Self.leaf(days: days), anchor: .system, scts: scts)
        let result = CertificateTransparencyRule(verifying: false).evaluate(facts)
        #expect(result.passed == passes)
        #expect(result.failure.map { $0.rule == .r16 && $0.reason == .certificateTransparency } ?? true)
    }

    @Test("R16 applies only to publicly trusted leaves issued after 2018-10-15")
    func transparencyScope() throws {
        let operatorLeaf = Self.chain(Self.leaf(), anchor: .operator)
        #expect(CertificateTransparencyRule(verifying: false).evaluate(operatorLeaf).passed)
        let old = Self.chain(Self.leaf(days: 700, from: Date(timeIntervalSince1970: 1_500_000_000)), anchor: .system)
        #expect(CertificateTransparencyRule(verifying: false).evaluate(old).passed)
        let failure = try #require(CertificateTransparencyRule(verifying: false)
            .evaluate(Self.chain(Self.leaf(), anchor: .system, scts: [Self.sct(1)])).failure)
        #expect(failure.message.contains("SCTs from 1 distinct log (1 x509)"), "\(failure.message)")
        #expect(failure.message.contains("counted, not verified"))
    }

    // MARK: R18

    @Test("R18: TLS 1.2 needs the extended master secret; TLS 1.3 always passes", arguments: [
        (UInt16(0x0303), UInt16(0xC02F), true, nil as BlockReason?),
        (0x0303, 0xC02F, false, .extendedMasterSecret),
        (0x0304, 0x1301, false, nil),
        (0x0301, 0xC013, true, .tlsVersion),
        (0x0303, 0x002F, true, .cipherSuite),
    ])
    func systemConnections(version: UInt16, suite: UInt16, ems: Bool, reason: BlockReason?) {
        let facts = HandshakeFacts(version: version, cipherSuite: suite, extendedMasterSecret: ems, host: "mdm.example.com")
        let failure = SystemConnectionRule().evaluate(facts).failure
        #expect(failure?.reason == reason)
        if let failure {
            #expect(failure.rule == .r18)
            #expect(!failure.message.contains("NSException"), "no ATS key changes a system connection: \(failure.message)")
        }
    }

    @Test func extendedMasterSecretMessageNamesTheExtension() throws {
        let facts = HandshakeFacts(version: 0x0303, cipherSuite: 0xC02F, host: "mdm.example.com")
        let failure = try #require(ExtendedMasterSecretRule().evaluate(facts).failure)
        #expect(failure.message.hasPrefix("mdm.example.com negotiated TLSv1.2 without the extended master secret"))
    }

    // MARK: composites

    @Test func aCompositeStopsAtTheFirstFailureAndPassesItThrough() throws {
        let facts = HandshakeFacts(version: 0x0301, cipherSuite: 0x002F, host: "h")
        let failure = try #require(Requirements.full.handshakeRules.evaluate(facts).failure)
        #expect(failure.reason == .tlsVersion, "the version is checked before the suite")
        #expect(Requirements.full.handshakeRules.failures(facts).map(\.reason) == [.tlsVersion, .cipherSuite])
        #expect(AllRules<HandshakeFacts>([]).evaluate(facts).passed)
    }

    @Test func certificateFindingsNameTheirRuleAndAreToleratedWithCleartext() throws {
        let facts = Self.chain(Self.leaf(days: 1000, usages: [ExtendedKeyUsage.clientAuth]))
        let strict = CertificateRules(.ats(.full), now: Self.issued).findings(facts)
        #expect(strict.map(\.reason) == [.certificateLifetime, .certificateUsage])
        #expect(strict.allSatisfy { $0.blocking && $0.rule == .r15a })
        #expect(strict[0].message.hasSuffix("(ATS rejects it, R15a; NSExceptionAllowsInsecureHTTPLoads=YES for api.example.com would tolerate it)"))
        let relaxed = CertificateRules(.ats(.none), now: Self.issued).findings(facts)
        #expect(relaxed.allSatisfy { !$0.blocking })
        #expect(relaxed[0].message.hasSuffix("(tolerated: cleartext is allowed for api.example.com, R15a)"))
        let system = CertificateRules(.system, now: Self.issued).findings(facts)
        #expect(system.allSatisfy { $0.blocking && $0.message.contains("R18") })
    }

    @Test func aMessageIsBuiltOnlyWhenRead() {
        final class Counter: @unchecked Sendable { var count = 0 }
        let counter = Counter()
        let failure = RuleFailure(.r15, .certificateExpired) { counter.count += 1; return "x" }
        #expect(counter.count == 0)
        _ = failure.message
        #expect(counter.count == 1)
    }
}
