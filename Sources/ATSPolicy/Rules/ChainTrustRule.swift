/// R15: the chain leads to a trusted root (the judged trust store, one that allows TLS server
/// authentication, or an operator's CA file).
public struct ChainTrustRule: ATSRule {
    public var id: RuleID { .r15 }
    public init() {}

    public func evaluate(_ facts: CertificateChainFacts) -> RuleResult {
        let host = facts.host
        guard let leaf = facts.leaf else {
            let problem = facts.leafProblem ?? "\(host) presented no certificate"
            return .fails(RuleFailure(id, .certificateUntrusted, depth: facts.untrustedDepth) { problem })
        }
        guard case .untrusted(let problem) = facts.anchor else { return .passes }
        return .fails(RuleFailure(id, .certificateUntrusted, depth: facts.untrustedDepth) {
            "certificate chain of \(host) does not lead to a trusted root: \(problem)"
                + " (leaf \(leaf.subject), issuer \(leaf.issuer)); trust its CA (--ca-file)"
        })
    }
}
