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
    /// The certificate the deciding finding is about (0 = the leaf): `certificate_depth`.
    package var certificateDepth: Int?
    /// The caIssuers URL(s) the chain was completed from: `aia_fetched`.
    package var aiaFetched: String?
    /// The chain lacks an issuer that these caIssuers http:// URLs may give (judged without fetching).
    package var missingIssuerURLs: [String] = []
    /// Seconds the verdict may be reused at most, below `--verdict-ttl`: an untrusted chain whose
    /// caIssuers fetch failed is asked again as soon as the failure is forgotten.
    package var maximumAge: Double?
    /// A probe of the server failed (it could not be reached or did not answer in time): the verdict
    /// says nothing of the certificate, so it is kept only briefly, and a tunnel answered from the
    /// cache is told that the failure is an earlier probe's.
    package var failedProbe = false
}

extension DecisionRecord {
    /// The certificate verdict's facts for the record (its outcome is `enforce`'s to write).
    package mutating func noteCertificate(_ judgement: ServerJudgement) {
        certificate = judgement.certificate
        toleratedFindings = judgement.tolerated
        certificateDepth = judgement.blocking != nil || !judgement.tolerated.isEmpty ? judgement.certificateDepth : nil
        aiaFetched = judgement.aiaFetched
    }
}
