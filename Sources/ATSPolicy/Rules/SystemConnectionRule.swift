/// R18: what Apple requires of servers behind system connections (MDM, declarative device management,
/// automated enrollment, profile and app installation, software update; Apple support article 126655):
/// TLS 1.2 or later and a forward-secrecy suite (R14's rules, decided as R18), the extended master
/// secret on TLS 1.2, and certificates as R15/R15a (`SystemConnectionRule.requirements` asks for full
/// certificate checks).
public struct SystemConnectionRule: ATSRule {
    public var id: RuleID { .r18 }

    public init() {}

    /// Full ATS: TLS 1.2, forward secrecy, certificate checks.
    public static let requirements = Requirements.full

    public func evaluate(_ facts: HandshakeFacts) -> RuleResult {
        let rules = AllRules<HandshakeFacts>([
            MinimumVersionRule(minimum: .tls12), CipherSuiteRule(policy: .forwardSecrecy),
            ExtendedMasterSecretRule(),
        ])
        guard let failure = rules.evaluate(facts).failure else { return .passes }
        if failure.rule == .r18 { return .fails(failure) }
        // The version and suite rules are R14's, but here they decide for R18, and no ATS key can
        // lift them: name the rule that applies and the server change.
        return .fails(RuleFailure(.r18, failure.reason) {
            let message = failure.message
            let cut = message.range(of: " (NSException").map { message[..<$0.lowerBound] }
                ?? message.range(of: " (no ATS key").map { message[..<$0.lowerBound] } ?? message[...]
            return cut + "; Apple's system connections require TLSv1.2 or later with a forward-secrecy"
                + " cipher suite (R18; no ATS key changes this, the server must)"
        })
    }
}
