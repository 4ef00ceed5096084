import Foundation

/// The certificate rules for one load, in check order: trust (R15), each certificate's validity
/// period (R15), a CA distrusted for leaves of that date (R15), names from subjectAltName (R15a), name
/// (R15), key size and signature hash of every certificate (R15), lifetime (R15a), extended key usage
/// (R15a), Certificate Transparency when asked for (R16), then pins (R17), which bind even where
/// cleartext is allowed. A finding about one certificate carries its depth (0 = the leaf).
public struct CertificateRules: Sendable {
    /// How findings are worded and whether they block.
    public enum Context: Sendable, Equatable {
        /// An app's ATS requirements: R15/R15a/R16 findings are tolerated where cleartext is allowed.
        case ats(Requirements)
        /// R18 system connections: every finding blocks, and no ATS key changes that.
        case system
    }

    public var context: Context
    public var pin: PinnedDomain?
    public var now: Date
    /// R16, when the operator asked for it; nil leaves Certificate Transparency unchecked.
    public var transparency: CertificateTransparencyRule?

    public init(_ context: Context, pin: PinnedDomain? = nil, now: Date = Date(),
                transparency: CertificateTransparencyRule? = nil) {
        self.context = context
        self.pin = pin
        self.now = now
        self.transparency = transparency
    }

    private var chainRules: AllRules<CertificateChainFacts> {
        var rules: [any ATSRule<CertificateChainFacts>] = [
            DistrustRule(), SubjectAltNameRule(), HostNameRule(), KeySizeRule(), SignatureHashRule(), LifetimeRule(),
            ExtendedKeyUsageRule(),
        ]
        if let transparency { rules.append(transparency) }
        return AllRules(rules)
    }

    /// Every finding, in check order.
    public func findings(_ facts: CertificateChainFacts) -> [CertificateFinding] {
        var failures: [RuleFailure] = []
        if let untrusted = ChainTrustRule().evaluate(facts).failure {
            failures.append(untrusted)
        }
        // Without a leaf there is nothing more to judge.
        if facts.leaf != nil {
            let validity = ValidityPeriodRule(now: now)
            failures += facts.dated.enumerated().compactMap { depth, dated in validity.evaluate(dated).failure?.at(depth: depth) }
            failures += chainRules.failures(facts)
        }
        var findings = failures.map { finding($0, host: facts.host) }
        if let pin {
            findings += PinRule(pin: pin).failures(facts).map {
                CertificateFinding($0, blocking: true, note: " (R17)")
            }
        }
        return findings
    }

    /// The first blocking finding's failure, or passes.
    public func evaluate(_ facts: CertificateChainFacts) -> RuleResult {
        findings(facts).first(where: \.blocking).map { .fails($0.failure) } ?? .passes
    }

    private func finding(_ failure: RuleFailure, host: String) -> CertificateFinding {
        let rule = failure.rule.rawValue
        switch context {
        case .system:
            return CertificateFinding(failure, blocking: true,
                                      note: " (R18: system connections need certificates as \(rule);"
                                          + " no ATS key changes this)")
        case .ats(let requirements) where !requirements.certificateChecks:
            return CertificateFinding(failure, blocking: false,
                                      note: " (tolerated: cleartext is allowed for \(host), \(rule))")
        case .ats:
            return CertificateFinding(failure, blocking: true,
                                      note: " (ATS rejects it, \(rule); NSExceptionAllowsInsecureHTTPLoads=YES for"
                                          + " \(host) would tolerate it)")
        }
    }
}
