import ATSPolicy
import COpenSSL
import Foundation
import Glibc

/// Extracts the facts of a server's certificate chain for ATS's certificate rules (R15, R15a, R16, R17),
/// and asks the rules (`CertificateRules`, in ATSPolicy) for the verdict.
///
/// OpenSSL only parses, builds and verifies the chain (with its own time check off, so that trust and
/// validity period are reported separately); every judgement is a rule's, so a server is judged by
/// ATS and not by OpenSSL's security level. A chain that lacks an issuer is completed from the
/// caIssuers URL of the certificate missing it when `aia` is given, as the device completes it; that
/// fetch blocks (up to the fetcher's timeout per URL), so call this off the event loops.
public enum CertificateEvaluator {
    /// Evaluates `chain` (DER, leaf first, as the server sent it) for `host` (a name or an IP literal).
    /// Certificates after the leaf serve only as untrusted intermediates; roots come from `store`.
    /// `transparency` adds R16; `presentedSCTs` are the SCTs the handshake carried besides the embedded
    /// ones (the TLS extension, a stapled OCSP response). `aia` fetches a missing issuer.
    public static func evaluate(chain: [[UInt8]], host: String, requirements: Requirements, pin: PinnedDomain?,
                                store: TrustStore, now: Date = Date(), transparency: TransparencyCheck? = nil,
                                presentedSCTs: [PresentedSCT] = [], aia: AIAFetcher? = nil) -> CertificateVerdict {
        let rules = CertificateRules(.ats(requirements), pin: pin, now: now,
                                     transparency: transparency?.rule)
        return evaluate(chain: chain, host: host, rules: rules, store: store, transparency: transparency,
                        presentedSCTs: presentedSCTs, aia: aia)
    }

    /// Evaluates `chain` under an explicit rule set (R18's system connections use `.system`).
    public static func evaluate(chain: [[UInt8]], host: String, rules: CertificateRules, store: TrustStore,
                                transparency: TransparencyCheck? = nil,
                                presentedSCTs: [PresentedSCT] = [], aia: AIAFetcher? = nil) -> CertificateVerdict {
        let extracted = extract(chain: chain, host: host, store: store, transparency: transparency,
                                presentedSCTs: presentedSCTs, now: rules.now, aia: aia)
        return CertificateVerdict(facts: extracted.facts, findings: rules.findings(extracted.facts),
                                  aiaFetches: extracted.fetches, missingIssuerURLs: extracted.missingIssuerURLs)
    }

    /// The facts of `chain` for `host`: what the rules judge, with no judgement made.
    public static func facts(chain: [[UInt8]], host: String, store: TrustStore, transparency: TransparencyCheck? = nil,
                             presentedSCTs: [PresentedSCT] = [], now: Date = Date(),
                             aia: AIAFetcher? = nil) -> CertificateChainFacts {
        extract(chain: chain, host: host, store: store, transparency: transparency, presentedSCTs: presentedSCTs,
                now: now, aia: aia).facts
    }

    /// How many times a chain is completed from caIssuers URLs, one missing issuer each time: a leaf,
    /// its intermediate and a cross-sign are the longest chains seen in practice.
    static let maximumAIARounds = 3

    private static func extract(chain: [[UInt8]], host: String, store: TrustStore, transparency: TransparencyCheck?,
                                presentedSCTs: [PresentedSCT], now: Date, aia: AIAFetcher?)
        -> (facts: CertificateChainFacts, fetches: [AIAFetch], missingIssuerURLs: [String]) {
        OpenSSLErrorQueue.clear()
        defer { OpenSSLErrorQueue.clear() }
        guard let first = chain.first else {
            return (CertificateChainFacts(host: host, leaf: nil, leafProblem: "\(host) presented no certificate",
                                          anchor: .untrusted("no certificate")), [], [])
        }
        guard let leaf = X509Certificate(der: first) else {
            return (CertificateChainFacts(host: host, leaf: nil,
                                          leafProblem: "the certificate \(host) presented is not valid DER X.509",
                                          anchor: .untrusted("not DER")), [], [])
        }
        var intermediates = chain.dropFirst().compactMap { X509Certificate(der: $0) }
        var verification = ChainVerification(leaf: leaf, intermediates: intermediates, store: store)
        var fetches: [AIAFetch] = []
        if let aia {
            var tried = Set<String>()
            for _ in 0..<maximumAIARounds {
                guard let missing = verification.lacksIssuerOf, store.constrainedIssuer(of: missing) == nil else { break }
                let urls = missing.caIssuerURLs.filter { !tried.contains($0) }
                var found: [X509Certificate] = []
                for url in urls {
                    tried.insert(url)
                    let fetch = aia.fetch(url)
                    fetches.append(fetch)
                    found = fetch.certificates.compactMap { X509Certificate(der: $0) }
                    if !found.isEmpty { break }
                }
                guard !found.isEmpty else { break }
                intermediates += found
                verification = ChainVerification(leaf: leaf, intermediates: intermediates, store: store)
            }
        }
        let anchor: TrustAnchor
        var missingIssuerURLs: [String] = []
        if let failure = verification.failure {
            var problem = failure
            if let current = verification.failedAt, let constrained = store.constrainedIssuer(of: current) {
                problem = constrained
            } else if let missing = verification.lacksIssuerOf {
                problem += Self.aiaNote(missing: missing, fetches: fetches, fetching: aia != nil)
                missingIssuerURLs = missing.caIssuerURLs.filter { $0.lowercased().hasPrefix("http://") }
            }
            anchor = .untrusted(problem)
        } else {
            anchor = store.anchor(of: verification.chain)
        }
        // The verified chain when there is one: an expired root the server also sent does not matter if a
        // valid root from the store completes the chain.
        let trusted = !verification.chain.isEmpty
        let judged = trusted ? verification.chain : [leaf] + intermediates
        let dated = judged.enumerated().map { index, certificate in
            DatedCertificate(label: index == 0 ? "certificate for \(host) (\(leaf.nameSummary))"
                                 : "\(certificate.isSelfIssued ? "root" : "intermediate") certificate \(certificate.subject)",
                             subject: certificate.subject, notBefore: certificate.notBefore, notAfter: certificate.notAfter)
        }
        let certificates = judged.enumerated().map { depth, certificate in
            ChainCertificate(depth: depth, subject: certificate.subject, key: certificate.publicKey,
                             signatureHash: certificate.signatureHash, signatureAlgorithm: certificate.signatureAlgorithm,
                             isAnchor: trusted && depth == judged.count - 1, sha256: Data(certificate.sha256),
                             spkiSHA256: Data(certificate.spkiSHA256),
                             distrust: depth == 0 ? nil : store.distrust(of: certificate))
        }
        let leafFacts = CertificateChainFacts.Leaf(
            subject: leaf.subject, issuer: leaf.issuer, nameSummary: leaf.nameSummary, key: leaf.publicKey,
            signatureHash: leaf.signatureHash, signatureAlgorithm: leaf.signatureAlgorithm,
            notBefore: leaf.notBefore, notAfter: leaf.notAfter, extendedKeyUsages: leaf.extendedKeyUsages,
            subjectAlternativeNames: leaf.subjectAlternativeNames, matchesHost: leaf.matches(host: host),
            spkiSHA256: Data(leaf.spkiSHA256))
        var scts: [SCTFacts] = []
        if transparency != nil {
            let issuer = verification.chain.dropFirst().first ?? intermediates.first
            scts = SCTCollector.collect(leaf: leaf, issuer: issuer, presented: presentedSCTs,
                                        logs: transparency?.logList, now: now)
        }
        let facts = CertificateChainFacts(
            host: host, leaf: leafFacts, anchor: anchor, dated: dated,
            authoritySPKIs: verification.chain.dropFirst().map { ($0.subject, Data($0.spkiSHA256)) },
            scts: scts, chain: certificates, untrustedDepth: verification.failureDepth)
        return (facts, fetches, missingIssuerURLs)
    }

    /// What the untrusted finding adds about caIssuers: what was fetched, or that nothing could be.
    private static func aiaNote(missing: X509Certificate, fetches: [AIAFetch], fetching: Bool) -> String {
        let failed = fetches.compactMap { fetch -> String? in
            guard case .failed(let problem) = fetch.outcome else { return nil }
            return "\(fetch.url): \(problem)"
        }
        if !failed.isEmpty {
            return "; fetching the missing issuer from its caIssuers URL failed (\(failed.joined(separator: "; ")))"
        }
        if !fetches.isEmpty { return "; the certificates fetched from caIssuers URLs did not complete the chain" }
        guard fetching else { return "" }
        return missing.caIssuerURLs.isEmpty
            ? "; \(missing.subject) names no caIssuers URL to fetch its issuer from" : ""
    }
}

/// OpenSSL's chain building against a trust store, without its time check.
private struct ChainVerification {
    /// OpenSSL's words for why no chain was built, e.g. "self-signed certificate"; nil when trusted.
    var failure: String?
    /// The depth and certificate at which building failed.
    var failureDepth: Int?
    var failedAt: X509Certificate?
    /// The certificate whose issuer is neither sent, nor fetched, nor in the store: where caIssuers helps.
    var lacksIssuerOf: X509Certificate?
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
        // The leaf's extended key usage is R15a's to judge (Apple accepts anyExtendedKeyUsage, OpenSSL's
        // ssl_server purpose does not): a clientAuth-only leaf must fail as certificate-usage, not as
        // an untrusted chain.
        X509_VERIFY_PARAM_set_purpose(X509_STORE_CTX_get0_param(context), X509_PURPOSE_ANY)
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
            failureDepth = Int(depth)
            failedAt = X509_STORE_CTX_get_current_cert(context).map { X509Certificate(retaining: $0) }
            switch code {
            case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT, X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY,
                 X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
                lacksIssuerOf = failedAt
            default:
                break
            }
        }
        OpenSSLErrorQueue.clear()
    }
}
