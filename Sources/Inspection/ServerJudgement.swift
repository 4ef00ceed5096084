import ATSPolicy
import DecisionLog
import TLSWire

/// What the proxy concluded about a server: a refusal with its alert, or a pass with the findings it
/// tolerated, and the leaf certificate's facts for the log.
package struct ServerJudgement: Sendable {
    package struct Refusal: Sendable {
        package var reason: String
        package var message: String
        package var alert: AlertDescription
        /// The ATS-SPEC rule that refused (R15, R15a, R16, R17); nil when no rule decided (a probe
        /// that could not reach the server).
        package var rule: RuleID? = nil
    }

    package var blocking: Refusal?
    /// Reason codes of findings tolerated because the host allows cleartext (R15).
    package var tolerated: [String] = []
    package var certificate: LoggedCertificate?
    /// A remark for the record when nothing blocked (e.g. what was tolerated).
    package var note: String?
}
