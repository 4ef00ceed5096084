/// R15: every certificate of the chain is signed with SHA-256 or stronger, except the anchor's own
/// self-signature, which nobody verifies. The failure names the first weak certificate from the leaf up.
public struct SignatureHashRule: ATSRule {
    public var id: RuleID { .r15 }
    public init() {}

    public func evaluate(_ facts: CertificateChainFacts) -> RuleResult {
        guard facts.leaf != nil,
              let weak = facts.judgedChain.first(where: { !$0.isAnchor && !$0.signatureHash.isStrongEnough }) else {
            return .passes
        }
        let label = weak.label(host: facts.host)
        return .fails(RuleFailure(id, .certificateSignatureHash, depth: weak.depth) {
            "\(label) is signed with \(weak.signatureAlgorithm); ATS requires a SHA-256 or stronger signature hash"
                + (weak.depth > 0 ? " for every certificate of the chain" : "")
        })
    }
}
