/// An origin's response head, read to rewrite it for the client and to know whether the client
/// connection can stay open after the body.
struct ResponseHead {
    var minorVersion: Int
    var status: Int
    var reason: String
    var fields: [(name: String, value: String)]
    var length: Int

    static let maximumLength = 64 * 1024

    struct Malformed: Error {
        var problem: String
    }

    /// The head at the start of `bytes`, or nil when incomplete.
    static func parse(_ bytes: UnsafeRawBufferPointer) throws(Malformed) -> ResponseHead? {
        guard let end = HeaderFields.headEnd(bytes, maximumLength: maximumLength) else {
            if bytes.count > maximumLength { throw Malformed(problem: "response head larger than 64 KiB") }
            return nil
        }
        let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[..<(end - 4)]), as: UTF8.self)
        var lines = text.split(separator: "\r\n", omittingEmptySubsequences: false)
        let statusLine = lines.removeFirst()
        let parts = statusLine.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, parts[0] == "HTTP/1.1" || parts[0] == "HTTP/1.0",
              parts[1].count == 3, let status = Int(parts[1]) else {
            throw Malformed(problem: "malformed status line")
        }
        var fields: [(String, String)] = []
        for line in lines {
            guard let colon = line.firstIndex(of: ":"), colon != line.startIndex,
                  !line.first!.isWhitespace else { throw Malformed(problem: "malformed header line") }
            fields.append((String(line[..<colon]), trimmingOWS(line[line.index(after: colon)...])))
        }
        return ResponseHead(minorVersion: parts[0] == "HTTP/1.1" ? 1 : 0, status: status,
                            reason: parts.count > 2 ? String(parts[2]) : "", fields: fields, length: end)
    }

    func tokens(_ name: String) -> [String] { HeaderFields.tokens(fields, name) }

    /// The origin will keep the connection after this response (HTTP/1.1 and no Connection: close).
    var originKeepsConnection: Bool {
        minorVersion == 1 && !tokens("connection").contains("close")
    }

    /// The head for the client: hop-by-hop fields removed, Via added, Connection set.
    func rewritten(keepAlive: Bool, clientMinorVersion: Int) -> [UInt8] {
        var text = "HTTP/1.1 \(status) \(reason)\r\n"
        for (name, value) in HeaderFields.forwardable(fields, dropProxyFields: false) {
            text += "\(name): \(value)\r\n"
        }
        text += "Via: 1.\(minorVersion) \(ProxyContext.viaToken)\r\n"
        if !keepAlive { text += "Connection: close\r\n" } else if clientMinorVersion == 0 { text += "Connection: keep-alive\r\n" }
        text += "\r\n"
        return Array(text.utf8)
    }
}
