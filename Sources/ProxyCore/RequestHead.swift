/// A parsed HTTP/1.x request head, as a proxy receives it.
struct RequestHead {
    var method: String
    var target: String
    /// 0 for HTTP/1.0, 1 for HTTP/1.1.
    var minorVersion: Int
    /// Header fields in order, names as sent.
    var fields: [(name: String, value: String)]
    var contentLength: Int?
    var chunked: Bool
    /// Bytes of the head including the blank line.
    var length: Int

    func field(_ name: String) -> String? {
        fields.first { $0.name.lowercased() == name }?.value
    }

    /// Tokens of a comma-separated field (`Connection: keep-alive, Upgrade`), lowercased.
    func tokens(_ name: String) -> [String] { HeaderFields.tokens(fields, name) }

    /// The client wants the connection kept open after this exchange.
    var keepAlive: Bool {
        let connection = tokens("connection")
        if connection.contains("close") { return false }
        return minorVersion >= 1 || connection.contains("keep-alive")
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

    /// The head at the start of `bytes`, nil when it is not complete yet.
    static func parse(_ bytes: UnsafeRawBufferPointer) throws(RequestHeadError) -> RequestHead? {
        guard let end = HeaderFields.headEnd(bytes, maximumLength: maximumHeadLength) else {
            if bytes.count > maximumHeadLength {
                throw RequestHeadError(status: 431, problem: "request head larger than 16 KiB")
            }
            return nil
        }
        if end > maximumHeadLength { throw RequestHeadError(status: 431, problem: "request head larger than 16 KiB") }
        var lines: [UnsafeRawBufferPointer] = []
        var start = 0
        var index = 0
        while index < end - 2 {
            let byte = bytes[index]
            if byte == 0x0A {
                // A line feed not preceded by a carriage return.
                throw RequestHeadError(status: 400, problem: "bare LF in request head")
            }
            if byte == 0x0D {
                guard bytes[index + 1] == 0x0A else { throw RequestHeadError(status: 400, problem: "bare CR in request head") }
                lines.append(UnsafeRawBufferPointer(rebasing: bytes[start..<index]))
                index += 2
                start = index
                continue
            }
            if byte == 0 { throw RequestHeadError(status: 400, problem: "NUL byte in request head") }
            index += 1
        }
        guard let requestLine = lines.first else { throw RequestHeadError(status: 400, problem: "empty request") }
        var head = try parseRequestLine(requestLine)
        head.length = end
        guard lines.count - 1 <= maximumFields else {
            throw RequestHeadError(status: 431, problem: "more than \(maximumFields) header fields")
        }
        for line in lines.dropFirst() {
            head.fields.append(try parseField(line))
        }
        try frame(&head)
        return head
    }

    private static func parseRequestLine(_ line: UnsafeRawBufferPointer) throws(RequestHeadError) -> RequestHead {
        let parts = line.split(separator: 0x20, omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, !parts[1].isEmpty else {
            throw RequestHeadError(status: 400, problem: "malformed request line")
        }
        guard parts[0].allSatisfy(isTokenByte) else { throw RequestHeadError(status: 400, problem: "malformed method") }
        guard parts[1].allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw RequestHeadError(status: 400, problem: "malformed request target")
        }
        let version = String(decoding: parts[2], as: UTF8.self)
        let minor: Int
        switch version {
        case "HTTP/1.1": minor = 1
        case "HTTP/1.0": minor = 0
        default:
            if version.hasPrefix("HTTP/") {
                throw RequestHeadError(status: 505, problem: "HTTP version \(version.dropFirst(5)) not supported")
            }
            throw RequestHeadError(status: 400, problem: "malformed HTTP version")
        }
        return RequestHead(method: String(decoding: parts[0], as: UTF8.self),
                           target: String(decoding: parts[1], as: UTF8.self),
                           minorVersion: minor, fields: [], contentLength: nil, chunked: false, length: 0)
    }

    private static func parseField(_ line: UnsafeRawBufferPointer) throws(RequestHeadError) -> (name: String, value: String) {
        guard let first = line.first else { throw RequestHeadError(status: 400, problem: "empty header line") }
        if first == 0x20 || first == 0x09 {
            throw RequestHeadError(status: 400, problem: "obsolete line folding in header")
        }
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else {
            throw RequestHeadError(status: 400, problem: "header line without a colon")
        }
        let name = line[..<colon]
        guard !name.isEmpty, name.allSatisfy(isTokenByte) else {
            // Includes white space between the name and the colon (RFC 9112 section 5.1).
            throw RequestHeadError(status: 400, problem: "malformed header name")
        }
        var value = line[(colon + 1)...]
        while let byte = value.first, byte == 0x20 || byte == 0x09 { value = value.dropFirst() }
        while let byte = value.last, byte == 0x20 || byte == 0x09 { value = value.dropLast() }
        guard value.allSatisfy({ $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) }) else {
            throw RequestHeadError(status: 400, problem: "control character in header value")
        }
        return (String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self))
    }

    /// Body framing (RFC 9112 section 6): refuse every ambiguity instead of guessing.
    private static func frame(_ head: inout RequestHead) throws(RequestHeadError) {
        let lengths = head.fields.filter { $0.name.lowercased() == "content-length" }.flatMap {
            $0.value.split(separator: ",", omittingEmptySubsequences: false).map { trimmingOWS($0) }
        }
        let encodings = head.tokens("transfer-encoding")
        if !lengths.isEmpty, !encodings.isEmpty {
            throw RequestHeadError(status: 400, problem: "both Content-Length and Transfer-Encoding")
        }
        if let first = lengths.first {
            guard lengths.allSatisfy({ $0 == first }) else {
                throw RequestHeadError(status: 400, problem: "conflicting Content-Length values")
            }
            guard !first.isEmpty, first.utf8.count <= 18, first.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                  let length = Int(first) else {
                throw RequestHeadError(status: 400, problem: "invalid Content-Length")
            }
            head.contentLength = length
        }
        if !encodings.isEmpty {
            guard encodings.last == "chunked", encodings.filter({ $0 == "chunked" }).count == 1 else {
                throw RequestHeadError(status: 400, problem: "unsupported Transfer-Encoding")
            }
            if head.minorVersion == 0 {
                throw RequestHeadError(status: 400, problem: "Transfer-Encoding in an HTTP/1.0 request")
            }
            head.chunked = true
        }
    }

    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }
}

/// Optional white space (SP, HTAB) removed from both ends.
func trimmingOWS(_ text: Substring) -> String {
    var slice = text[...]
    while let first = slice.first, first == " " || first == "\t" { slice = slice.dropFirst() }
    while let last = slice.last, last == " " || last == "\t" { slice = slice.dropLast() }
    return String(slice)
}
