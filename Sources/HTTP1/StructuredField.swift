/// The pieces of Structured Field Values (RFC 9651, formerly RFC 8941) that the proxy writes: tokens
/// and strings, the bare items of `Proxy-Status` (RFC 9209). Writing only: the proxy never reads a
/// structured field.
package enum StructuredField {
    /// Whether `text` is an sf-token: ALPHA or "*", then tchar, ":" or "/" (RFC 9651 section 3.3.4).
    package static func isToken(_ text: String) -> Bool {
        var bytes = text.utf8.makeIterator()
        guard let first = bytes.next(), isAlpha(first) || first == UInt8(ascii: "*") else { return false }
        while let byte = bytes.next() {
            guard MessageSyntax.isTokenByte(byte) || byte == UInt8(ascii: ":") || byte == UInt8(ascii: "/") else {
                return false
            }
        }
        return true
    }

    /// Whether `text` can be an sf-string: printable ASCII only (0x20-0x7E), section 3.3.3.
    package static func isStringContent(_ text: String) -> Bool {
        text.utf8.allSatisfy { (0x20...0x7E).contains($0) }
    }

    /// `text` as an sf-string: quoted, `"` and `\` escaped; a byte an sf-string cannot hold (a control
    /// character, anything outside ASCII) becomes `?`, so the field always parses.
    package static func string(_ text: String) -> String {
        var out = "\""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                out.append("\\")
                out.append(Character(Unicode.Scalar(byte)))
            case 0x20...0x7E:
                out.append(Character(Unicode.Scalar(byte)))
            default:
                out.append("?")
            }
        }
        return out + "\""
    }

    /// `text` as a token when it is one, else as a string (a Proxy-Status member or `next-hop`).
    package static func tokenOrString(_ text: String) -> String {
        isToken(text) ? text : string(text)
    }

    private static func isAlpha(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte | 0x20)
    }
}
