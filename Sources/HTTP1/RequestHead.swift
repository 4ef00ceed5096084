/// A parsed HTTP/1.x request head, as a proxy receives it: its bytes, copied once out of the read
/// buffer, with the request line and the fields as ranges into them. Strings are made only for what
/// needs one (the method for the log, a target for the policy).
package struct RequestHead {
    /// The head including the blank line.
    package var bytes: [UInt8]
    /// Bytes of the input the head took: `bytes`, and an empty line skipped before it.
    package var length: Int
    package var method: String
    package var targetRange: Range<Int>
    /// 0 for HTTP/1.0, 1 for HTTP/1.1.
    package var minorVersion: Int
    /// Header fields in order.
    package var fields: [HeaderField]
    package var contentLength: Int?
    package var chunked: Bool
    /// The client wants the connection kept open after this exchange: HTTP/1.1 without
    /// `Connection: close`, or HTTP/1.0 with `Connection: keep-alive`.
    package var keepAlive: Bool

    package var target: String { String(decoding: bytes[targetRange], as: UTF8.self) }

    /// The request has a body to read (an answer that does not read it cannot keep the connection).
    package var hasBody: Bool { (contentLength ?? 0) > 0 || chunked }

    /// The value of the first field of `kind`.
    package func field(_ kind: HeaderField.Kind) -> String? {
        fields.first { $0.kind == kind }.map { String(decoding: bytes[$0.value], as: UTF8.self) }
    }

    /// The value of the first field named `lowercase` (any case in the head), for the rare question
    /// about a field the parser does not recognise by kind.
    package func field(named lowercase: String) -> String? {
        let name = Array(lowercase.utf8)
        return bytes.withUnsafeBytes { head in
            fields.first { field in
                field.kind == .other && field.name.count == name.count
                    && HeaderFields.equalsIgnoringCase(UnsafeRawBufferPointer(rebasing: head[field.name]), lowercase: name)
            }.map { String(decoding: head[$0.value], as: UTF8.self) }
        }
    }

    private static let http = Array("http://".utf8)
    private static let https = Array("https://".utf8)

    /// An `http://` or `https://` target (any case), which the proxy forwards.
    package var isAbsoluteForm: Bool {
        bytes.withUnsafeBytes { bytes in
            let target = UnsafeRawBufferPointer(rebasing: bytes[targetRange])
            return HeaderFields.hasPrefixIgnoringCase(target, lowercase: Self.http)
                || HeaderFields.hasPrefixIgnoringCase(target, lowercase: Self.https)
        }
    }

    private static let viaToken = Array(HeaderFields.viaToken.lowercased().utf8)

    /// A Via field names this proxy: the request has come through it before and would loop.
    package var cameThroughThisProxy: Bool {
        bytes.withUnsafeBytes { bytes in
            var found = false
            for field in fields where field.kind == .via && !found {
                HeaderFields.forEachToken(bytes, in: field.value) { token in
                    guard !found, token.count >= Self.viaToken.count else { return }
                    let suffix = (token.upperBound - Self.viaToken.count)..<token.upperBound
                    found = HeaderFields.equalsIgnoringCase(UnsafeRawBufferPointer(rebasing: bytes[suffix]),
                                                            lowercase: Self.viaToken)
                }
            }
            return found
        }
    }

    /// Where the origin form (`/path?query`) of an absolute-form target is: after the authority, from
    /// the first `/` or `?`; nil when the target has no path (the origin form is then `/`). An
    /// origin-form target (a request the transparent gate intercepted) is its own.
    private var pathRange: Range<Int>? {
        let target = bytes[targetRange]
        if target.first == UInt8(ascii: "/") { return targetRange }
        guard let colon = target.firstIndex(of: UInt8(ascii: ":")), target[colon...].starts(with: "://".utf8),
              let start = target[(colon + 3)...].firstIndex(where: { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") })
        else { return nil }
        return start..<targetRange.upperBound
    }

    private func appendOriginForm(to out: inout [UInt8]) {
        guard let path = pathRange else { return out.append(UInt8(ascii: "/")) }
        if bytes[path.lowerBound] == UInt8(ascii: "?") { out.append(UInt8(ascii: "/")) }
        out.append(contentsOf: bytes[path])
    }

    /// The origin-form target of an absolute-form request, as the origin gets it.
    package var originForm: String {
        var out: [UInt8] = []
        appendOriginForm(to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// The request as the origin gets it: origin-form target; Host naming the target's authority
    /// (RFC 9112 section 3.2.2: a proxy replaces the client's Host, which the decision did not look
    /// at); hop-by-hop and Proxy-* fields removed; one Content-Length of the agreed value; Via added.
    /// Written as bytes, the forwarded names and values copied from the client's.
    ///
    /// For a parent proxy (`parentAuthorization` non-nil, empty when it has no credentials): the
    /// absolute-form target `http://authority/path`, and the parent's own Proxy-Authorization in place
    /// of the client's, which never goes upstream.
    package func upstreamHead(authority: String, parentAuthorization: String? = nil) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(length + 64)
        out.append(contentsOf: bytes[..<targetRange.lowerBound]) // the method and its space
        if parentAuthorization != nil {
            out.append(contentsOf: "http://".utf8)
            out.append(contentsOf: authority.utf8)
        }
        appendOriginForm(to: &out)
        out.append(contentsOf: " HTTP/1.1\r\nHost: ".utf8)
        out.append(contentsOf: authority.utf8)
        out.append(contentsOf: "\r\n".utf8)
        if let parentAuthorization, !parentAuthorization.isEmpty {
            out.append(contentsOf: "Proxy-Authorization: ".utf8)
            out.append(contentsOf: parentAuthorization.utf8)
            out.append(contentsOf: "\r\n".utf8)
        }
        bytes.withUnsafeBytes { bytes in
            HeaderFields.appendForwardable(bytes, fields, dropProxyFields: true, contentLength: contentLength, to: &out)
        }
        // No Connection field: HTTP/1.1 keeps the origin connection for the pool.
        out.append(contentsOf: HeaderFields.via(receivedMinorVersion: minorVersion))
        out.append(contentsOf: "\r\n".utf8)
        return out
    }
}

/// Why a request head was refused, with the HTTP status the proxy answers.
package struct RequestHeadError: Error, Equatable {
    package var status: Int
    package var problem: String
}

/// Reads request heads strictly, because a proxy that reads them loosely is how requests get smuggled.
package enum RequestHeadParser {
    package static let maximumHeadLength = 16 * 1024
    package static let maximumFields = 100
    /// Longer targets get 414 (RFC 9112 section 3 recommends at least 8,000 octets).
    package static let maximumTargetLength = 8 * 1024
    private static let close = Array("close".utf8)
    private static let keepAliveToken = Array("keep-alive".utf8)

    /// The head at the start of `bytes`, nil when it is not complete yet. One empty line before the
    /// request line is skipped (RFC 9112 section 2.2); it counts in the head's `length`.
    package static func parse(_ bytes: UnsafeRawBufferPointer) throws(RequestHeadError) -> RequestHead? {
        let skipped = bytes.count >= 2 && bytes[0] == 0x0D && bytes[1] == 0x0A ? 2 : 0
        if skipped > 0, bytes.count >= 3, bytes[2] == 0x0D || bytes[2] == 0x0A {
            throw RequestHeadError(status: 400, problem: "empty request line")
        }
        do {
            return try parseHead(UnsafeRawBufferPointer(rebasing: bytes[skipped...]), skipped: skipped)
        } catch let violation as MessageSyntax.Violation {
            throw RequestHeadError(status: violation.tooLarge ? 431 : 400, problem: violation.problem)
        } catch let error as RequestHeadError {
            throw error
        } catch {
            throw RequestHeadError(status: 400, problem: "\(error)")
        }
    }

    private static func parseHead(_ bytes: UnsafeRawBufferPointer, skipped: Int) throws -> RequestHead? {
        // Every line ends with CRLF; a bare CR, LF or a NUL refuses the head as soon as it arrives.
        guard let (end, lineCount) = try MessageSyntax.headBounds(bytes, maximumLength: maximumHeadLength) else {
            if bytes.count > maximumHeadLength {
                if !bytes.prefix(maximumTargetLength + 16).contains(0x0D) {
                    throw RequestHeadError(status: 414, problem: "request target longer than 8 KiB")
                }
                throw RequestHeadError(status: 431, problem: "request head larger than 16 KiB")
            }
            return nil
        }
        if end > maximumHeadLength { throw RequestHeadError(status: 431, problem: "request head larger than 16 KiB") }
        var lineEnd = 0
        while bytes[lineEnd] != 0x0D { lineEnd += 1 }
        let requestLine = try parseRequestLine(UnsafeRawBufferPointer(rebasing: bytes[..<lineEnd]))
        guard lineCount - 1 <= maximumFields else {
            throw RequestHeadError(status: 431, problem: "more than \(maximumFields) header fields")
        }
        let fields = try MessageSyntax.fieldLines(bytes, from: lineEnd + 2, to: end - 2, expected: lineCount - 1)
        let framing = try MessageSyntax.framing(bytes, fields)
        try checkFraming(framing, method: requestLine.method, minorVersion: requestLine.minor)
        try checkTarget(bytes, requestLine, fields)
        let keepAlive = !HeaderFields.hasToken(bytes, fields, .connection, close)
            && (requestLine.minor >= 1 || HeaderFields.hasToken(bytes, fields, .connection, keepAliveToken))
        return RequestHead(bytes: Array(bytes[..<end]), length: skipped + end, method: requestLine.method,
                           targetRange: requestLine.target, minorVersion: requestLine.minor, fields: fields,
                           contentLength: framing.contentLength, chunked: framing.hasTransferEncoding,
                           keepAlive: keepAlive)
    }

    private static func parseRequestLine(_ line: UnsafeRawBufferPointer) throws(RequestHeadError)
        -> (method: String, target: Range<Int>, minor: Int) {
        guard let methodEnd = line.firstIndex(of: 0x20),
              let targetEnd = line[(methodEnd + 1)...].firstIndex(of: 0x20),
              !line[(targetEnd + 1)...].contains(0x20), methodEnd > 0, targetEnd > methodEnd + 1 else {
            throw RequestHeadError(status: 400, problem: "malformed request line")
        }
        guard line[..<methodEnd].allSatisfy(MessageSyntax.isTokenByte) else {
            throw RequestHeadError(status: 400, problem: "malformed method")
        }
        guard targetEnd - methodEnd - 1 <= maximumTargetLength else {
            throw RequestHeadError(status: 414, problem: "request target longer than 8 KiB")
        }
        guard line[(methodEnd + 1)..<targetEnd].allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw RequestHeadError(status: 400, problem: "malformed request target")
        }
        let version = UnsafeRawBufferPointer(rebasing: line[(targetEnd + 1)...])
        let minor: Int
        if version.count == 8, version.starts(with: "HTTP/1.".utf8), version[7] == 0x31 || version[7] == 0x30 {
            minor = version[7] == 0x31 ? 1 : 0
        } else if version.count == 8, version.starts(with: "HTTP/".utf8), version[6] == UInt8(ascii: "."),
                  (0x30...0x39).contains(version[5]), (0x30...0x39).contains(version[7]) {
            let number = String(decoding: version.dropFirst(5), as: UTF8.self)
            throw RequestHeadError(status: 505, problem: "HTTP version \(number) not supported")
        } else {
            throw RequestHeadError(status: 400, problem: "malformed HTTP version")
        }
        return (String(decoding: line[..<methodEnd], as: UTF8.self), (methodEnd + 1)..<targetEnd, minor)
    }

    /// Body framing (RFC 9112 section 6): refuse every ambiguity instead of guessing.
    private static func checkFraming(_ framing: MessageSyntax.Framing, method: String,
                                     minorVersion: Int) throws(RequestHeadError) {
        if framing.contentLength != nil, framing.hasTransferEncoding {
            throw RequestHeadError(status: 400, problem: "both Content-Length and Transfer-Encoding")
        }
        if framing.hasTransferEncoding {
            if let coding = framing.unknownCoding, framing.isChunked {
                // RFC 9112 section 6.1: a transfer coding the server does not understand is a 501.
                throw RequestHeadError(status: 501, problem: "transfer coding '\(coding)' is not implemented")
            }
            guard framing.isChunked else {
                // The length of the body cannot be determined (RFC 9112 section 6.3, item 4).
                throw RequestHeadError(status: 400, problem: "unsupported Transfer-Encoding (chunked must be last, once)")
            }
            if minorVersion == 0 {
                throw RequestHeadError(status: 400, problem: "Transfer-Encoding in an HTTP/1.0 request")
            }
        }
        if method == "CONNECT", (framing.contentLength ?? 0) > 0 || framing.hasTransferEncoding {
            // RFC 9110 section 9.3.6: CONNECT has no content; what follows the head is tunnel data.
            throw RequestHeadError(status: 400, problem: "a CONNECT request with content")
        }
    }

    private static func isSchemeStart(_ byte: UInt8) -> Bool { (byte | 0x20) >= 0x61 && (byte | 0x20) <= 0x7A }

    private static func isSchemeByte(_ byte: UInt8) -> Bool {
        isSchemeStart(byte) || (0x30...0x39).contains(byte) || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-")
            || byte == UInt8(ascii: ".")
    }

    /// The request target and Host (RFC 9112 section 3.2): one Host at most; an absolute-form target
    /// carries no userinfo and no fragment; CONNECT takes the authority form only.
    private static func checkTarget(_ head: UnsafeRawBufferPointer, _ line: (method: String, target: Range<Int>, minor: Int),
                                    _ fields: [HeaderField]) throws(RequestHeadError) {
        var hosts = 0
        for field in fields where field.kind == .host { hosts += 1 }
        guard hosts <= 1 else { throw RequestHeadError(status: 400, problem: "more than one Host field") }
        let target = head[line.target]
        if line.method == "CONNECT" {
            guard !target.contains(UInt8(ascii: "/")), !target.contains(UInt8(ascii: "@")) else {
                throw RequestHeadError(status: 400, problem: "a CONNECT target must be host:port")
            }
            return
        }
        // Absolute form only when the target starts with a scheme (RFC 3986: ALPHA *( ALPHA / DIGIT /
        // "+" / "-" / "." ) ":"); an origin-form path may hold "://" anywhere.
        guard let scheme = target.firstIndex(of: UInt8(ascii: ":")), head[scheme...].starts(with: "://".utf8),
              scheme > line.target.lowerBound, Self.isSchemeStart(head[line.target.lowerBound]),
              head[line.target.lowerBound..<scheme].allSatisfy(Self.isSchemeByte) else {
            return
        }
        guard !target.contains(UInt8(ascii: "#")) else {
            throw RequestHeadError(status: 400, problem: "a fragment in the request target")
        }
        let authorityStart = scheme + 3
        let authorityEnd = head[authorityStart..<line.target.upperBound]
            .firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") } ?? line.target.upperBound
        if head[authorityStart..<authorityEnd].contains(UInt8(ascii: "@")) {
            throw RequestHeadError(status: 400, problem: "userinfo in the request target")
        }
        if authorityStart == authorityEnd {
            throw RequestHeadError(status: 400, problem: "an absolute-form target without a host")
        }
    }
}
