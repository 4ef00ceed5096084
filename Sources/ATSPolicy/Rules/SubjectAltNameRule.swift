/// R15a: names come from subjectAltName only; a leaf without one matches no host (iOS 13 and later
/// ignore the subject's CN).
public struct SubjectAltNameRule: ATSRule {
    public var id: RuleID { .r15a }
    public init() {}

    public func evaluate(_ facts: CertificateChainFacts) -> RuleResult {
        guard let leaf = facts.leaf, leaf.subjectAlternativeNames.isEmpty else { return .passes }
        let host = facts.host
        return .fails(RuleFailure(id, .certificateHostname, depth: 0) {
            "certificate for \(host) (\(leaf.subject)) has no subjectAltName; Apple matches names against"
                + " subjectAltName only, never the CN (reissue it with subjectAltName=DNS:\(host))"
        })
    }
}
