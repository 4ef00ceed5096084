import TLSWire

/// What a transparently intercepted connection carries, told from its first bytes, with no socket and
/// no state: the connection hands over everything it has read so far and gets a verdict, or is told
/// to read on. Until a ClientHello is whole only its record headers are walked, so one that comes in
/// many segments is parsed once.
///
/// A TLS ClientHello (whole, however many records and segments it came in) gives the host by its
/// server name; an HTTP/1.x request line hands the connection to the request head parser, which takes
/// the host from `Host`; anything else is another protocol (`other-protocol`). The decision never
/// waits for more than `limit` bytes.
package enum TransparentFirstBytes {
    package enum Outcome: Equatable {
        /// Nothing is decided yet: read on.
        case needMore
        /// A whole ClientHello (its bytes stay with the caller, for the origin).
        case tls(ClientHello)
        /// A request line of HTTP/1.0 or 1.1.
        case http
        /// Neither; the text says what the bytes looked like.
        case other(String)
    }

    /// The most the classification reads: a request head's limit (a ClientHello, even a post-quantum
    /// one of about 2 KB, is far below it).
    package static let limit = 16 * 1024

    /// Classifies `bytes`, everything the client has sent so far.
    package static func classify(_ bytes: [UInt8]) -> Outcome {
        guard let first = bytes.first else { return .needMore }
        if first == ContentType.handshake.rawValue { return classifyTLS(bytes) }
        switch requestLine(bytes) {
        case true?: return .http
        case nil where bytes.count <= limit: return .needMore
        default: return .other("the first bytes are neither a TLS ClientHello nor an HTTP/1.x request: " + describe(bytes))
        }
    }

    /// A ClientHello is parsed once its handshake message is whole: until then only the record
    /// headers are walked, to say how many bytes it needs.
    private static func classifyTLS(_ bytes: [UInt8]) -> Outcome {
        guard TLSHandshakeReader.looksLikeTLS(firstBytes: Array(bytes.prefix(6))) else {
            return .other("the first bytes start like TLS but are no ClientHello: " + describe(bytes))
        }
        // Walk the handshake records: the message's length is in its first 4 payload bytes, which
        // may themselves span records.
        var offset = 0, payload = 0, header: [UInt8] = [], needed: Int?
        while offset + 5 <= bytes.count, bytes[offset] == ContentType.handshake.rawValue {
            let length = Int(bytes[offset + 3]) << 8 | Int(bytes[offset + 4])
            guard offset + 5 + length <= bytes.count else { return wait(offset + 5 + length, bytes) }
            if needed == nil {
                header += bytes[(offset + 5)..<(offset + 5 + min(length, 4 - header.count))]
                if header.count == 4 { needed = 4 + (Int(header[1]) << 16 | Int(header[2]) << 8 | Int(header[3])) }
            }
            payload += length
            offset += 5 + length
            if let needed, payload >= needed { break }
        }
        if needed.map({ payload < $0 }) ?? true {
            if offset + 5 > bytes.count { return wait(offset + 5, bytes) }
            return .other("a ClientHello interrupted by a record of another type: " + describe(bytes))
        }
        var reader = TLSHandshakeReader(maximumMessageLength: limit)
        let messages: [HandshakeMessage]
        do {
            messages = try reader.feed(Array(bytes[..<offset]))
        } catch {
            return .other("the first bytes start like TLS but are no ClientHello (\(error)): " + describe(bytes))
        }
        guard let message = messages.first, message.type == .clientHello, let hello = try? ClientHello(message) else {
            return .other("the first TLS handshake message is not a valid ClientHello: " + describe(bytes))
        }
        return .tls(hello)
    }

    /// Waits for `count` bytes, unless that is past the limit.
    private static func wait(_ count: Int, _ bytes: [UInt8]) -> Outcome {
        count <= limit + 5 ? .needMore
            : .other("a ClientHello longer than \(limit / 1024) KiB: " + describe(bytes))
    }

    /// Whether `bytes` begin with an HTTP/1.x request line (RFC 9112 section 3: method SP target SP
    /// HTTP/1.x, then CRLF or a bare LF); nil while what there is could still become one. One empty
    /// line before it is allowed, as the request head parser allows it.
    static func requestLine(_ bytes: [UInt8]) -> Bool? {
        var index = 0
        if bytes.count >= 1, bytes[0] == 0x0D { index = bytes.count >= 2 && bytes[1] == 0x0A ? 2 : 1 }
        if index == 1 { return bytes.count == 1 ? nil : false }
        // The method: a token, as long as any method in use (PROPPATCH, MKCALENDAR, ...) and then some.
        let methodStart = index
        while index < bytes.count, isTokenByte(bytes[index]) {
            index += 1
            if index - methodStart > 24 { return false }
        }
        guard index < bytes.count else { return nil }
        guard index > methodStart, bytes[index] == 0x20 else { return false }
        index += 1
        // The target: visible bytes up to the next space.
        let targetStart = index
        while index < bytes.count, bytes[index] > 0x20, bytes[index] != 0x7F { index += 1 }
        guard index < bytes.count else { return nil }
        guard index > targetStart, bytes[index] == 0x20 else { return false }
        index += 1
        let version = Array("HTTP/1.".utf8)
        for expected in version {
            guard index < bytes.count else { return nil }
            guard bytes[index] == expected else { return false }
            index += 1
        }
        guard index < bytes.count else { return nil }
        guard bytes[index] == UInt8(ascii: "0") || bytes[index] == UInt8(ascii: "1") else { return false }
        index += 1
        guard index < bytes.count else { return nil }
        if bytes[index] == 0x0A { return true }
        guard bytes[index] == 0x0D else { return false }
        index += 1
        guard index < bytes.count else { return nil }
        return bytes[index] == 0x0A
    }

    /// RFC 9110 section 5.6.2's tchar.
    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        default:
            Array("!#$%&'*+-.^_`|~".utf8).contains(byte)
        }
    }

    /// The first bytes for a record's message: hex, and the printable ones as text (`SSH-2.0-...`).
    package static func describe(_ bytes: [UInt8]) -> String {
        let head = bytes.prefix(12)
        let hex = head.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }
            .joined(separator: " ")
        let text = String(decoding: head.map { (0x20..<0x7F).contains($0) ? $0 : UInt8(ascii: ".") }, as: UTF8.self)
        return "\(hex)\(bytes.count > head.count ? " ..." : "") (\"\(text)\")"
    }
}
