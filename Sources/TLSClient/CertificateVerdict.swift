import ATSPolicy
import Foundation

/// One thing wrong with a server's certificate (R15, R17).
public struct CertificateFinding: Sendable, Equatable {
    /// One of the certificate-* codes.
    public var reason: BlockReason
    /// Names the host and what is wrong, and what would change the outcome.
    public var message: String
    /// false when the requirements tolerate the finding (cleartext allowed, R15); pin failures always block.
    public var blocking: Bool

    public init(reason: BlockReason, message: String, blocking: Bool) {
        self.reason = reason
        self.message = message
        self.blocking = blocking
    }
}

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
}

/// What the evaluator found for one chain and host.
public struct CertificateVerdict: Sendable {
    /// The host the chain was judged for.
    public var host: String
    /// In check order: trust, validity period, name, key size, signature hash, pins.
    public var findings: [CertificateFinding]
    /// nil when the server sent no parsable certificate.
    public var leaf: CertificateSummary?
    /// The chain led to a trusted root.
    public var trusted: Bool
    /// Subjects of the chain OpenSSL built to a trusted root, leaf first; empty when not trusted.
    public var verifiedChain: [String]

    /// The finding that decides the verdict, if any.
    public var blockingFinding: CertificateFinding? { findings.first(where: \.blocking) }

    /// Findings reported but tolerated under the requirements.
    public var toleratedFindings: [CertificateFinding] { findings.filter { !$0.blocking } }
}
