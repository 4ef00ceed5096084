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

    /// The head at the start of `bytes`, or nil when incomplete. Parsed as bytes: splitting the
    /// head as a String walked grapheme clusters ("\r\n" is one Character) and was a fifth of the
    /// forwarding path's CPU.
    static func parse(_ bytes: UnsafeRawBufferPointer) throws(Malformed) -> ResponseHead? {
        guard let end = HeaderFields.headEnd(bytes, maximumLength: maximumLength) else {
            if bytes.count > maximumLength { throw Malformed(problem: "response head larger than 64 KiB") }
            return nil
        }
        let head = UnsafeRawBufferPointer(rebasing: bytes[..<(end - 2)]) // each line ends with CRLF
        var lines: [Range<Int>] = []
        var start = 0
        var index = 0
        while index + 1 < head.count {
            if head[index] == 0x0D, head[index + 1] == 0x0A {
                lines.append(start..<index)
                index += 2
                start = index
            } else {
                index += 1
            }
        }
        guard let statusLine = lines.first else { throw Malformed(problem: "malformed status line") }
        let status = try parseStatusLine(UnsafeRawBufferPointer(rebasing: head[statusLine]))
        var fields: [(String, String)] = []
        fields.reserveCapacity(lines.count - 1)
        for line in lines.dropFirst() {
            let bytes = UnsafeRawBufferPointer(rebasing: head[line])
            guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")), colon > 0,
                  bytes[0] != 0x20, bytes[0] != 0x09 else { throw Malformed(problem: "malformed header line") }
            var valueStart = colon + 1
            var valueEnd = bytes.count
            while valueStart < valueEnd, bytes[valueStart] == 0x20 || bytes[valueStart] == 0x09 { valueStart += 1 }
            while valueEnd > valueStart, bytes[valueEnd - 1] == 0x20 || bytes[valueEnd - 1] == 0x09 { valueEnd -= 1 }
            fields.append((String(decoding: UnsafeRawBufferPointer(rebasing: bytes[..<colon]), as: UTF8.self),
                           String(decoding: UnsafeRawBufferPointer(rebasing: bytes[valueStart..<valueEnd]), as: UTF8.self)))
        }
        return ResponseHead(minorVersion: status.minor, status: status.code, reason: status.reason, fields: fields,
                            length: end)
    }

    /// `HTTP/1.x NNN reason`.
    private static func parseStatusLine(_ line: UnsafeRawBufferPointer) throws(Malformed)
        -> (minor: Int, code: Int, reason: String) {
        let prefix = Array("HTTP/1.".utf8)
        guard line.count >= 12, line.prefix(7).elementsEqual(prefix), line[7] == 0x30 || line[7] == 0x31,
              line[8] == 0x20, line[9...11].allSatisfy({ (0x30...0x39).contains($0) }),
              line.count == 12 || line[12] == 0x20 else {
            throw Malformed(problem: "malformed status line")
        }
        let code = line[9...11].reduce(0) { $0 * 10 + Int($1 - 0x30) }
        let reason = line.count > 13 ? String(decoding: UnsafeRawBufferPointer(rebasing: line[13...]), as: UTF8.self) : ""
        return (line[7] == 0x31 ? 1 : 0, code, reason)
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
