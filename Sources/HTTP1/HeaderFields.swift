/// One header field of a head, as byte ranges into the head's bytes. The names the proxy acts on are
/// recognised once, when the head is parsed: lowercasing and comparing field names as Strings for
/// every question asked of a head was a large share of the forwarding path's CPU.
package struct HeaderField {
    package enum Kind: UInt8 {
        case other
        case connection, proxyConnection, keepAlive, te, trailer, upgrade, proxyAuthorization, proxyAuthenticate
        /// Any other `Proxy-*` field.
        case proxyOther
        case contentLength, transferEncoding, host, via, userAgent

        /// Fields that describe one connection, never forwarded; fields named in Connection join them.
        package var isHopByHop: Bool {
            switch self {
            case .connection, .proxyConnection, .keepAlive, .te, .trailer, .upgrade, .proxyAuthorization,
                 .proxyAuthenticate: true
            default: false
            }
        }

        package var isProxyField: Bool {
            switch self {
            case .proxyConnection, .proxyAuthorization, .proxyAuthenticate, .proxyOther: true
            default: false
            }
        }

        private static let named: [(name: [UInt8], kind: Kind)] = ([
            ("connection", .connection), ("proxy-connection", .proxyConnection), ("keep-alive", .keepAlive),
            ("te", .te), ("trailer", .trailer), ("upgrade", .upgrade), ("proxy-authorization", .proxyAuthorization),
            ("proxy-authenticate", .proxyAuthenticate), ("content-length", .contentLength),
            ("transfer-encoding", .transferEncoding), ("host", .host), ("via", .via), ("user-agent", .userAgent),
        ] as [(String, Kind)]).map { (Array($0.0.utf8), $0.1) }

        private static let proxyPrefix = Array("proxy-".utf8)

        package init(name: UnsafeRawBufferPointer) {
            for entry in Kind.named where entry.name.count == name.count {
                if HeaderFields.equalsIgnoringCase(name, lowercase: entry.name) {
                    self = entry.kind
                    return
                }
            }
            self = HeaderFields.hasPrefixIgnoringCase(name, lowercase: Kind.proxyPrefix) ? .proxyOther : .other
        }
    }

    package var kind: Kind
    package var name: Range<Int>
    /// Without the optional white space around it.
    package var value: Range<Int>

    /// The field in `line` (a head's line without its CRLF) whose name ends at `colon`.
    package init(_ head: UnsafeRawBufferPointer, line: Range<Int>, colon: Int) {
        var valueStart = colon + 1
        var valueEnd = line.upperBound
        while valueStart < valueEnd, head[valueStart] == 0x20 || head[valueStart] == 0x09 { valueStart += 1 }
        while valueEnd > valueStart, head[valueEnd - 1] == 0x20 || head[valueEnd - 1] == 0x09 { valueEnd -= 1 }
        name = line.lowerBound..<colon
        value = valueStart..<valueEnd
        kind = Kind(name: UnsafeRawBufferPointer(rebasing: head[name]))
    }
}

/// What requests and responses share about header fields (RFC 9110 section 7.6.1), read from and
/// written to bytes.
package enum HeaderFields {
    /// The pseudonym this proxy writes in Via fields; a request that already carries it is looping.
    package static let viaToken = "atsgate"

    private static let via = (Array("Via: 1.0 \(viaToken)\r\n".utf8),
                              Array("Via: 1.1 \(viaToken)\r\n".utf8))

    /// The Via field line this proxy adds to a message it received as HTTP/1.`minor`.
    package static func via(receivedMinorVersion minor: Int) -> [UInt8] { minor == 1 ? via.1 : via.0 }

    /// ASCII case-insensitive equality with lowercase bytes.
    package static func equalsIgnoringCase(_ bytes: UnsafeRawBufferPointer, lowercase: [UInt8]) -> Bool {
        guard bytes.count == lowercase.count else { return false }
        for index in 0..<bytes.count where lowercased(bytes[index]) != lowercase[index] { return false }
        return true
    }

    /// ASCII case-insensitive prefix test against lowercase bytes.
    package static func hasPrefixIgnoringCase(_ bytes: UnsafeRawBufferPointer, lowercase: [UInt8]) -> Bool {
        bytes.count >= lowercase.count
            && equalsIgnoringCase(UnsafeRawBufferPointer(rebasing: bytes[..<lowercase.count]), lowercase: lowercase)
    }

    /// ASCII case-insensitive equality of two ranges of `head`.
    package static func equalsIgnoringCase(_ head: UnsafeRawBufferPointer, _ a: Range<Int>, _ b: Range<Int>) -> Bool {
        guard a.count == b.count else { return false }
        for offset in 0..<a.count
        where lowercased(head[a.lowerBound + offset]) != lowercased(head[b.lowerBound + offset]) {
            return false
        }
        return true
    }

    @inline(__always)
    private static func lowercased(_ byte: UInt8) -> UInt8 {
        byte &- UInt8(ascii: "A") < 26 ? byte | 0x20 : byte
    }

    /// Calls `body` with each element of a comma-separated value (`keep-alive, Upgrade`), optional
    /// white space trimmed. Elements with nothing between their commas are skipped unless
    /// `keepingEmpty`; one of white space only is passed on, empty, as a token that matches nothing.
    package static func forEachToken(_ head: UnsafeRawBufferPointer, in value: Range<Int>, keepingEmpty: Bool = false,
                             _ body: (Range<Int>) -> Void) {
        var start = value.lowerBound
        while true {
            var end = start
            while end < value.upperBound, head[end] != UInt8(ascii: ",") { end += 1 }
            var tokenStart = start
            var tokenEnd = end
            while tokenStart < tokenEnd, head[tokenStart] == 0x20 || head[tokenStart] == 0x09 { tokenStart += 1 }
            while tokenEnd > tokenStart, head[tokenEnd - 1] == 0x20 || head[tokenEnd - 1] == 0x09 { tokenEnd -= 1 }
            if keepingEmpty || start < end { body(tokenStart..<tokenEnd) }
            if end == value.upperBound { return }
            start = end + 1
        }
    }

    /// Whether any token of the fields of `kind` is `lowercase` (ASCII case-insensitively).
    package static func hasToken(_ head: UnsafeRawBufferPointer, _ fields: [HeaderField], _ kind: HeaderField.Kind,
                         _ lowercase: [UInt8]) -> Bool {
        var found = false
        for field in fields where field.kind == kind && !found {
            forEachToken(head, in: field.value) { token in
                if !found, equalsIgnoringCase(UnsafeRawBufferPointer(rebasing: head[token]), lowercase: lowercase) {
                    found = true
                }
            }
        }
        return found
    }

    /// Appends `Name: value` CRLF for each field to forward: hop-by-hop ones, the ones Connection
    /// names, Host (the caller writes the one it means), and (for requests) every Proxy-* field
    /// left out. Content-Length is written once, as `contentLength`, however the message spelled it.
    package static func appendForwardable(_ head: UnsafeRawBufferPointer, _ fields: [HeaderField], dropProxyFields: Bool,
                                  contentLength: Int?, dropTransferEncoding: Bool = false, to out: inout [UInt8]) {
        let named = namedByConnection(head, fields)
        var lengthWritten = false
        for field in fields {
            if field.kind.isHopByHop || field.kind == .host || (dropProxyFields && field.kind.isProxyField) { continue }
            if dropTransferEncoding && field.kind == .transferEncoding { continue }
            if field.kind == .contentLength {
                guard !lengthWritten, let contentLength else { continue }
                lengthWritten = true
                out.append(contentsOf: "Content-Length: \(contentLength)\r\n".utf8)
                continue
            }
            if !named.isEmpty, named.contains(lowercasedBytes(head, field.name)) { continue }
            out.append(contentsOf: UnsafeRawBufferPointer(rebasing: head[field.name]))
            out.append(UInt8(ascii: ":"))
            out.append(0x20)
            out.append(contentsOf: UnsafeRawBufferPointer(rebasing: head[field.value]))
            out.append(0x0D)
            out.append(0x0A)
        }
    }

    /// The field names Connection lists, lowercased, leaving out those that are hop-by-hop anyway and
    /// those that frame or route the message: a Connection token naming Content-Length,
    /// Transfer-Encoding or Host must never strip them, or the next hop reads the body as the next
    /// request. Gathered once per head: a head is up to 64 KiB (a response's), and matching every
    /// field against every token instead took an origin's crafted head 1.5 s of the loop's time.
    private static func namedByConnection(_ head: UnsafeRawBufferPointer, _ fields: [HeaderField]) -> Set<[UInt8]> {
        var named: Set<[UInt8]> = []
        for field in fields where field.kind == .connection {
            forEachToken(head, in: field.value) { token in
                switch HeaderField.Kind(name: UnsafeRawBufferPointer(rebasing: head[token])) {
                case let kind where kind.isHopByHop: break
                case .contentLength, .transferEncoding, .host: break
                default: named.insert(lowercasedBytes(head, token))
                }
            }
        }
        return named
    }

    private static func lowercasedBytes(_ head: UnsafeRawBufferPointer, _ range: Range<Int>) -> [UInt8] {
        head[range].map(lowercased)
    }
}
