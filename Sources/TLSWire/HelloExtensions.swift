/// The extensions block of a ClientHello or ServerHello: each extension's type and a cursor over its
/// data, in the order sent.
struct HelloExtensions {
    var entries: [(type: UInt16, data: ByteCursor)] = []

    var types: [UInt16] { entries.map(\.type) }

    /// Reads the optional extensions block that ends a hello (absent in some TLS 1.0-1.2 hellos).
    /// A type sent twice is an error (RFC 8446 section 4.2): a proxy and a server that each pick a
    /// different copy of server_name would disagree about the host.
    init(readingRestOf cursor: inout ByteCursor) throws(TLSWireError) {
        guard !cursor.isAtEnd else { return }
        var block = try cursor.vector(lengthBytes: 2, "extensions")
        try cursor.expectEnd("extensions")
        var seen = Set<UInt16>()
        while !block.isAtEnd {
            let type = try block.uint16("extension type")
            let data = try block.vector(lengthBytes: 2, "extension \(type) data")
            guard seen.insert(type).inserted else {
                throw cursor.failure("extension \(type) appears twice")
            }
            entries.append((type, data))
        }
    }

    func data(_ type: UInt16) -> ByteCursor? {
        entries.first { $0.type == type }?.data
    }
}
