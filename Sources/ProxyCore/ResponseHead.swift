/// An origin's response head, read to rewrite it for the client and to know whether the client
/// connection can stay open after the body.
struct ResponseHead {
    /// The head including the blank line; the status line and fields are ranges into it.
    var bytes: [UInt8]
    var minorVersion: Int
    var status: Int
    /// The reason phrase, possibly empty.
    var reason: Range<Int>
    var fields: [HeaderField]

    /// Bytes of the head including the blank line.
    var length: Int { bytes.count }

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
        // One pass: the status line, then each field as its line ends.
        var status: (minor: Int, code: Int, line: Range<Int>)?
        var fields: [HeaderField] = []
        // Room for a typical origin's fields, so the array does not grow three times on the way.
        fields.reserveCapacity(16)
        var start = 0
        var index = 0
        while index + 1 < head.count {
            guard head[index] == 0x0D, head[index + 1] == 0x0A else {
                index += 1
                continue
            }
            let line = start..<index
            index += 2
            start = index
            guard status != nil else {
                let parsed = try parseStatusLine(UnsafeRawBufferPointer(rebasing: head[line]))
                status = (parsed.minor, parsed.code, line)
                continue
            }
            guard let colon = head[line].firstIndex(of: UInt8(ascii: ":")), colon > line.lowerBound,
                  head[line.lowerBound] != 0x20, head[line.lowerBound] != 0x09 else {
                throw Malformed(problem: "malformed header line")
            }
            fields.append(HeaderField(head, line: line, colon: colon))
        }
        guard let status else { throw Malformed(problem: "malformed status line") }
        let reason = min(status.line.upperBound, 13)..<status.line.upperBound
        return ResponseHead(bytes: Array(bytes[..<end]), minorVersion: status.minor, status: status.code, reason: reason,
                            fields: fields)
    }

    /// `HTTP/1.x NNN reason`.
    private static func parseStatusLine(_ line: UnsafeRawBufferPointer) throws(Malformed) -> (minor: Int, code: Int) {
        let prefix = Array("HTTP/1.".utf8)
        guard line.count >= 12, line.prefix(7).elementsEqual(prefix), line[7] == 0x30 || line[7] == 0x31,
              line[8] == 0x20, line[9...11].allSatisfy({ (0x30...0x39).contains($0) }),
              line.count == 12 || line[12] == 0x20 else {
            throw Malformed(problem: "malformed status line")
        }
        let code = line[9...11].reduce(0) { $0 * 10 + Int($1 - 0x30) }
        return (line[7] == 0x31 ? 1 : 0, code)
    }

    private static let close = Array("close".utf8)
    private static let chunkedCoding = Array("chunked".utf8)

    /// The origin will keep the connection after this response (HTTP/1.1 and no Connection: close).
    var originKeepsConnection: Bool {
        minorVersion == 1 && !bytes.withUnsafeBytes { HeaderFields.hasToken($0, fields, .connection, Self.close) }
    }

    /// The body is chunked: the last transfer coding is `chunked`.
    var isChunked: Bool {
        bytes.withUnsafeBytes { bytes in
            var lastIsChunked = false
            for field in fields where field.kind == .transferEncoding {
                HeaderFields.forEachToken(bytes, in: field.value) { coding in
                    lastIsChunked = HeaderFields.equalsIgnoringCase(UnsafeRawBufferPointer(rebasing: bytes[coding]),
                                                                    lowercase: Self.chunkedCoding)
                }
            }
            return lastIsChunked
        }
    }

    /// The first Content-Length, when it is a number.
    var contentLength: Int? {
        fields.first { $0.kind == .contentLength }.flatMap { Int(String(decoding: bytes[$0.value], as: UTF8.self)) }
    }

    /// The head for the client: hop-by-hop fields removed, Via added, Connection set.
    func rewritten(keepAlive: Bool, clientMinorVersion: Int) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count + 64)
        out.append(contentsOf: "HTTP/1.1 ".utf8)
        out.append(contentsOf: bytes[9..<12])
        out.append(0x20)
        out.append(contentsOf: bytes[reason])
        out.append(contentsOf: "\r\n".utf8)
        _ = bytes.withUnsafeBytes { bytes in
            HeaderFields.appendForwardable(bytes, fields, dropProxyFields: false, to: &out)
        }
        out.append(contentsOf: HeaderFields.via(receivedMinorVersion: minorVersion))
        if !keepAlive {
            out.append(contentsOf: "Connection: close\r\n".utf8)
        } else if clientMinorVersion == 0 {
            out.append(contentsOf: "Connection: keep-alive\r\n".utf8)
        }
        out.append(contentsOf: "\r\n".utf8)
        return out
    }
}
