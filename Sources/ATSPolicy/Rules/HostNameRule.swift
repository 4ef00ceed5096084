/// R15: one of the leaf's subjectAltNames names the host. A leaf without any is `SubjectAltNameRule`'s
/// failure, not this one's, so a report names the cause once.
public struct HostNameRule: ATSRule {
    public var id: RuleID { .r15 }
    public init() {}

    public func evaluate(_ facts: CertificateChainFacts) -> RuleResult {
        guard let leaf = facts.leaf, !leaf.subjectAlternativeNames.isEmpty, !leaf.matchesHost else { return .passes }
        let host = facts.host
        return .fails(RuleFailure(id, .certificateHostname, depth: 0) {
            "certificate for \(leaf.nameSummary) does not match host \(host)"
        })
    }
}
