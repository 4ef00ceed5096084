import Testing
import TestSupport
import TLSWire

@Suite("ServerHello")
struct ServerHelloTests {
    typealias C = CapturedHandshakes

    static func hello(_ capture: CapturedHandshake) throws -> ServerHello {
        try ServerHello(#require(capture.messages(.serverHello, fromServer: true).last))
    }

    /// The version and suite each capture's command forced (see CapturedHandshakes.swift).
    @Test("the negotiated version and suite of each capture", arguments: [
        (C.tls13, TLSProtocolVersion.tls13, UInt16(0x1302)),
        (C.curl, TLSProtocolVersion.tls13, 0x1302),
        (C.tls13HelloRetry, TLSProtocolVersion.tls13, 0x1302),
        (C.tls12EcdheRSA, TLSProtocolVersion.tls12, 0xC02F),
        (C.tls12Fragmented, TLSProtocolVersion.tls12, 0xC02F),
        (C.tls12RSA, TLSProtocolVersion.tls12, 0x002F),
        (C.tls10, TLSProtocolVersion.tls10, 0xC014),
    ] as [(CapturedHandshake, UInt16, UInt16)])
    func negotiated(_ capture: CapturedHandshake, version: UInt16, suite: UInt16) throws {
        let hello = try Self.hello(capture)
        #expect(hello.negotiatedVersion == version)
        #expect(hello.cipherSuite == suite)
        #expect(hello.random.count == 32)
        #expect(!hello.isHelloRetryRequest)
        #expect(hello.compressionMethod == 0)
    }

    @Test("TLS 1.3: legacy_version 0x0303, supported_versions 0x0304, reported as TLSv1.3")
    func tls13Version() throws {
        let hello = try Self.hello(C.tls13)
        #expect(hello.legacyVersion == 0x0303)
        #expect(hello.selectedVersion == 0x0304)
        #expect(TLSProtocolVersion.name(for: hello.negotiatedVersion) == "TLSv1.3")
        #expect(hello.extensionTypes.contains(TLSExtensionType.supportedVersions))
    }

    @Test("TLS 1.2 and 1.0: no supported_versions, the legacy version is the version")
    func tls12Version() throws {
        #expect(try Self.hello(C.tls12EcdheRSA).selectedVersion == nil)
        #expect(try Self.hello(C.tls10).legacyVersion == 0x0301)
    }

    @Test("a real HelloRetryRequest is recognised by its random and selects TLS 1.3")
    func helloRetryRequest() throws {
        let retry = try ServerHello(#require(C.tls13HelloRetry.messages(.serverHello, fromServer: true).first))
        #expect(retry.isHelloRetryRequest)
        #expect(retry.random == ServerHello.helloRetryRequestRandom)
        #expect(retry.negotiatedVersion == TLSProtocolVersion.tls13)
        #expect(retry.extensionTypes.contains(TLSExtensionType.keyShare))
    }

    @Test("the HelloRetryRequest random is SHA-256 of \"HelloRetryRequest\" (RFC 8446 4.1.3)")
    func helloRetryRandom() {
        #expect(ServerHello.helloRetryRequestRandom == hexBytes("""
            CF21AD74E59A6111BE1D8C021E65B891C2A211167ABB8C5E079E09E2C8A8339C
            """))
    }

    /// A ServerHello body: TLS 1.2 version, zero random, no session id, the suite, then extensions.
    static func body(suite: UInt16 = 0xC02F, extensions: [(UInt16, [UInt8])]?) -> [UInt8] {
        var bytes: [UInt8] = [3, 3] + [UInt8](repeating: 0, count: 32) + [0, UInt8(suite >> 8), UInt8(suite & 0xFF), 0]
        if let extensions {
            let block = extensions.flatMap { type, data in
                [UInt8(type >> 8), UInt8(type & 0xFF), UInt8(data.count >> 8), UInt8(data.count & 0xFF)] + data
            }
            bytes += [UInt8(block.count >> 8), UInt8(block.count & 0xFF)] + block
        }
        return bytes
    }

    @Test("OpenSSL's TLS 1.2 ServerHellos carry the extended master secret (R18); TLS 1.3 ones do not need it")
    func extendedMasterSecret() throws {
        #expect(try Self.hello(C.tls12EcdheRSA).extendedMasterSecret)
        #expect(try Self.hello(C.tls12RSA).extendedMasterSecret)
        #expect(try !Self.hello(C.tls13).extendedMasterSecret)
        #expect(try !ServerHello(body: Self.body(extensions: nil)).extendedMasterSecret)
        #expect(try ServerHello(body: Self.body(extensions: [(23, [])])).extendedMasterSecret)
    }

    @Test("the signed_certificate_timestamp extension is split into its SCTs (R16)")
    func signedCertificateTimestamps() throws {
        let first: [UInt8] = [0, 1, 2], second: [UInt8] = [0, 9]
        let list: [UInt8] = [0, 3] + first + [0, 2] + second
        let hello = try ServerHello(body: Self.body(extensions: [(18, [0, UInt8(list.count)] + list)]))
        #expect(hello.signedCertificateTimestamps == [first, second])
        #expect(try Self.hello(C.tls12EcdheRSA).signedCertificateTimestamps.isEmpty)
        // A list that overruns its extension, or an empty SCT, is malformed.
        #expect(throws: TLSWireError.self) { try ServerHello(body: Self.body(extensions: [(18, [0, 9, 0, 1, 5])])) }
        #expect(throws: TLSWireError.self) { try ServerHello(body: Self.body(extensions: [(18, [0, 2, 0, 0])])) }
    }

    @Test("a minimal TLS 1.2 ServerHello without extensions")
    func minimal() throws {
        let hello = try ServerHello(body: Self.body(extensions: nil))
        #expect(hello.negotiatedVersion == 0x0303)
        #expect(hello.extensionTypes.isEmpty)
        #expect(hello.alpnProtocol == nil)
    }

    @Test("the selected ALPN protocol")
    func alpn() throws {
        let hello = try ServerHello(body: Self.body(extensions: [(16, [0, 3, 2, 0x68, 0x32])]))
        #expect(hello.alpnProtocol == "h2")
    }

    @Test("malformed ServerHellos", arguments: [
        ("two ALPN protocols", [(UInt16(16), [UInt8](arrayLiteral: 0, 6, 2, 0x68, 0x32, 2, 0x68, 0x33))],
         "ALPN selects 2 protocols, not one"),
        ("a supported_versions list instead of one version", [(43, [2, 3, 4])],
         "1 byte left over after supported_versions"),
        ("a truncated supported_versions", [(43, [3])],
         "supported_versions selected_version needs 2 bytes, 1 left"),
        ("the same extension twice", [(43, [3, 4]), (43, [3, 4])], "extension 43 appears twice"),
    ] as [(String, [(UInt16, [UInt8])], String)])
    func malformed(_ name: String, _ extensions: [(UInt16, [UInt8])], _ reason: String) {
        #expect(throws: TLSWireError.malformed(message: "ServerHello", reason: reason), "\(name)") {
            try ServerHello(body: Self.body(extensions: extensions))
        }
    }

    @Test("a body cut anywhere is an error, except right before the optional extensions block")
    func truncated() throws {
        let body = try #require(C.tls13.messages(.serverHello, fromServer: true).first).body
        // version, random, session id, cipher suite, compression method
        let extensionsStart = 2 + 32 + 1 + Int(body[34]) + 2 + 1
        for end in 0..<body.count where end != extensionsStart {
            #expect(throws: TLSWireError.self, "cut at \(end)") { try ServerHello(body: Array(body[..<end])) }
        }
        let bare = try ServerHello(body: Array(body[..<extensionsStart]))
        #expect(bare.selectedVersion == nil && bare.cipherSuite == 0x1302)
    }
}
