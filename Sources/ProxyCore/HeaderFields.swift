/// What requests and responses share about header fields (RFC 9110 section 7.6.1).
enum HeaderFields {
    /// Fields that describe one connection, never forwarded; fields named in Connection join them.
    static let hopByHop: Set<String> = ["connection", "keep-alive", "proxy-connection", "te", "trailer", "upgrade",
                                        "proxy-authorization", "proxy-authenticate"]

    /// The offset just past the blank line (CRLFCRLF) that ends a head, looking no further than a
    /// head of `maximumLength` bytes; nil when there is none yet.
    static func headEnd(_ bytes: UnsafeRawBufferPointer, maximumLength: Int) -> Int? {
        let limit = min(bytes.count, maximumLength + 4)
        var index = 0
        while index + 3 < limit {
            if bytes[index + 3] == 0x0A, bytes[index + 2] == 0x0D, bytes[index + 1] == 0x0A, bytes[index] == 0x0D {
                return index + 4
            }
            index += 1
        }
        return nil
    }

    /// The comma-separated tokens of every field called `name` (lowercase), lowercased.
    static func tokens(_ fields: [(name: String, value: String)], _ name: String) -> [String] {
        fields.filter { $0.name.lowercased() == name }
            .flatMap { $0.value.split(separator: ",") }
            .map { trimmingOWS($0).lowercased() }
    }

    /// The fields to forward: hop-by-hop ones, the ones Connection names, and (for requests) every
    /// Proxy-* field removed.
    static func forwardable(_ fields: [(name: String, value: String)], dropProxyFields: Bool)
        -> [(name: String, value: String)]
    {
        let named = Set(tokens(fields, "connection"))
        return fields.filter { field in
            let lower = field.name.lowercased()
            return !hopByHop.contains(lower) && !named.contains(lower) && !(dropProxyFields && lower.hasPrefix("proxy-"))
        }
    }
}
