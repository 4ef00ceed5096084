/// A complete response with a short body, written in one piece: the proxy's own answers (blocks,
/// errors, the PAC file) and the admin listener's.
package enum PlainResponse {
    /// `includeBody` false answers a HEAD: the same head, Content-Length included, without the body.
    package static func render(status: Int, headers: [(String, String)] = [], body: String, keepAlive: Bool,
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

    package static func reasonPhrase(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 308: "Permanent Redirect"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 407: "Proxy Authentication Required"
        case 408: "Request Timeout"
        case 413: "Content Too Large"
        case 414: "URI Too Long"
        case 429: "Too Many Requests"
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
}
