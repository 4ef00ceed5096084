/// R14 (with R13's floor): the negotiated version is at least the minimum the requirements name.
/// No minimum (ATS off or exempt) passes everything.
public struct MinimumVersionRule: ATSRule {
    public var minimum: TLSVersion?
    public var id: RuleID { .r14 }

    public init(minimum: TLSVersion?) {
        self.minimum = minimum
    }

    public func evaluate(_ facts: HandshakeFacts) -> RuleResult {
        guard let minimum, facts.version < minimum.wireValue else { return .passes }
        return .fails(RuleFailure(id, .tlsVersion) {
            var message = "server negotiated \(facts.versionName); \(facts.host) requires \(minimum.rawValue) or later"
            if let negotiated = facts.tlsVersion {
                message += " (NSExceptionMinimumTLSVersion=\(negotiated.rawValue) would allow it)"
            } else {
                message += " (no ATS key allows \(facts.versionName))"
            }
            return message
        })
    }
}
