/// An origin's response head, read to rewrite it for the client and to know whether the client
/// connection can stay open after the body.
package struct ResponseHead {
    /// The head including the blank line; the status line and fields are ranges into it.
    package var bytes: [UInt8]
    package var minorVersion: Int
    package var status: Int
    /// The reason phrase, possibly empty.
    package var reason: Range<Int>
    package var fields: [HeaderField]
    package var framing: MessageSyntax.Framing

    /// Bytes of the head including the blank line.
    package var length: Int { bytes.count }

    package static let maximumLength = 64 * 1024

    package struct Malformed: Error {
        package var problem: String
    }

    /// The head at the start of `bytes`, or nil when incomplete. Read as strictly as a request head
    /// (MessageSyntax): an origin's head is forwarded, so a loose read here would let an origin split
    /// or smuggle responses to the client. Parsed as bytes: splitting the head as a String walked
    /// grapheme clusters ("\r\n" is one Character) and was a fifth of the forwarding path's CPU.
    package static func parse(_ bytes: UnsafeRawBufferPointer) throws(Malformed) -> ResponseHead? {
        do {
            // A bare CR, LF or NUL refuses the head as soon as it arrives (MessageSyntax.headBounds).
            guard let (end, lines) = try MessageSyntax.headBounds(bytes, maximumLength: maximumLength) else {
                if bytes.count > maximumLength { throw Malformed(problem: "response head larger than 64 KiB") }
                return nil
            }
            var lineEnd = 0
            while bytes[lineEnd] != 0x0D { lineEnd += 1 }
            let status = try parseStatusLine(UnsafeRawBufferPointer(rebasing: bytes[..<lineEnd]))
            let fields = try MessageSyntax.fieldLines(bytes, from: lineEnd + 2, to: end - 2, expected: lines - 1)
            let framing = try MessageSyntax.framing(bytes, fields)
            if framing.hasTransferEncoding {
                // RFC 9112 section 6.1: Content-Length beside Transfer-Encoding, or Transfer-Encoding
                // in HTTP/1.0, is faulty framing; a proxy must not pass either on as it came.
                if framing.contentLength != nil {
                    throw Malformed(problem: "both Content-Length and Transfer-Encoding")
                }
                if status.minor == 0 { throw Malformed(problem: "Transfer-Encoding in an HTTP/1.0 response") }
                if framing.codings == 0 { throw Malformed(problem: "a Transfer-Encoding field without a coding") }
                if framing.chunkedCount > (framing.lastIsChunked ? 1 : 0) {
                    throw Malformed(problem: "chunked applied more than once, or not last")
                }
            }
            let reason = min(lineEnd, 13)..<lineEnd
            return ResponseHead(bytes: Array(bytes[..<end]), minorVersion: status.minor, status: status.code,
                                reason: reason, fields: fields, framing: framing)
        } catch let error as Malformed {
            throw error
        } catch let violation as MessageSyntax.Violation {
            throw Malformed(problem: violation.problem)
        } catch {
            throw Malformed(problem: "\(error)")
        }
    }

    /// `HTTP/1.x NNN reason`; the reason phrase holds no controls but HTAB.
    private static func parseStatusLine(_ line: UnsafeRawBufferPointer) throws(Malformed) -> (minor: Int, code: Int) {
        let prefix = Array("HTTP/1.".utf8)
        guard line.count >= 12, line.prefix(7).elementsEqual(prefix), line[7] == 0x30 || line[7] == 0x31,
              line[8] == 0x20, line[9...11].allSatisfy({ (0x30...0x39).contains($0) }),
              line.count == 12 || line[12] == 0x20, line[9] != 0x30 else {
            throw Malformed(problem: "malformed status line")
        }
        guard line[12...].allSatisfy(MessageSyntax.isFieldValueByte) else {
            throw Malformed(problem: "control character in the reason phrase")
        }
        let code = line[9...11].reduce(0) { $0 * 10 + Int($1 - 0x30) }
        // RFC 9110 section 15: a status code outside 100...599 is invalid.
        guard (100...599).contains(code) else { throw Malformed(problem: "status code \(code) outside 100...599") }
        return (line[7] == 0x31 ? 1 : 0, code)
    }

    private static let close = Array("close".utf8)

    /// The origin will keep the connection after this response (HTTP/1.1 and no Connection: close).
    package var originKeepsConnection: Bool {
        minorVersion == 1 && !bytes.withUnsafeBytes { HeaderFields.hasToken($0, fields, .connection, Self.close) }
    }

    /// The body is chunked: the last transfer coding is `chunked`.
    package var isChunked: Bool { framing.isChunked }

    /// The length every Content-Length element agrees on.
    package var contentLength: Int? { framing.contentLength }

    /// The proxy removes the chunked coding for this client: an HTTP/1.0 client cannot read it (RFC
    /// 9112 section 6.1: no Transfer-Encoding in a response to HTTP/1.0), so the chunk data goes to it
    /// alone, delimited by the close, and the trailer fields are dropped (section 7.1.2 lets a
    /// recipient that removes the coding discard them; they must never join the body). Sent as it
    /// came, the chunk lines and trailer became part of the body, and a kept-alive client waited
    /// for an end it could not find. Only a body whose one coding is chunked: what another coding
    /// leaves is no better for such a client.
    package func removesChunking(forClientMinorVersion minor: Int) -> Bool {
        minor == 0 && framing.isChunked && framing.codings == 1
    }

    /// The head for the client: hop-by-hop fields removed, Via added, Connection set; for a client
    /// the chunked coding is removed for, no Transfer-Encoding and `Connection: close`.
    package func rewritten(keepAlive: Bool, clientMinorVersion: Int) -> [UInt8] {
        let dechunked = removesChunking(forClientMinorVersion: clientMinorVersion)
        let keepAlive = keepAlive && !dechunked
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count + 64)
        out.append(contentsOf: "HTTP/1.1 ".utf8)
        out.append(contentsOf: bytes[9..<12])
        out.append(0x20)
        out.append(contentsOf: bytes[reason])
        out.append(contentsOf: "\r\n".utf8)
        bytes.withUnsafeBytes { bytes in
            HeaderFields.appendForwardable(bytes, fields, dropProxyFields: false, contentLength: contentLength,
                                           dropTransferEncoding: dechunked, to: &out)
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
