import Testing
import TestSupport
import TLSWire

@Suite("ClientHello")
struct ClientHelloTests {
    typealias C = CapturedHandshakes

    static func hello(_ capture: CapturedHandshake) throws -> ClientHello {
        try ClientHello(#require(capture.messages(.clientHello, fromServer: false).first))
    }

    @Test("every captured ClientHello names api.example.com and has a 32-byte random", arguments: C.all)
    func serverName(_ capture: CapturedHandshake) throws {
        let hello = try Self.hello(capture)
        #expect(hello.serverName == "api.example.com")
        #expect(hello.random.count == 32)
        #expect(hello.extensionTypes.contains(TLSExtensionType.serverName))
        #expect(hello.compressionMethods == [0])
    }

    @Test("openssl's TLS 1.3 ClientHello: versions, suites, ALPN and key share")
    func openssl13() throws {
        let hello = try Self.hello(C.tls13)
        #expect(hello.legacyVersion == TLSProtocolVersion.tls12)
        #expect(hello.supportedVersions == [TLSProtocolVersion.tls13])
        #expect(hello.alpnProtocols == ["h2", "http/1.1"])
        #expect(Set([0x1301, 0x1302, 0x1303]).isSubset(of: hello.cipherSuites))
        #expect(hello.extensionTypes.contains(TLSExtensionType.keyShare))
        // Middlebox compatibility mode: a fake 32-byte session id.
        #expect(hello.sessionID.count == 32)
    }

    @Test("curl's ClientHello offers TLS 1.3 and 1.2 and ALPN h2, http/1.1")
    func curl() throws {
        let hello = try Self.hello(C.curl)
        #expect(hello.alpnProtocols == ["h2", "http/1.1"])
        #expect(hello.supportedVersions.contains(TLSProtocolVersion.tls13))
        #expect(hello.supportedVersions.contains(TLSProtocolVersion.tls12))
        #expect(hello.cipherSuites.contains(0xC02F))
    }

    @Test("a TLS 1.2-only ClientHello restricted to AES128-SHA offers that suite and no TLS 1.3")
    func openssl12RSA() throws {
        let hello = try Self.hello(C.tls12RSA)
        #expect(hello.legacyVersion == TLSProtocolVersion.tls12)
        #expect(hello.supportedVersions.isEmpty)
        #expect(hello.cipherSuites.contains(0x002F))
        #expect(!hello.cipherSuites.contains { (0x1301...0x1305).contains($0) })
        #expect(hello.alpnProtocols.isEmpty)
    }

    @Test("a TLS 1.0 ClientHello says 0x0301")
    func openssl10() throws {
        #expect(try Self.hello(C.tls10).legacyVersion == TLSProtocolVersion.tls10)
    }

    @Test("the second ClientHello after a HelloRetryRequest parses too")
    func secondHello() throws {
        var reader = TLSHandshakeReader()
        reader.serverSentHelloRetryRequest()
        let hellos = try reader.feed(C.tls13HelloRetry.clientToServer).filter { $0.type == .clientHello }
        #expect(hellos.count == 2)
        let first = try ClientHello(hellos[0])
        let second = try ClientHello(hellos[1])
        #expect(first.random == second.random, "RFC 8446 4.1.2: the second ClientHello keeps the random")
        #expect(second.serverName == "api.example.com")
    }

    @Test("a ServerHello is not a ClientHello")
    func wrongType() throws {
        let message = try #require(C.tls13.messages(.serverHello, fromServer: true).first)
        #expect(throws: TLSWireError.unexpectedMessage(expected: .clientHello, got: .serverHello)) {
            try ClientHello(message)
        }
    }

    // MARK: Malformed, built by editing a real ClientHello

    /// The captured curl ClientHello with its extensions replaced.
    static func withExtensions(_ extensions: [(UInt16, [UInt8])]) throws -> [UInt8] {
        let body = try #require(C.curl.messages(.clientHello, fromServer: false).first).body
        // legacy_version, random, session id, cipher suites, compression methods.
        var offset = 2 + 32
        offset += 1 + Int(body[offset])
        offset += 2 + (Int(body[offset]) << 8 | Int(body[offset + 1]))
        offset += 1 + Int(body[offset])
        let block = extensions.flatMap { type, data in
            [UInt8(type >> 8), UInt8(type & 0xFF), UInt8(data.count >> 8), UInt8(data.count & 0xFF)] + data
        }
        return Array(body[..<offset]) + [UInt8(block.count >> 8), UInt8(block.count & 0xFF)] + block
    }

    static func sni(_ names: [(UInt8, [UInt8])]) -> [UInt8] {
        let list = names.flatMap { type, name in [type, UInt8(name.count >> 8), UInt8(name.count & 0xFF)] + name }
        return [UInt8(list.count >> 8), UInt8(list.count & 0xFF)] + list
    }

    @Test("a rebuilt ClientHello with only SNI parses: the editing helper is sound")
    func rebuilt() throws {
        let hello = try ClientHello(body: Self.withExtensions([(0, Self.sni([(0, Array("Example.COM".utf8))]))]))
        #expect(hello.serverName == "Example.COM", "kept as sent")
        #expect(hello.extensionTypes == [0])
    }

    @Test("no extensions block at all (TLS 1.0-1.2 allow it)")
    func noExtensions() throws {
        let full = try Self.withExtensions([])
        let hello = try ClientHello(body: Array(full.dropLast(2)))
        #expect(hello.serverName == nil)
        #expect(hello.extensionTypes.isEmpty)
    }

    @Test("a non-host_name entry is skipped")
    func otherNameType() throws {
        let hello = try ClientHello(body: Self.withExtensions([(0, Self.sni([(7, [1, 2]), (0, Array("a.test".utf8))]))]))
        #expect(hello.serverName == "a.test")
    }

    @Test("malformed ClientHellos are errors that name the field", arguments: [
        ("the same extension twice", [(UInt16(43), [UInt8](arrayLiteral: 2, 3, 4)), (43, [2, 3, 4])],
         "extension 43 appears twice"),
        ("two host names", [(0, sni([(0, Array("a.test".utf8)), (0, Array("b.test".utf8))]))],
         "server_name has two host_name entries"),
        ("a NUL in the host name", [(0, sni([(0, Array("a.test\u{0}.evil".utf8))]))],
         "server_name host_name contains a NUL byte"),
        ("a host name that is not UTF-8", [(0, sni([(0, [0x61, 0xFF, 0x62])]))],
         "server_name host_name is not UTF-8"),
        ("a host name over 255 bytes", [(0, sni([(0, Array(repeating: 0x61, count: 256))]))],
         "server_name host_name of 256 bytes is longer than 255"),
        ("an empty server name list", [(0, [0, 0])],
         "server_name list length 0 is outside 1...65535"),
        ("bytes after the server name list", [(0, sni([(0, Array("a.test".utf8))]) + [0])],
         "1 byte left over after server_name list"),
        ("an odd supported_versions list", [(43, [3, 3, 4, 3])],
         "supported_versions length 3 is odd"),
        ("an empty ALPN name", [(16, [0, 4, 2, 0x68, 0x32, 0])],
         "ALPN protocol name length 0 is outside 1...255"),
        ("an ALPN list longer than its extension", [(16, [0, 9, 2])],
         "ALPN protocol_name_list needs 9 bytes, 1 left"),
    ] as [(String, [(UInt16, [UInt8])], String)])
    func malformed(_ name: String, _ extensions: [(UInt16, [UInt8])], _ reason: String) throws {
        let body = try Self.withExtensions(extensions)
        #expect(throws: TLSWireError.malformed(message: "ClientHello", reason: reason), "\(name)") {
            try ClientHello(body: body)
        }
    }

    @Test("malformed fixed fields", arguments: [
        ("empty body", [UInt8](), "legacy_version needs 2 bytes, 0 left"),
        ("short random", [3, 3] + [UInt8](repeating: 0, count: 31), "random needs 32 bytes, 31 left"),
        ("session id of 33", [3, 3] + [UInt8](repeating: 0, count: 32) + [33],
         "legacy_session_id length 33 is outside 0...32"),
        ("odd cipher suites", [3, 3] + [UInt8](repeating: 0, count: 32) + [0, 0, 3, 0xC0, 0x2F, 0x00, 1, 0],
         "cipher_suites length 3 is odd"),
        ("no compression methods", [3, 3] + [UInt8](repeating: 0, count: 32) + [0, 0, 2, 0xC0, 0x2F, 0],
         "legacy_compression_methods length 0 is outside 1...255"),
        ("trailing byte after extensions",
         [3, 3] + [UInt8](repeating: 0, count: 32) + [0, 0, 2, 0xC0, 0x2F, 1, 0, 0, 0, 9],
         "1 byte left over after extensions"),
    ] as [(String, [UInt8], String)])
    func malformedFixed(_ name: String, _ body: [UInt8], _ reason: String) {
        #expect(throws: TLSWireError.malformed(message: "ClientHello", reason: reason), "\(name)") {
            try ClientHello(body: body)
        }
    }
}
