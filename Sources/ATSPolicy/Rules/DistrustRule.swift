import Foundation

/// R15: no CA of the chain is one the trust store distrusts for leaves issued when this one was
/// (Apple's date-based distrusts, `AppleDistrust`): Apple refuses such a leaf though the chain verifies.
public struct DistrustRule: ATSRule {
    public static let reason: BlockReason = .certificateDistrusted

    public var id: RuleID { .r15 }
    public init() {}

    public func evaluate(_ facts: CertificateChainFacts) -> RuleResult {
        guard let leaf = facts.leaf, let notBefore = leaf.notBefore else { return .passes }
        guard let ca = facts.chain.first(where: { $0.depth > 0 && $0.distrust.map { notBefore >= $0.from } == true }),
              let distrust = ca.distrust else { return .passes }
        let host = facts.host
        let label = ca.label(host: host)
        return .fails(RuleFailure(id, Self.reason, depth: ca.depth) {
            let effective = DateText.iso8601(distrust.from.addingTimeInterval(-86_400)).prefix(10)
            return "certificate for \(host) was issued on \(DateText.iso8601(notBefore)) under \(label), which"
                + " Apple distrusts (\(distrust.name)) for certificates issued after \(effective) (\(distrust.source));"
                + " certificates issued before then keep working: get one from another CA"
        })
    }
}
