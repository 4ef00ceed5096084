import Foundation

/// R15: one certificate of the chain is within its validity period at `now`.
public struct ValidityPeriodRule: ATSRule {
    public var now: Date
    public var id: RuleID { .r15 }

    public init(now: Date) {
        self.now = now
    }

    public func evaluate(_ certificate: DatedCertificate) -> RuleResult {
        if let notAfter = certificate.notAfter, notAfter < now {
            return .fails(RuleFailure(id, .certificateExpired) {
                "\(certificate.label) expired on \(DateText.iso8601(notAfter))"
            })
        }
        if let notBefore = certificate.notBefore, notBefore > now {
            return .fails(RuleFailure(id, .certificateExpired) {
                "\(certificate.label) is not valid until \(DateText.iso8601(notBefore))"
            })
        }
        if certificate.notAfter == nil || certificate.notBefore == nil {
            return .fails(RuleFailure(id, .certificateExpired) { "\(certificate.label) has an unreadable validity period" })
        }
        return .passes
    }
}
