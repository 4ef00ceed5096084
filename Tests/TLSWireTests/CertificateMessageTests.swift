import Testing
import TestSupport
import TLSWire

@Suite("CertificateMessage")
struct CertificateMessageTests {
    typealias C = CapturedHandshakes

    static func certificate(_ capture: CapturedHandshake) throws -> CertificateMessage {
        try CertificateMessage(#require(capture.messages(.certificate, fromServer: true).first))
    }

    @Test("each TLS 1.0-1.2 capture carries the one self-signed DER certificate for api.example.com",
          arguments: [C.tls12EcdheRSA, C.tls12RSA, C.tls12Fragmented, C.tls10])
    func captured(_ capture: CapturedHandshake) throws {
        let message = try Self.certificate(capture)
        #expect(message.certificates.count == 1)
        let leaf = try #require(message.leaf)
        // A DER SEQUENCE with a two-byte length that covers exactly the certificate.
        #expect(leaf[0] == 0x30 && leaf[1] == 0x82)
        #expect(Int(leaf[2]) << 8 | Int(leaf[3]) == leaf.count - 4)
        #expect(contains(leaf, Array("api.example.com".utf8)))
        #expect(message.requestContext.isEmpty)
    }

    @Test("all four captures saw the same certificate, the fragmented one included")
    func sameCertificate() throws {
        let captures: [CapturedHandshake] = [C.tls12EcdheRSA, C.tls12RSA, C.tls12Fragmented, C.tls10]
        var leaves = Set<[UInt8]>()
        for capture in captures {
            leaves.insert(try #require(Self.certificate(capture).leaf))
        }
        #expect(leaves.count == 1)
    }

    /// TLS 1.3's layout built around the real DER: context, then entries with extensions.
    static func tls13Body(context: [UInt8], entries: [([UInt8], [UInt8])]) -> [UInt8] {
        var list: [UInt8] = []
        for (der, extensions) in entries {
            list += uint24(der.count)
            list += der
            list += [UInt8(extensions.count >> 8), UInt8(extensions.count & 0xFF)]
            list += extensions
        }
        return [UInt8(context.count)] + context + uint24(list.count) + list
    }

    static func uint24(_ value: Int) -> [UInt8] {
        [UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }

    @Test("the TLS 1.3 form: request context and per-entry extensions")
    func tls13Form() throws {
        let der = try #require(Self.certificate(C.tls12EcdheRSA).leaf)
        let body = Self.tls13Body(context: [1, 2, 3], entries: [(der, [0, 5, 0, 1, 0, 0]), (der, [])])
        let message = try CertificateMessage(body: body, format: .tls13)
        #expect(message.certificates == [der, der])
        #expect(message.requestContext == [1, 2, 3])
        #expect(message.format == .tls13)
    }

    @Test("the format follows the negotiated version")
    func formatForVersion() {
        #expect(CertificateMessage.Format(negotiatedVersion: 0x0304) == .tls13)
        #expect(CertificateMessage.Format(negotiatedVersion: 0x0303) == .tls12)
        #expect(CertificateMessage.Format(negotiatedVersion: 0x0301) == .tls12)
    }

    @Test("an empty list is no certificates")
    func empty() throws {
        #expect(try CertificateMessage(body: [0, 0, 0]).certificates.isEmpty)
        #expect(try CertificateMessage(body: [0, 0, 0, 0], format: .tls13).certificates.isEmpty)
    }

    @Test("malformed Certificate messages", arguments: [
        ([UInt8](arrayLiteral: 0, 0, 3, 0, 0, 0), CertificateMessage.Format.tls12,
         "certificate 0 length 0 is outside 1...16777215"),
        ([0, 0, 5, 0, 0, 9, 0x30, 0], .tls12, "certificate 0 needs 9 bytes, 2 left"),
        ([0, 0, 9, 0x30], .tls12, "certificate_list needs 9 bytes, 1 left"),
        ([0, 0, 4, 0, 0, 1, 0x30, 9], .tls12, "1 byte left over after certificate_list"),
        ([0, 0, 0, 6, 0, 0, 1, 0x30, 0, 5], .tls13, "certificate 0 extensions needs 5 bytes, 0 left"),
        ([5, 1], .tls13, "certificate_request_context needs 5 bytes, 1 left"),
    ] as [([UInt8], CertificateMessage.Format, String)])
    func malformed(_ body: [UInt8], _ format: CertificateMessage.Format, _ reason: String) {
        #expect(throws: TLSWireError.malformed(message: "Certificate", reason: reason)) {
            try CertificateMessage(body: body, format: format)
        }
    }

    @Test("a ServerHello is not a Certificate")
    func wrongType() throws {
        let message = try #require(C.tls12RSA.messages(.serverHello, fromServer: true).first)
        #expect(throws: TLSWireError.unexpectedMessage(expected: .certificate, got: .serverHello)) {
            try CertificateMessage(message)
        }
    }
}

func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
    guard needle.count <= haystack.count else { return false }
    return (0...(haystack.count - needle.count)).contains { haystack[$0..<$0 + needle.count].elementsEqual(needle) }
}
