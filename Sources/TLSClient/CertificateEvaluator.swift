import ATSPolicy
import COpenSSL
import Foundation
import Glibc

/// Judges a server's certificate chain by ATS's rules (R15) and NSPinnedDomains (R17).
///
/// OpenSSL only builds and verifies the chain (with its own time check off, so that trust and validity
/// period are reported separately); every other rule is ours, so a server is judged by ATS and not by
/// OpenSSL's security level.
public enum CertificateEvaluator {
    /// Evaluates `chain` (DER, leaf first, as the server sent it) for `host` (a name or an IP literal).
    /// Certificates after the leaf serve only as untrusted intermediates; roots come from `store`.
    public static func evaluate(chain: [[UInt8]], host: String, requirements: Requirements, pin: PinnedDomain?,
                                store: TrustStore, now: Date = Date()) -> CertificateVerdict {
        OpenSSLErrorQueue.clear()
        let tolerated = !requirements.certificateChecks
        var findings = Findings(host: host, tolerated: tolerated)
        guard let first = chain.first else {
            findings.add(.certificateUntrusted, "\(host) presented no certificate")
            return CertificateVerdict(host: host, findings: findings.list, leaf: nil, trusted: false, verifiedChain: [])
        }
        guard let leaf = X509Certificate(der: first) else {
            findings.add(.certificateUntrusted, "the certificate \(host) presented is not valid DER X.509")
            return CertificateVerdict(host: host, findings: findings.list, leaf: nil, trusted: false, verifiedChain: [])
        }
        let intermediates = chain.dropFirst().compactMap { X509Certificate(der: $0) }
        let verification = ChainVerification(leaf: leaf, intermediates: intermediates, store: store)
        let time = time_t(now.timeIntervalSince1970)

        if let problem = verification.failure {
            findings.add(.certificateUntrusted,
                         "certificate chain of \(host) does not lead to a trusted root: \(problem)"
                         + " (leaf \(leaf.subject), issuer \(leaf.issuer)); trust its CA (--ca-file)")
        }
        // The verified chain when there is one: an expired root the server also sent does not matter if a
        // valid root from the store completes the chain.
        let dated = verification.chain.isEmpty ? [leaf] + intermediates : verification.chain
        for (index, certificate) in dated.enumerated() {
            let which = index == 0 ? "certificate for \(host) (\(leaf.nameSummary))"
                                   : "\(certificate.isSelfIssued ? "root" : "intermediate") certificate \(certificate.subject)"
            if let problem = validityProblem(certificate, at: time) {
                findings.add(.certificateExpired, "\(which) \(problem)")
            }
        }
        if !leaf.matches(host: host) {
            findings.add(.certificateHostname,
                         "certificate for \(leaf.nameSummary) does not match host \(host)")
        }
        let key = leaf.publicKey
        if !keyIsStrongEnough(key) {
            findings.add(.certificateKeySize,
                         "certificate for \(host) has a \(key) key; ATS requires RSA of at least 2048 bits"
                         + " or ECC of at least 256 bits")
        }
        if !signatureHashIsStrongEnough(leaf.signatureDigest) {
            findings.add(.certificateSignatureHash,
                         "certificate for \(host) is signed with \(leaf.signatureAlgorithm); ATS requires a"
                         + " SHA-256 or stronger signature hash")
        }
        if let pin {
            for problem in pinProblems(pin, leaf: leaf, verified: verification.chain, host: host) {
                findings.pin(problem)
            }
        }
        OpenSSLErrorQueue.clear()
        return CertificateVerdict(host: host, findings: findings.list, leaf: summary(of: leaf),
                                  trusted: verification.failure == nil,
                                  verifiedChain: verification.chain.map(\.subject))
    }

    /// "expired on ..." / "is not valid until ...", or nil within the validity period.
    private static func validityProblem(_ certificate: X509Certificate, at time: time_t) -> String? {
        var now = time
        if X509_cmp_time(X509_get0_notAfter(certificate.pointer), &now) < 0 {
            return "expired on \(DateText.iso8601(certificate.notAfter))"
        }
        if X509_cmp_time(X509_get0_notBefore(certificate.pointer), &now) > 0 {
            return "is not valid until \(DateText.iso8601(certificate.notBefore))"
        }
        return nil
    }

    /// R15: RSA >= 2048 bits or ECC >= 256 bits; no other key type is named, so none passes.
    static func keyIsStrongEnough(_ key: PublicKeyFacts) -> Bool {
        switch key.kind {
        case .rsa: key.bits >= 2048
        case .ec: key.bits >= 256
        case .other: false
        }
    }

    /// R15: SHA-256 or stronger. SHA-224, SHA-1, MD5 and schemes without a separate digest fail.
    static func signatureHashIsStrongEnough(_ digest: Int32) -> Bool {
        [NID_sha256, NID_sha384, NID_sha512, NID_sha3_256, NID_sha3_384, NID_sha3_512].contains(digest)
    }

    /// R17: each identity array that is present needs one match; CA identities only count for
    /// certificates of the verified chain (an attacker can send any CA certificate alongside a leaf).
    private static func pinProblems(_ pin: PinnedDomain, leaf: X509Certificate, verified: [X509Certificate],
                                    host: String) -> [String] {
        var problems: [String] = []
        let entry = "NSPinnedDomains entry \(pin.key)"
        if let identities = pin.leafIdentities {
            let leafHash = Data(leaf.spkiSHA256)
            if !identities.contains(leafHash) {
                problems.append("no NSPinnedLeafIdentities value of the \(entry) matches the leaf key of \(host)"
                                + " (its SPKI-SHA256-BASE64 is \(leafHash.base64EncodedString()))")
            }
        }
        if let identities = pin.caIdentities {
            let authorities = verified.dropFirst()
            if authorities.isEmpty {
                problems.append("no NSPinnedCAIdentities value of the \(entry) can match: the certificate chain of"
                                + " \(host) does not lead to a trusted root")
            } else if !authorities.contains(where: { identities.contains(Data($0.spkiSHA256)) }) {
                let seen = authorities.map { "\($0.subject) \(Data($0.spkiSHA256).base64EncodedString())" }
                problems.append("no NSPinnedCAIdentities value of the \(entry) matches a CA of the verified chain of"
                                + " \(host) (CA keys: \(seen.joined(separator: "; ")))")
            }
        }
        return problems
    }

    private static func summary(of leaf: X509Certificate) -> CertificateSummary {
        CertificateSummary(subject: leaf.subject, issuer: leaf.issuer, key: leaf.publicKey,
                           signatureAlgorithm: leaf.signatureAlgorithm, notBefore: leaf.notBefore,
                           notAfter: leaf.notAfter, subjectAlternativeNames: leaf.subjectAlternativeNames,
                           spkiSHA256: Data(leaf.spkiSHA256).base64EncodedString())
    }

    /// Collects findings, marking R15 findings tolerated when the requirements allow cleartext.
    private struct Findings {
        let host: String
        let tolerated: Bool
        var list: [CertificateFinding] = []

        mutating func add(_ reason: BlockReason, _ problem: String) {
            let note = tolerated
                ? " (tolerated: cleartext is allowed for \(host), R15)"
                : " (ATS rejects it, R15; NSExceptionAllowsInsecureHTTPLoads=YES for \(host) would tolerate it)"
            list.append(CertificateFinding(reason: reason, message: problem + note, blocking: !tolerated))
        }

        /// Pins bind even where cleartext is allowed (R17).
        mutating func pin(_ problem: String) {
            list.append(CertificateFinding(reason: .certificatePin, message: problem + " (R17)", blocking: true))
        }
    }
}

/// OpenSSL's chain building against a trust store, without its time check.
private struct ChainVerification {
    /// OpenSSL's words for why no chain was built, e.g. "self-signed certificate"; nil when trusted.
    var failure: String?
    /// The chain built to a trusted root, leaf first; empty when none was.
    var chain: [X509Certificate] = []

    init(leaf: X509Certificate, intermediates: [X509Certificate], store: TrustStore) {
        guard let context = X509_STORE_CTX_new(), let untrusted = atsgate_sk_X509_new_null() else {
            failure = "out of memory"
            return
        }
        defer {
            X509_STORE_CTX_free(context)
            // The stack does not own the certificates: `intermediates` does, and outlives it.
            atsgate_sk_X509_free(untrusted)
        }
        for certificate in intermediates { atsgate_sk_X509_push(untrusted, certificate.pointer) }
        guard X509_STORE_CTX_init(context, store.pointer, leaf.pointer, untrusted) == 1 else {
            failure = "cannot set up verification: \(OpenSSLErrorQueue.drain().text)"
            return
        }
        X509_STORE_CTX_set_default(context, "ssl_server")
        X509_VERIFY_PARAM_set_flags(X509_STORE_CTX_get0_param(context), UInt(X509_V_FLAG_NO_CHECK_TIME))
        if X509_verify_cert(context) == 1 {
            if let built = X509_STORE_CTX_get0_chain(context) {
                chain = (0..<atsgate_sk_X509_num(built)).compactMap { index in
                    atsgate_sk_X509_value(built, index).map { X509Certificate(retaining: $0) }
                }
            }
        } else {
            let code = X509_STORE_CTX_get_error(context)
            let depth = X509_STORE_CTX_get_error_depth(context)
            let text = X509_verify_cert_error_string(Int(code)).map { String(cString: $0) } ?? "error \(code)"
            failure = depth > 0 ? "\(text) (at depth \(depth))" : text
        }
        OpenSSLErrorQueue.clear()
    }
}
