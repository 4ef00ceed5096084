/// R14: the negotiated suite is in the set the cipher policy allows (any TLS 1.3 suite under TLS 1.3).
public struct CipherSuiteRule: ATSRule {
    public var policy: CipherPolicy
    public var id: RuleID { .r14 }

    public init(policy: CipherPolicy) {
        self.policy = policy
    }

    public func evaluate(_ facts: HandshakeFacts) -> RuleResult {
        guard !policy.allows(suite: facts.cipherSuite, version: facts.version) else { return .passes }
        let policy = policy
        return .fails(RuleFailure(id, .cipherSuite) {
            let host = facts.host
            let negotiated = "server negotiated \(facts.suiteName) with \(facts.versionName)"
            if facts.version >= TLSVersion.tls13.wireValue {
                return "\(negotiated), which is not a TLS 1.3 cipher suite"
            }
            switch policy {
            case .forwardSecrecy where CipherPolicy.rsaKeyExchangeSuites.contains(facts.cipherSuite):
                return "\(negotiated), which lacks forward secrecy; \(host) requires forward secrecy "
                    + "(NSExceptionRequiresForwardSecrecy=NO would allow it)"
            case .forwardSecrecy:
                return "\(negotiated); \(host) requires a forward-secrecy cipher suite "
                    + "(NSExceptionRequiresForwardSecrecy=NO with NSExceptionAllowsInsecureHTTPLoads=YES would allow it)"
            case .forwardSecrecyOrRSA, .any:
                return "\(negotiated); \(host) requires a forward-secrecy or TLS_RSA_WITH_AES_* cipher suite "
                    + "(NSExceptionAllowsInsecureHTTPLoads=YES would allow it)"
            }
        })
    }
}
