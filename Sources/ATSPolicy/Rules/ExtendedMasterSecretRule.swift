/// R18: on TLS 1.2 (and below) the ServerHello carries the extended_master_secret extension
/// (RFC 7627), which Apple requires of servers behind system connections. TLS 1.3 always passes: its
/// key schedule binds the whole transcript.
public struct ExtendedMasterSecretRule: ATSRule {
    public var id: RuleID { .r18 }

    public init() {}

    public func evaluate(_ facts: HandshakeFacts) -> RuleResult {
        guard facts.version < TLSVersion.tls13.wireValue, !facts.extendedMasterSecret else { return .passes }
        return .fails(RuleFailure(id, .extendedMasterSecret) {
            "\(facts.host) negotiated \(facts.versionName) without the extended master secret extension"
                + " (RFC 7627) in its ServerHello; Apple's system connections require it on TLS 1.2"
                + " (enable extended master secret on the server, or serve TLSv1.3; no ATS key changes this)"
        })
    }
}
