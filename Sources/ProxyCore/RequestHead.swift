import ATSPolicy

/// A parsed HTTP/1.x request head, as a proxy receives it: its bytes, copied once out of the read
/// buffer, with the request line and the fields as ranges into them. Strings are made only for what
/// needs one (the method for the log, a target for the policy).
struct RequestHead {
    /// The head including the blank line.
    var bytes: [UInt8]
    var method: String
    var targetRange: Range<Int>
    /// 0 for HTTP/1.0, 1 for HTTP/1.1.
    var minorVersion: Int
    /// Header fields in order.
    var fields: [HeaderField]
    var contentLength: Int?
    var chunked: Bool
    /// The client wants the connection kept open after this exchange: HTTP/1.1 without
    /// `Connection: close`, or HTTP/1.0 with `Connection: keep-alive`.
    var keepAlive: Bool

    /// Bytes of the head including the blank line.
    var length: Int { bytes.count }

    var target: String { String(decoding: bytes[targetRange], as: UTF8.self) }

    /// The value of the first field of `kind`.
    func field(_ kind: HeaderField.Kind) -> String? {
        fields.first { $0.kind == kind }.map { String(decoding: bytes[$0.value], as: UTF8.self) }
    }

    private static let http = Array("http://".utf8)
    private static let https = Array("https://".utf8)

    /// An `http://` or `https://` target (any case), which the proxy forwards.
    var isAbsoluteForm: Bool {
        bytes.withUnsafeBytes { bytes in
            let target = UnsafeRawBufferPointer(rebasing: bytes[targetRange])
            return HeaderFields.hasPrefixIgnoringCase(target, lowercase: Self.http)
                || HeaderFields.hasPrefixIgnoringCase(target, lowercase: Self.https)
        }
    }

    /// What an absolute-form target names, read from its bytes.
    var absoluteFormDestination: Result<Destination, DestinationError> {
        bytes.withUnsafeBufferPointer { Destination.parse(url: UnsafeBufferPointer(rebasing: $0[targetRange])) }
    }

    private static let viaToken = Array(ProxyContext.viaToken.lowercased().utf8)

    /// A Via field names this proxy: the request has come through it before and would loop.
    var cameThroughThisProxy: Bool {
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
    /// the first `/` or `?`; nil when the target has no path (the origin form is then `/`).
    private var pathRange: Range<Int>? {
        let target = bytes[targetRange]
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
    var originForm: String {
        var out: [UInt8] = []
        appendOriginForm(to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// The request as the origin gets it: origin-form target, hop-by-hop and Proxy-* fields removed,
    /// Via added; written as bytes, the forwarded names and values copied from the client's. A
    /// request without Host (HTTP/1.0) gets one naming `hostIfMissing`.
    func upstreamHead(hostIfMissing: @autoclosure () -> String) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(length + 64)
        out.append(contentsOf: bytes[..<targetRange.lowerBound]) // the method and its space
        appendOriginForm(to: &out)
        out.append(contentsOf: " HTTP/1.1\r\n".utf8)
        let hasHost = bytes.withUnsafeBytes { bytes in
            HeaderFields.appendForwardable(bytes, fields, dropProxyFields: true, to: &out)
        }
        if !hasHost { out.append(contentsOf: "Host: \(hostIfMissing())\r\n".utf8) }
        // No Connection field: HTTP/1.1 keeps the origin connection for the pool.
        out.append(contentsOf: HeaderFields.via(receivedMinorVersion: minorVersion))
        out.append(contentsOf: "\r\n".utf8)
        return out
    }
}

/// Why a request head was refused, with the HTTP status the proxy answers.
struct RequestHeadError: Error, Equatable {
    var status: Int
    var problem: String
}

/// Reads request heads strictly, because a proxy that reads them loosely is how requests get smuggled.
enum RequestHeadParser {
    static let maximumHeadLength = 16 * 1024
    static let maximumFields = 100
    private static let close = Array("close".utf8)
    private static let keepAliveToken = Array("keep-alive".utf8)
    private static let chunkedCoding = Array("chunked".utf8)

    /// The head at the start of `bytes`, nil when it is not complete yet.
    static func parse(_ bytes: UnsafeRawBufferPointer) throws(RequestHeadError) -> RequestHead? {
        guard let end = HeaderFields.headEnd(bytes, maximumLength: maximumHeadLength) else {
            if bytes.count > maximumHeadLength {
                throw RequestHeadError(status: 431, problem: "request head larger than 16 KiB")
            }
            return nil
        }
        if end > maximumHeadLength { throw RequestHeadError(status: 431, problem: "request head larger than 16 KiB") }
        // Every line ends with CRLF; the last CRLF is the blank line. A bare CR, LF or a NUL anywhere
        // refuses the head before any of it is read.
        let lineCount = try countLines(UnsafeRawBufferPointer(rebasing: bytes[..<(end - 2)]))
        var lineEnd = 0
        while bytes[lineEnd] != 0x0D { lineEnd += 1 }
        let requestLine = try parseRequestLine(UnsafeRawBufferPointer(rebasing: bytes[..<lineEnd]))
        guard lineCount - 1 <= maximumFields else {
            throw RequestHeadError(status: 431, problem: "more than \(maximumFields) header fields")
        }
        var fields: [HeaderField] = []
        fields.reserveCapacity(lineCount - 1)
        var lineStart = lineEnd + 2
        while lineStart < end - 2 {
            lineEnd = lineStart
            while bytes[lineEnd] != 0x0D { lineEnd += 1 }
            fields.append(try parseField(bytes, line: lineStart..<lineEnd))
            lineStart = lineEnd + 2
        }
        let framing = try frame(bytes, fields, minorVersion: requestLine.minor)
        let keepAlive = !HeaderFields.hasToken(bytes, fields, .connection, close)
            && (requestLine.minor >= 1 || HeaderFields.hasToken(bytes, fields, .connection, keepAliveToken))
        return RequestHead(bytes: Array(bytes[..<end]), method: requestLine.method, targetRange: requestLine.target,
                           minorVersion: requestLine.minor, fields: fields, contentLength: framing.contentLength,
                           chunked: framing.chunked, keepAlive: keepAlive)
    }

    /// The number of CRLF-ended lines in `head`.
    private static func countLines(_ head: UnsafeRawBufferPointer) throws(RequestHeadError) -> Int {
        var lines = 0
        var index = 0
        while index < head.count {
            switch head[index] {
            case 0x0A:
                // A line feed not preceded by a carriage return.
                throw RequestHeadError(status: 400, problem: "bare LF in request head")
            case 0x0D:
                guard index + 1 < head.count, head[index + 1] == 0x0A else {
                    throw RequestHeadError(status: 400, problem: "bare CR in request head")
                }
                lines += 1
                index += 2
            case 0:
                throw RequestHeadError(status: 400, problem: "NUL byte in request head")
            default:
                index += 1
            }
        }
        return lines
    }

    private static func parseRequestLine(_ line: UnsafeRawBufferPointer) throws(RequestHeadError)
        -> (method: String, target: Range<Int>, minor: Int) {
        guard let methodEnd = line.firstIndex(of: 0x20),
              let targetEnd = line[(methodEnd + 1)...].firstIndex(of: 0x20),
              !line[(targetEnd + 1)...].contains(0x20), methodEnd > 0, targetEnd > methodEnd + 1 else {
            throw RequestHeadError(status: 400, problem: "malformed request line")
        }
        guard line[..<methodEnd].allSatisfy(isTokenByte) else {
            throw RequestHeadError(status: 400, problem: "malformed method")
        }
        guard line[(methodEnd + 1)..<targetEnd].allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw RequestHeadError(status: 400, problem: "malformed request target")
        }
        let version = UnsafeRawBufferPointer(rebasing: line[(targetEnd + 1)...])
        let minor: Int
        if version.count == 8, version.starts(with: "HTTP/1.".utf8), version[7] == 0x31 || version[7] == 0x30 {
            minor = version[7] == 0x31 ? 1 : 0
        } else if version.starts(with: "HTTP/".utf8) {
            let number = String(decoding: version.dropFirst(5), as: UTF8.self)
            throw RequestHeadError(status: 505, problem: "HTTP version \(number) not supported")
        } else {
            throw RequestHeadError(status: 400, problem: "malformed HTTP version")
        }
        return (String(decoding: line[..<methodEnd], as: UTF8.self), (methodEnd + 1)..<targetEnd, minor)
    }

    private static func parseField(_ head: UnsafeRawBufferPointer, line: Range<Int>) throws(RequestHeadError)
        -> HeaderField {
        guard !line.isEmpty else { throw RequestHeadError(status: 400, problem: "empty header line") }
        let first = head[line.lowerBound]
        if first == 0x20 || first == 0x09 {
            throw RequestHeadError(status: 400, problem: "obsolete line folding in header")
        }
        guard let colon = head[line].firstIndex(of: UInt8(ascii: ":")) else {
            throw RequestHeadError(status: 400, problem: "header line without a colon")
        }
        guard colon > line.lowerBound, head[line.lowerBound..<colon].allSatisfy(isTokenByte) else {
            // Includes white space between the name and the colon (RFC 9112 section 5.1).
            throw RequestHeadError(status: 400, problem: "malformed header name")
        }
        let field = HeaderField(head, line: line, colon: colon)
        guard head[field.value].allSatisfy({ $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) }) else {
            throw RequestHeadError(status: 400, problem: "control character in header value")
        }
        return field
    }

    /// Body framing (RFC 9112 section 6): refuse every ambiguity instead of guessing.
    private static func frame(_ head: UnsafeRawBufferPointer, _ fields: [HeaderField], minorVersion: Int)
        throws(RequestHeadError) -> (contentLength: Int?, chunked: Bool) {
        // Every comma-separated element of every Content-Length field, empty ones included.
        var firstLength: Range<Int>?
        var conflicting = false
        // The Transfer-Encoding codings, in order.
        var encodings = 0
        var chunkedCount = 0
        var lastIsChunked = false
        for field in fields {
            switch field.kind {
            case .contentLength:
                HeaderFields.forEachToken(head, in: field.value, keepingEmpty: true) { element in
                    if let first = firstLength {
                        if !head[element].elementsEqual(head[first]) { conflicting = true }
                    } else {
                        firstLength = element
                    }
                }
            case .transferEncoding:
                HeaderFields.forEachToken(head, in: field.value) { coding in
                    encodings += 1
                    lastIsChunked = HeaderFields.equalsIgnoringCase(UnsafeRawBufferPointer(rebasing: head[coding]),
                                                                    lowercase: chunkedCoding)
                    if lastIsChunked { chunkedCount += 1 }
                }
            default:
                break
            }
        }
        if firstLength != nil, encodings > 0 {
            throw RequestHeadError(status: 400, problem: "both Content-Length and Transfer-Encoding")
        }
        var contentLength: Int?
        if let first = firstLength {
            guard !conflicting else { throw RequestHeadError(status: 400, problem: "conflicting Content-Length values") }
            guard !first.isEmpty, first.count <= 18, head[first].allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
                throw RequestHeadError(status: 400, problem: "invalid Content-Length")
            }
            contentLength = head[first].reduce(0) { $0 * 10 + Int($1 - 0x30) }
        }
        if encodings > 0 {
            guard lastIsChunked, chunkedCount == 1 else {
                throw RequestHeadError(status: 400, problem: "unsupported Transfer-Encoding")
            }
            if minorVersion == 0 {
                throw RequestHeadError(status: 400, problem: "Transfer-Encoding in an HTTP/1.0 request")
            }
        }
        return (contentLength, encodings > 0)
    }

    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "!"), UInt8(ascii: "#"),
             UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"), UInt8(ascii: "'"), UInt8(ascii: "*"),
             UInt8(ascii: "+"), UInt8(ascii: "."), UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"),
             UInt8(ascii: "|"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }
}
