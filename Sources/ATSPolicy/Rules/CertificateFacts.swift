import Foundation

/// A certificate's public key: algorithm and size.
public struct PublicKeyFacts: Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        case rsa
        /// An elliptic-curve key on the named curve ("P-256").
        case ec(curve: String)
        case other(String)
    }

    public var kind: Kind
    public var bits: Int

    public init(kind: Kind, bits: Int) {
        self.kind = kind
        self.bits = bits
    }

    /// "RSA-2048", "EC-P-256", "ED25519-256".
    public var description: String {
        switch kind {
        case .rsa: "RSA-\(bits)"
        case .ec(let curve): "EC-\(curve)"
        case .other(let name): "\(name)-\(bits)"
        }
    }
}

/// The digest an issuer signed a certificate with.
public enum SignatureHash: Sendable, Equatable {
    case sha256, sha384, sha512, sha3_256, sha3_384, sha3_512
    case sha224, sha1, md5
    /// A scheme without a separate digest (Ed25519), or one this list does not name.
    case none

    /// R15: SHA-256 or stronger.
    public var isStrongEnough: Bool {
        switch self {
        case .sha256, .sha384, .sha512, .sha3_256, .sha3_384, .sha3_512: true
        case .sha224, .sha1, .md5, .none: false
        }
    }
}

/// Where the verified chain ends (R15, R15a, R16).
public enum TrustAnchor: Sendable, Equatable {
    /// A root of the judged trust store (Apple's, a directory in its layout, or the host's bundle):
    /// publicly trusted, so the 398-day and CT rules apply.
    case system
    /// A root the operator configured (`--ca-file`): "installed by the user or a system administrator".
    case `operator`
    /// No chain to a trusted root; OpenSSL's words for why, e.g. "self-signed certificate".
    case untrusted(String)

    public var isTrusted: Bool {
        if case .untrusted = self { return false }
        return true
    }
}

/// One signed certificate timestamp the server presented (R16).
public struct SCTFacts: Sendable, Equatable {
    /// Where it came from.
    public enum Source: String, Sendable, CaseIterable {
        case embedded = "x509"
        case tlsExtension = "tls-extension"
        case ocsp = "ocsp"
    }

    /// The 32-byte log id (SHA-256 of the log's key).
    public var logID: [UInt8]
    public var source: Source
    /// With a log list: whether the log is known and its signature over the certificate verifies;
    /// nil when nothing was verified (no log list).
    public var verified: Bool?
    /// The log as the log list describes it; nil without a log list, or for a log it does not name.
    public var log: CTLogFacts?
    /// When the log signed it.
    public var timestamp: Date?

    public init(logID: [UInt8], source: Source, verified: Bool? = nil, log: CTLogFacts? = nil, timestamp: Date? = nil) {
        self.logID = logID
        self.source = source
        self.verified = verified
        self.log = log
        self.timestamp = timestamp
    }
}

/// A CT log of the log list, as R16 counts its SCTs (Apple support 103214 and 103703).
public struct CTLogFacts: Sendable, Equatable {
    /// Whether an SCT of this log counts, given the log's state when the SCT was checked.
    public enum Standing: Sendable, Equatable {
        /// Qualified, usable or read-only: a currently approved log.
        case approved
        /// Retired after the SCT was issued: a once-approved log.
        case onceApproved
        /// Pending, rejected, retired before the SCT, or a state atsgate does not know: the state's name,
        /// with "before the SCT" for a retired log.
        case notCounted(String)

        public var counts: Bool {
            if case .notCounted = self { return false }
            return true
        }
    }

    /// "Google 'Argon2026h1'".
    public var description: String
    /// The operator as the list names it ("Google"): Apple counts at most so many SCTs per operator.
    public var operatorName: String
    public var standing: Standing
    /// A log of RFC 6962 (the list's `logs`), not a static-ct-api log (`tiled_logs`): Apple needs at
    /// least one SCT from an RFC 6962 log.
    public var rfc6962: Bool

    public init(description: String, operatorName: String, standing: Standing, rfc6962: Bool = true) {
        self.description = description
        self.operatorName = operatorName
        self.standing = standing
        self.rfc6962 = rfc6962
    }
}

/// One certificate of the chain as R15 judges every certificate (support article 103769: "TLS server
/// certificates and issuing CAs"): its key, the hash its issuer signed it with, and its identity.
public struct ChainCertificate: Sendable, Equatable {
    /// A CA the trust store distrusts for leaves issued from a date (R15, `certificate-distrusted`).
    public struct Distrust: Sendable, Equatable {
        /// The CA as its announcement names it ("Entrust Root Certification Authority - G2").
        public var name: String
        /// Leaves whose notBefore is at or after this instant are refused.
        public var from: Date
        /// Where the distrust was announced (an Apple support article).
        public var source: String

        public init(name: String, from: Date, source: String) {
            self.name = name
            self.from = from
            self.source = source
        }
    }

    /// 0 for the leaf, then each issuer in turn up to the anchor.
    public var depth: Int
    /// RFC 2253.
    public var subject: String
    public var key: PublicKeyFacts
    public var signatureHash: SignatureHash
    /// OpenSSL's long name, e.g. "sha1WithRSAEncryption".
    public var signatureAlgorithm: String
    /// The trust anchor that ends a verified chain: its own self-signature is not judged (R15).
    public var isAnchor: Bool
    /// SHA-256 of the DER certificate and of its SubjectPublicKeyInfo.
    public var sha256: Data
    public var spkiSHA256: Data
    /// Set when the trust store distrusts this CA for leaves issued from a date.
    public var distrust: Distrust?

    public init(depth: Int, subject: String, key: PublicKeyFacts, signatureHash: SignatureHash,
                signatureAlgorithm: String, isAnchor: Bool = false, sha256: Data = Data(), spkiSHA256: Data = Data(),
                distrust: Distrust? = nil) {
        self.depth = depth
        self.subject = subject
        self.key = key
        self.signatureHash = signatureHash
        self.signatureAlgorithm = signatureAlgorithm
        self.isAnchor = isAnchor
        self.sha256 = sha256
        self.spkiSHA256 = spkiSHA256
        self.distrust = distrust
    }

    /// How messages name it: "certificate for api.example.com", "intermediate certificate CN=...
    /// (depth 1)", "root certificate CN=... (depth 2)".
    func label(host: String) -> String {
        if depth == 0 { return "certificate for \(host)" }
        return "\(isAnchor ? "root" : "intermediate") certificate \(subject) (depth \(depth))"
    }
}

/// OIDs of the extended key usages R15a names.
public enum ExtendedKeyUsage {
    public static let serverAuth = "1.3.6.1.5.5.7.3.1"
    public static let clientAuth = "1.3.6.1.5.5.7.3.2"
    public static let any = "2.5.29.37.0"

    /// How messages name an OID.
    static func name(_ oid: String) -> String {
        switch oid {
        case serverAuth: "serverAuth"
        case clientAuth: "clientAuth"
        case any: "anyExtendedKeyUsage"
        case "1.3.6.1.5.5.7.3.3": "codeSigning"
        case "1.3.6.1.5.5.7.3.4": "emailProtection"
        case "1.3.6.1.5.5.7.3.8": "timeStamping"
        case "1.3.6.1.5.5.7.3.9": "OCSPSigning"
        default: oid
        }
    }
}

/// One certificate's validity period, with the words messages use for it.
public struct DatedCertificate: Sendable, Equatable {
    /// "certificate for localhost (localhost, 127.0.0.1)", "intermediate certificate CN=...".
    public var label: String
    /// RFC 2253 subject.
    public var subject: String
    public var notBefore: Date?
    public var notAfter: Date?

    public init(label: String, subject: String, notBefore: Date?, notAfter: Date?) {
        self.label = label
        self.subject = subject
        self.notBefore = notBefore
        self.notAfter = notAfter
    }
}

/// Everything the certificate rules (R15, R15a, R16, R17) judge, extracted from a chain by TLSClient.
/// Plain values: a table test can write them by hand.
public struct CertificateChainFacts: Sendable {
    /// The host the chain is judged for (a name, or an IP literal without brackets).
    public var host: String
    /// The leaf; nil when the server sent no certificate, or none that parses (`leafProblem` says which).
    public var leaf: Leaf?
    /// Why there is no leaf, as a sentence: "api.example.com presented no certificate".
    public var leafProblem: String?
    public var anchor: TrustAnchor
    /// The verified chain (or, when untrusted, the chain as sent), leaf first, with validity periods.
    public var dated: [DatedCertificate]
    /// SHA-256 SPKI digests of the verified chain's CA certificates (empty when untrusted): R17's CA pins
    /// count only for certificates of the verified chain.
    public var authoritySPKIs: [(subject: String, digest: Data)]
    /// SCTs from every source (R16).
    public var scts: [SCTFacts]
    /// Every certificate of the verified chain (or, when untrusted, of the chain as sent), leaf
    /// first: key size and signature hash are judged on each (R15).
    public var chain: [ChainCertificate]
    /// With an untrusted anchor: the depth of the certificate at which chain building failed, when
    /// OpenSSL said.
    public var untrustedDepth: Int?

    public struct Leaf: Sendable {
        /// RFC 2253, e.g. "CN=localhost,O=atsgate test".
        public var subject: String
        public var issuer: String
        /// The leaf's names for messages: its SANs, else its subject.
        public var nameSummary: String
        public var key: PublicKeyFacts
        public var signatureHash: SignatureHash
        /// OpenSSL's long name, e.g. "sha256WithRSAEncryption".
        public var signatureAlgorithm: String
        public var notBefore: Date?
        public var notAfter: Date?
        /// OIDs of the extendedKeyUsage extension; nil when the extension is absent.
        public var extendedKeyUsages: [String]?
        /// DNS and IP names of subjectAltName ("DNS:localhost", "IP:127.0.0.1").
        public var subjectAlternativeNames: [String]
        /// The SANs name the host (matched by SAN only: never the CN).
        public var matchesHost: Bool
        public var spkiSHA256: Data

        public init(subject: String, issuer: String, nameSummary: String, key: PublicKeyFacts,
                    signatureHash: SignatureHash, signatureAlgorithm: String, notBefore: Date?, notAfter: Date?,
                    extendedKeyUsages: [String]?, subjectAlternativeNames: [String], matchesHost: Bool,
                    spkiSHA256: Data) {
            self.subject = subject
            self.issuer = issuer
            self.nameSummary = nameSummary
            self.key = key
            self.signatureHash = signatureHash
            self.signatureAlgorithm = signatureAlgorithm
            self.notBefore = notBefore
            self.notAfter = notAfter
            self.extendedKeyUsages = extendedKeyUsages
            self.subjectAlternativeNames = subjectAlternativeNames
            self.matchesHost = matchesHost
            self.spkiSHA256 = spkiSHA256
        }

        /// notAfter - notBefore, in seconds; nil when a date is missing.
        public var lifetime: TimeInterval? {
            guard let notBefore, let notAfter else { return nil }
            return notAfter.timeIntervalSince(notBefore)
        }
    }

    public init(host: String, leaf: Leaf?, leafProblem: String? = nil, anchor: TrustAnchor,
                dated: [DatedCertificate] = [], authoritySPKIs: [(subject: String, digest: Data)] = [],
                scts: [SCTFacts] = [], chain: [ChainCertificate] = [], untrustedDepth: Int? = nil) {
        self.host = host
        self.leaf = leaf
        self.leafProblem = leafProblem
        self.anchor = anchor
        self.dated = dated
        self.authoritySPKIs = authoritySPKIs
        self.scts = scts
        self.chain = chain
        self.untrustedDepth = untrustedDepth
    }

    /// The certificates R15's key and hash rules judge: the chain, or the leaf alone when a table
    /// test gave no chain.
    var judgedChain: [ChainCertificate] {
        if !chain.isEmpty { return chain }
        guard let leaf else { return [] }
        return [ChainCertificate(depth: 0, subject: leaf.subject, key: leaf.key, signatureHash: leaf.signatureHash,
                                 signatureAlgorithm: leaf.signatureAlgorithm, spkiSHA256: leaf.spkiSHA256)]
    }
}
