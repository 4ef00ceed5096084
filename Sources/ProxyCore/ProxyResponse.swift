import ATSPolicy

/// The proxy's own HTTP answers: blocks, errors, and the page for requests addressed to the proxy.
enum ProxyResponse {
    /// `includeBody` false answers a HEAD: the same head, Content-Length included, without the body.
    static func render(status: Int, headers: [(String, String)] = [], body: String, keepAlive: Bool,
                       contentType: String = "text/plain; charset=utf-8", includeBody: Bool = true) -> [UInt8] {
        let bodyBytes = Array(body.utf8)
        var head = "HTTP/1.1 \(status) \(reasonPhrase(status))\r\n"
        head += "Content-Type: \(contentType)\r\n"
        head += "Content-Length: \(bodyBytes.count)\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        head += keepAlive ? "" : "Connection: close\r\n"
        head += "\r\n"
        return Array(head.utf8) + (includeBody ? bodyBytes : [])
    }

    /// A verdict's answer: a block (403, `X-ATS-Action` and `X-ATS-Reason`, the message as the body),
    /// a redirect (308 to the https URL), the proxy's own error answer, or an origin failure (502/504
    /// naming its cause in `X-ATS-Reason`).
    static func render(_ verdict: Verdict, decisionMessage: @autoclosure () -> String?, keepAlive: Bool) -> [UInt8] {
        switch verdict {
        case .allow, .upgrade:
            return render(status: 200, body: "", keepAlive: keepAlive)
        case .serve(let contentType, let body, let includeBody):
            return render(status: 200, body: body, keepAlive: keepAlive, contentType: contentType, includeBody: includeBody)
        case .challenge(let message):
            return render(status: 407, headers: [("Proxy-Authenticate", "Basic realm=\"atsgate\""),
                                                 ("X-ATS-Action", "block"),
                                                 ("X-ATS-Reason", BlockReason.authRequired.rawValue)],
                          body: message + "\n", keepAlive: keepAlive)
        case .block(let reason, let message, _):
            let text = message ?? decisionMessage() ?? reason.rawValue
            return render(status: 403, headers: [("X-ATS-Action", "block"), ("X-ATS-Reason", reason.rawValue)],
                          body: text + "\n", keepAlive: keepAlive)
        case .redirect(let location):
            return render(status: 308, headers: [("X-ATS-Action", "upgrade"), ("Location", location)],
                          body: "redirected to \(location)\n", keepAlive: keepAlive)
        case .answer(let status, _, let message, let headers, let body):
            return render(status: status, headers: headers, body: body ?? message + "\n", keepAlive: keepAlive)
        case .fail(let reason, let status, let message):
            return render(status: status, headers: [("X-ATS-Action", "error"), ("X-ATS-Reason", reason.rawValue)],
                          body: message + "\n", keepAlive: keepAlive)
        }
    }

    static func reasonPhrase(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 308: "Permanent Redirect"
        case 400: "Bad Request"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 407: "Proxy Authentication Required"
        case 408: "Request Timeout"
        case 413: "Content Too Large"
        case 414: "URI Too Long"
        case 431: "Request Header Fields Too Large"
        case 502: "Bad Gateway"
        case 503: "Service Unavailable"
        case 504: "Gateway Timeout"
        case 501: "Not Implemented"
        case 505: "HTTP Version Not Supported"
        case 508: "Loop Detected"
        default: "Error"
        }
    }

    static let usagePage = """
        This is atsgate, an HTTP proxy that enforces Apple's App Transport Security policy.
        Use it as your HTTP proxy instead of requesting it directly, for example:
          curl -x http://HOST:PORT https://example.com/
          curl -x http://HOST:PORT http://example.com/
        Every decision is logged with its reason; blocked requests get 403 with X-ATS-Reason.

        """
}
