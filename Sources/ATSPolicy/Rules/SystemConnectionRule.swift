/// R18: what Apple requires of servers behind system connections (MDM, declarative device management,
/// automated enrollment, profile and app installation, software update; Apple support article 126655):
/// TLS 1.2 or later, a forward-secrecy suite (R14's set), and the extended master secret on TLS 1.2
/// (`ExtendedMasterSecretRule`). Certificates are judged as R15/R15a with nothing tolerated
/// (`CertificateRules(.system)`). No ATS key relaxes any of it, so the messages name the server change.
public struct SystemConnectionRule: ATSRule {
    public var id: RuleID { .r18 }

    public init() {}

    /// What a system connection offers: full ATS (TLS 1.2, forward secrecy, certificate checks).
    public static let requirements = Requirements.full

    public func evaluate(_ facts: HandshakeFacts) -> RuleResult {
        let demand = "Apple's system connections require TLSv1.2 or later with a forward-secrecy (ECDHE) cipher"
            + " suite (R18; no ATS key changes this, the server must)"
        if facts.version < TLSVersion.tls12.wireValue {
            return .fails(RuleFailure(id, .tlsVersion) {
                "\(facts.host) negotiated \(facts.versionName); \(demand)"
            })
        }
        if !CipherPolicy.forwardSecrecy.allows(suite: facts.cipherSuite, version: facts.version) {
            return .fails(RuleFailure(id, .cipherSuite) {
                "\(facts.host) negotiated \(facts.suiteName) with \(facts.versionName), which is not a forward-secrecy"
                    + " suite; \(demand)"
            })
        }
        return ExtendedMasterSecretRule().evaluate(facts)
    }
}
