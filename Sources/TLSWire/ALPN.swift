/// The ALPN extension's data (RFC 7301 section 3.1), shared by both hellos.
enum ALPN {
    static func protocolNames(_ data: inout ByteCursor) throws(TLSWireError) -> [String] {
        var list = try data.vector(lengthBytes: 2, "ALPN protocol_name_list", range: 2...0xFFFF)
        try data.expectEnd("ALPN protocol_name_list")
        var names: [String] = []
        while !list.isAtEnd {
            let name = try list.vector(lengthBytes: 1, "ALPN protocol name", range: 1...255)
            // Protocol names are opaque bytes; every registered one is ASCII, so lossy decoding only
            // matters for a name nobody registered, and then only in a log line.
            names.append(String(decoding: name.rest(), as: UTF8.self))
        }
        return names
    }
}
