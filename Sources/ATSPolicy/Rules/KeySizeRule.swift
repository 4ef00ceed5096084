/// R15: the leaf's key is RSA of at least 2048 bits or ECC of at least 256 bits; no other type passes.
public struct KeySizeRule: ATSRule {
    public var id: RuleID { .r15 }
    public init() {}

    public static func isStrongEnough(_ key: PublicKeyFacts) -> Bool {
        switch key.kind {
        case .rsa: key.bits >= 2048
        case .ec: key.bits >= 256
        case .other: false
        }
    }

    public func evaluate(_ facts: CertificateChainFacts) -> RuleResult {
        guard let leaf = facts.leaf, !Self.isStrongEnough(leaf.key) else { return .passes }
        let host = facts.host
        return .fails(RuleFailure(id, .certificateKeySize) {
            "certificate for \(host) has a \(leaf.key) key; ATS requires RSA of at least 2048 bits"
                + " or ECC of at least 256 bits"
        })
    }
}
