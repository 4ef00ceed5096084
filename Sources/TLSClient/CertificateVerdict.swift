import ATSPolicy
import Foundation

/// The leaf certificate as a person reads it.
public struct CertificateSummary: Sendable, Equatable {
    /// RFC 2253 order, e.g. "CN=localhost,O=atsgate test".
    public var subject: String
    public var issuer: String
    public var key: PublicKeyFacts
    /// OpenSSL's long name, e.g. "sha256WithRSAEncryption".
    public var signatureAlgorithm: String
    public var notBefore: Date?
    public var notAfter: Date?
    /// "DNS:localhost", "IP:127.0.0.1", in certificate order.
    public var subjectAlternativeNames: [String]
    /// Base64 SHA-256 of the SubjectPublicKeyInfo, as NSPinnedLeafIdentities spells it.
    public var spkiSHA256: String
    /// The extendedKeyUsage OIDs; nil when the extension is absent.
    public var extendedKeyUsages: [String]?
}

/// What the certificate rules found for one chain and host.
public struct CertificateVerdict: Sendable {
    /// The host the chain was judged for.
    public var host: String
    /// In check order: trust, validity period, names, key size, signature hash, lifetime, usage, CT, pins.
    public var findings: [CertificateFinding]
    /// nil when the server sent no parsable certificate.
    public var leaf: CertificateSummary?
    /// The chain led to a trusted root.
    public var trusted: Bool
    /// Where the chain ends: the system store, an operator's CA file, or nowhere trusted.
    public var anchor: TrustAnchor
    /// Subjects of the chain OpenSSL built to a trusted root, leaf first; empty when not trusted.
    public var verifiedChain: [String]
    /// The facts the rules judged.
    public var facts: CertificateChainFacts
    /// Every caIssuers fetch made to complete the chain (from the cache or the network), in order.
    public var aiaFetches: [AIAFetch]
    /// When the chain is untrusted because a certificate's issuer is missing: that certificate's
    /// caIssuers http:// URLs. Non-empty after an evaluation without `aia` means one with it may
    /// complete the chain (a caller can judge on a CPU pool first, and fetch on a network pool only then).
    public var missingIssuerURLs: [String]

    public init(facts: CertificateChainFacts, findings: [CertificateFinding], aiaFetches: [AIAFetch] = [],
                missingIssuerURLs: [String] = []) {
        self.facts = facts
        self.findings = findings
        self.aiaFetches = aiaFetches
        self.missingIssuerURLs = missingIssuerURLs
        host = facts.host
        trusted = facts.anchor.isTrusted
        anchor = facts.anchor
        verifiedChain = facts.anchor.isTrusted ? facts.dated.map(\.subject) : []
        leaf = facts.leaf.map { leaf in
            CertificateSummary(subject: leaf.subject, issuer: leaf.issuer, key: leaf.key,
                               signatureAlgorithm: leaf.signatureAlgorithm, notBefore: leaf.notBefore,
                               notAfter: leaf.notAfter, subjectAlternativeNames: leaf.subjectAlternativeNames,
                               spkiSHA256: leaf.spkiSHA256.base64EncodedString(),
                               extendedKeyUsages: leaf.extendedKeyUsages)
        }
    }

    /// The finding that decides the verdict, if any.
    public var blockingFinding: CertificateFinding? { findings.first(where: \.blocking) }

    /// The record's `certificate_depth`: the certificate the deciding finding is about (0 = the leaf),
    /// else the first finding's; nil when no finding is about one certificate.
    public var certificateDepth: Int? { (blockingFinding ?? findings.first)?.depth }

    /// The record's `aia_fetched`: the caIssuers URLs whose answers gave certificates, space-separated
    /// in fetch order (one, nearly always); nil when the chain needed none.
    public var aiaFetched: String? {
        let fetched = aiaFetches.filter { !$0.certificates.isEmpty }.map(\.url)
        return fetched.isEmpty ? nil : fetched.joined(separator: " ")
    }

    /// The date-based distrust that refuses the chain (`certificate-distrusted`, DistrustRule), if any.
    public var distrust: ChainCertificate.Distrust? {
        guard let notBefore = facts.leaf?.notBefore else { return nil }
        return facts.chain.first { $0.depth > 0 && $0.distrust.map { notBefore >= $0.from } == true }?.distrust
    }

    /// Findings reported but tolerated under the requirements.
    public var toleratedFindings: [CertificateFinding] { findings.filter { !$0.blocking } }
}
