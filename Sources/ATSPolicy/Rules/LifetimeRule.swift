import Foundation

/// R15a: the leaf is valid for at most 825 days from any CA, and at most 398 days when it was issued
/// on or after 2020-09-01 and chains to a root of the system store (Apple support 103769, 102028).
public struct LifetimeRule: ATSRule {
    public static let maximumDays = 825
    public static let publicMaximumDays = 398
    /// 2020-09-01T00:00:00Z: leaves issued (notBefore) on or after it get the 398-day limit.
    public static let publicLimitStart = Date(timeIntervalSince1970: 1_598_918_400)

    public var id: RuleID { .r15a }
    public init() {}

    /// The limit in days for this leaf, and why.
    static func limit(_ leaf: CertificateChainFacts.Leaf, anchor: TrustAnchor) -> (days: Int, why: String) {
        if anchor == .system, let notBefore = leaf.notBefore, notBefore >= publicLimitStart {
            return (publicMaximumDays, "a leaf issued on or after 2020-09-01 that chains to a root of the system"
                    + " store may be valid for at most \(publicMaximumDays) days")
        }
        return (maximumDays, "Apple accepts leaves valid for at most \(maximumDays) days from any CA")
    }

    public func evaluate(_ facts: CertificateChainFacts) -> RuleResult {
        guard let leaf = facts.leaf, let lifetime = leaf.lifetime else { return .passes }
        let (days, why) = Self.limit(leaf, anchor: facts.anchor)
        guard lifetime > TimeInterval(days) * 86_400 else { return .passes }
        let host = facts.host
        return .fails(RuleFailure(id, .certificateLifetime, depth: 0) {
            let actual = (lifetime / 86_400).rounded(.up)
            return "certificate for \(host) is valid for \(Int(actual)) days"
                + " (\(DateText.iso8601(leaf.notBefore)) to \(DateText.iso8601(leaf.notAfter))); \(why)"
                + " (reissue it valid for \(days) days or fewer)"
        })
    }
}
