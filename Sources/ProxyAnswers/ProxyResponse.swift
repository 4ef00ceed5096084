import ATSPolicy
import DecisionLog
import HTTP1

/// The proxy's own HTTP answers: blocks, errors, and the page for requests addressed to the proxy.
package enum ProxyResponse {
    /// A verdict's answer: a block (403, `X-ATS-Action` and `X-ATS-Reason`, the message as the body),
    /// a redirect (308 to the https URL), the proxy's own error answer, or an origin failure (502/504
    /// naming its cause in `X-ATS-Reason`). Every one carries `proxyStatus`, the Proxy-Status field
    /// (RFC 9209) that says atsgate answered and why.
    package static func render(_ verdict: Verdict, decisionMessage: @autoclosure () -> String?, keepAlive: Bool,
                       proxyStatus: String) -> [UInt8] {
        let status = ("Proxy-Status", proxyStatus)
        switch verdict {
        case .allow, .exempt, .upgrade, .note:
            return PlainResponse.render(status: 200, headers: [status], body: "", keepAlive: keepAlive)
        case .serve(let contentType, let body, let includeBody):
            return PlainResponse.render(status: 200, headers: [status], body: body, keepAlive: keepAlive,
                                        contentType: contentType, includeBody: includeBody)
        case .challenge(let message):
            return PlainResponse.render(status: 407, headers: [("Proxy-Authenticate", "Basic realm=\"atsgate\""),
                                                 ("X-ATS-Action", "block"),
                                                 ("X-ATS-Reason", BlockReason.authRequired.rawValue), status],
                          body: message + "\n", keepAlive: keepAlive)
        case .throttle(let message, let retryAfter):
            return PlainResponse.render(status: 429, headers: [("Retry-After", String(retryAfter)),
                                                 ("X-ATS-Action", "block"),
                                                 ("X-ATS-Reason", Reason.authThrottled.rawValue), status],
                          body: message + "\n", keepAlive: keepAlive)
        case .block(let reason, let message, _):
            let text = message ?? decisionMessage() ?? reason.rawValue
            return PlainResponse.render(status: 403, headers: [("X-ATS-Action", "block"), ("X-ATS-Reason", reason.rawValue),
                                                               status],
                          body: text + "\n", keepAlive: keepAlive)
        case .redirect(let location):
            return PlainResponse.render(status: 308, headers: [("X-ATS-Action", "upgrade"), ("Location", location), status],
                          body: "redirected to \(location)\n", keepAlive: keepAlive)
        case .answer(let status, _, let message, let headers, let body):
            return PlainResponse.render(status: status, headers: headers + [("Proxy-Status", proxyStatus)],
                                        body: body ?? message + "\n", keepAlive: keepAlive)
        case .fail(let reason, let status, let message, _):
            return PlainResponse.render(status: status, headers: [("X-ATS-Action", "error"), ("X-ATS-Reason", reason.rawValue),
                                                                  ("Proxy-Status", proxyStatus)],
                          body: message + "\n", keepAlive: keepAlive)
        }
    }

    /// The answer to a CONNECT once the origin (or the parent's tunnel to it) is connected.
    package static func connectEstablished(proxyStatus: String) -> [UInt8] {
        Array("HTTP/1.1 200 Connection Established\r\nProxy-Status: \(proxyStatus)\r\n\r\n".utf8)
    }

    package static let usagePage = """
        This is atsgate, an HTTP proxy that enforces Apple's App Transport Security policy.
        Use it as your HTTP proxy instead of requesting it directly, for example:
          curl -x http://HOST:PORT https://example.com/
          curl -x http://HOST:PORT http://example.com/
        Every decision is logged with its reason; blocked requests get 403 with X-ATS-Reason.

        """
}
