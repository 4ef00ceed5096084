/// R15: every certificate of the chain, the anchor included, has an RSA key of at least 2048 bits or
/// an ECC key of at least 256 bits; no other type passes (support article 103769: "TLS server
/// certificates and issuing CAs"). The failure names the first weak certificate from the leaf up.
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
        guard facts.leaf != nil, let weak = facts.judgedChain.first(where: { !Self.isStrongEnough($0.key) }) else {
            return .passes
        }
        let label = weak.label(host: facts.host)
        return .fails(RuleFailure(id, .certificateKeySize, depth: weak.depth) {
            "\(label) has a \(weak.key) key; ATS requires RSA of at least 2048 bits or ECC of at least 256 bits"
                + (weak.depth > 0 ? " for every certificate of the chain (have the CA reissue from a stronger issuer)" : "")
        })
    }
}
