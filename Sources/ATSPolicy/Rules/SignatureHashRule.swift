/// R15: the leaf is signed with SHA-256 or stronger.
public struct SignatureHashRule: ATSRule {
    public var id: RuleID { .r15 }
    public init() {}

    public func evaluate(_ facts: CertificateChainFacts) -> RuleResult {
        guard let leaf = facts.leaf, !leaf.signatureHash.isStrongEnough else { return .passes }
        let host = facts.host
        return .fails(RuleFailure(id, .certificateSignatureHash) {
            "certificate for \(host) is signed with \(leaf.signatureAlgorithm); ATS requires a"
                + " SHA-256 or stronger signature hash"
        })
    }
}
