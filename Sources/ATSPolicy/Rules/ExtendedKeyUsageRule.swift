/// R15a: when the leaf has an extended key usage extension, it includes serverAuth (or
/// anyExtendedKeyUsage, which Apple accepts too). A leaf without the extension passes.
public struct ExtendedKeyUsageRule: ATSRule {
    public var id: RuleID { .r15a }
    public init() {}

    public func evaluate(_ facts: CertificateChainFacts) -> RuleResult {
        guard let leaf = facts.leaf, let usages = leaf.extendedKeyUsages,
              !usages.contains(ExtendedKeyUsage.serverAuth), !usages.contains(ExtendedKeyUsage.any)
        else { return .passes }
        let host = facts.host
        return .fails(RuleFailure(id, .certificateUsage, depth: 0) {
            let names = usages.isEmpty ? "no purpose" : usages.map(ExtendedKeyUsage.name).joined(separator: ", ")
            return "certificate for \(host) has an extended key usage of \(names) without serverAuth; Apple"
                + " requires serverAuth when the extension is present (reissue it with extendedKeyUsage=serverAuth)"
        })
    }
}
