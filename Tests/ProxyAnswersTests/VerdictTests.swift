import ATSPolicy
import Testing
@testable import DecisionLog
@testable import ProxyAnswers

/// Outcomes are one enum each: every ATS reason has its case, and the actions are INTERFACE.md's four.
@Suite struct VerdictTests {
    @Test(arguments: BlockReason.allCases)
    func everyATSReasonHasItsCase(reason: BlockReason) {
        #expect(Reason(rawValue: reason.rawValue) != nil)
        #expect(Reason(reason).rawValue == reason.rawValue)
    }

    @Test func verdictsMapToTheFourActionsAndTheirStatus() {
        #expect(Verdict.block(.ats(.cleartextHTTP), message: nil).action == .block)
        #expect(Verdict.block(.ats(.cleartextHTTP), message: nil).status == 403)
        #expect(Verdict.redirect(location: "https://a/").action == .upgrade)
        #expect(Verdict.answer(status: 408, .requestTimeout, message: "m").action == .error)
        #expect(Verdict.fail(.dnsNXDomain, status: 502, message: "m").status == 502)
        #expect(Set(Reason.allCases.map(\.rawValue)).count == Reason.allCases.count, "every code names one reason")
        for reason in Reason.allCases { #expect(Reason(rawValue: reason.rawValue) == reason) }
    }

    @Test func aBlockAnswerNamesItsReasonAndCarriesTheMessage() {
        let bytes = ProxyResponse.render(.block(.ats(.cleartextHTTP), message: nil), decisionMessage: "not allowed here",
                                         keepAlive: true, proxyStatus: "atsgate; error=http_request_denied")
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 403 Forbidden\r\n"))
        #expect(text.contains("\r\nX-ATS-Action: block\r\nX-ATS-Reason: cleartext-http\r\n"))
        #expect(text.contains("\r\nProxy-Status: atsgate; error=http_request_denied\r\n"))
        #expect(text.hasSuffix("\r\n\r\nnot allowed here\n"))
        #expect(!text.contains("Connection: close"))
    }
}
