import Testing
import TestSupport
import TLSWire

/// The reader against real captured flights, however the bytes are chunked.
@Suite("TLSHandshakeReader")
struct TLSHandshakeReaderTests {
    typealias C = CapturedHandshakes

    /// What each captured direction holds in plaintext, from the capture commands (see
    /// CapturedHandshakes.swift): TLS 1.3 ends at the compatibility ChangeCipherSpec, TLS 1.0-1.2 at the
    /// ChangeCipherSpec before the encrypted Finished (a handshake record the reader must not parse).
    struct Expected: Sendable, CustomStringConvertible {
        var capture: CapturedHandshake
        var fromServer: Bool
        var types: [HandshakeType]
        var stoppedAt: ContentType?
        var description: String { "\(capture.name) \(fromServer ? "server" : "client")" }
    }

    static let tls12Server: [HandshakeType] = [.serverHello, .certificate, .serverKeyExchange, .serverHelloDone,
                                               .newSessionTicket]
    static let expectations: [Expected] = [
        Expected(capture: C.tls13, fromServer: false, types: [.clientHello], stoppedAt: .changeCipherSpec),
        Expected(capture: C.tls13, fromServer: true, types: [.serverHello], stoppedAt: .changeCipherSpec),
        // The server's side goes on past its compatibility ChangeCipherSpec to the real ServerHello.
        Expected(capture: C.tls13HelloRetry, fromServer: true, types: [.serverHello, .serverHello],
                 stoppedAt: .applicationData),
        // Told nothing, the client's side stops at the client's compatibility ChangeCipherSpec.
        Expected(capture: C.tls13HelloRetry, fromServer: false, types: [.clientHello], stoppedAt: .changeCipherSpec),
        Expected(capture: C.tls12EcdheRSA, fromServer: false, types: [.clientHello, .clientKeyExchange],
                 stoppedAt: .changeCipherSpec),
        Expected(capture: C.tls12EcdheRSA, fromServer: true, types: tls12Server, stoppedAt: .changeCipherSpec),
        Expected(capture: C.tls12RSA, fromServer: false, types: [.clientHello, .clientKeyExchange],
                 stoppedAt: .changeCipherSpec),
        // RSA key exchange: no ServerKeyExchange.
        Expected(capture: C.tls12RSA, fromServer: true, types: [.serverHello, .certificate, .serverHelloDone,
                                                                 .newSessionTicket], stoppedAt: .changeCipherSpec),
        Expected(capture: C.tls12Fragmented, fromServer: true, types: tls12Server, stoppedAt: .changeCipherSpec),
        Expected(capture: C.tls10, fromServer: false, types: [.clientHello, .clientKeyExchange],
                 stoppedAt: .changeCipherSpec),
        Expected(capture: C.tls10, fromServer: true, types: tls12Server, stoppedAt: .changeCipherSpec),
        Expected(capture: C.protocolVersionAlert, fromServer: false, types: [.clientHello], stoppedAt: nil),
        Expected(capture: C.protocolVersionAlert, fromServer: true, types: [], stoppedAt: .alert),
        Expected(capture: C.curl, fromServer: false, types: [.clientHello], stoppedAt: .changeCipherSpec),
        Expected(capture: C.curl, fromServer: true, types: [.serverHello], stoppedAt: .changeCipherSpec),
    ]

    static func bytes(_ expected: Expected) -> [UInt8] {
        expected.fromServer ? expected.capture.serverToClient : expected.capture.clientToServer
    }

    @Test("each captured direction reads as its handshake messages, then stops", arguments: expectations)
    func capturedFlights(_ expected: Expected) {
        let result = transcript(Self.bytes(expected))
        #expect(result.error == nil)
        #expect(result.types == expected.types)
        #expect(result.stoppedAt == expected.stoppedAt)
    }

    @Test("byte by byte and in seeded random chunks, the same messages", arguments: expectations)
    func chunking(_ expected: Expected) {
        let bytes = Self.bytes(expected)
        let whole = transcript(bytes)
        #expect(transcript(bytes.indices.map { bytes[$0...$0] }) == whole)
        var generator = SeededGenerator(seed: 0x7153_0001)
        for _ in 0..<50 {
            #expect(transcript(randomChunks(bytes, using: &generator)) == whole)
        }
    }

    @Test("every prefix: no error, and only messages that are whole", arguments: expectations)
    func prefixes(_ expected: Expected) {
        let bytes = Self.bytes(expected)
        let whole = transcript(bytes)
        var seen = 0
        for end in 0...bytes.count {
            let partial = transcript(Array(bytes[..<end]))
            #expect(partial.error == nil, "prefix of \(end) bytes")
            #expect(Array(whole.messages.prefix(partial.messages.count)) == partial.messages)
            #expect(partial.messages.count >= seen, "messages never disappear as bytes arrive")
            seen = partial.messages.count
        }
        #expect(seen == whole.messages.count)
    }

    @Test("the Certificate split over 512-byte records reassembles to the same certificate")
    func realFragmentation() throws {
        let fragmented = C.tls12Fragmented.serverTranscript.messages
        let whole = C.tls12EcdheRSA.serverTranscript.messages
        let fragmentedCertificate = try #require(fragmented.first { $0.type == .certificate })
        #expect(fragmentedCertificate.body.count > 512, "the capture really split it")
        // Both captures ran against the same certificate.
        #expect(fragmentedCertificate == whole.first { $0.type == .certificate })
    }

    @Test("the whole TLS 1.2 server flight in one record, or in records of any size", arguments: [
        1, 2, 3, 4, 5, 7, 64, 511, 4096, 16_384,
    ])
    func reframing(fragment: Int) {
        let messages = C.tls12EcdheRSA.serverTranscript.messages
        let handshake = messages.flatMap(\.encoded)
        let framed = handshakeRecords(handshake, fragment: fragment) + record(.changeCipherSpec, [1])
        let result = transcript(framed)
        #expect(result.error == nil)
        #expect(result.messages == messages)
        #expect(result.stoppedAt == .changeCipherSpec)
    }

    @Test("two messages in one record, the second split into the next record")
    func packedAndSplit() {
        let messages = C.tls12RSA.serverTranscript.messages
        let first = messages[0].encoded + messages[1].encoded.prefix(10)
        let second = Array(messages[1].encoded.dropFirst(10)) + messages[2].encoded
        let result = transcript(record(.handshake, first) + record(.handshake, second))
        #expect(result.messages == Array(messages.prefix(3)))
        #expect(result.stoppedAt == nil)
    }

    @Test("an empty handshake record between fragments changes nothing")
    func emptyRecord() {
        let hello = C.tls13.serverTranscript.messages[0].encoded
        let bytes = record(.handshake, Array(hello.prefix(3))) + record(.handshake, [])
            + record(.handshake, Array(hello.dropFirst(3)))
        #expect(transcript(bytes).messages == C.tls13.serverTranscript.messages)
    }

    @Test("bytes after the end of the plaintext are ignored, garbage included")
    func ignoresAfterStop() throws {
        var reader = TLSHandshakeReader()
        let messages = try reader.feed(C.tls12EcdheRSA.serverToClient)
        #expect(messages.count == 5)
        #expect(try reader.feed(Array("GET / HTTP/1.1\r\n".utf8)).isEmpty)
        #expect(reader.sawNonHandshakeRecord == .changeCipherSpec)
    }

    @Test("application data ends the handshake at its header, before its payload arrives")
    func applicationDataHeader() {
        let result = transcript(C.tls13.serverTranscript.messages[0].encoded.withRecord + [23, 3, 3, 0x40, 0])
        #expect(result.stoppedAt == .applicationData)
        #expect(result.messages.count == 1)
    }

    @Test("the first record's version is kept for an answering alert")
    func firstRecordVersion() {
        #expect(C.tls10.serverTranscript.firstRecordVersion == 0x0301)
        #expect(C.tls13.serverTranscript.firstRecordVersion == 0x0303)
        #expect(C.tls13.clientTranscript.firstRecordVersion == 0x0301)
        #expect(transcript([0x16, 0x03]).firstRecordVersion == nil)
    }

    // MARK: HelloRetryRequest

    @Test("after a HelloRetryRequest the server reader skips one ChangeCipherSpec, then reads the ServerHello")
    func helloRetryServerSide() throws {
        let messages = C.tls13HelloRetry.serverTranscript.messages
        let retry = try ServerHello(messages[0])
        let hello = try ServerHello(messages[1])
        #expect(retry.isHelloRetryRequest)
        #expect(!hello.isHelloRetryRequest)
        #expect(hello.negotiatedVersion == TLSProtocolVersion.tls13)
    }

    @Test("a client reader told of the HelloRetryRequest reads the second ClientHello")
    func helloRetryClientSide() throws {
        let bytes = C.tls13HelloRetry.clientToServer
        let firstRecordLength = 5 + (Int(bytes[3]) << 8 | Int(bytes[4]))
        var reader = TLSHandshakeReader()
        let first = try reader.feed(Array(bytes[..<firstRecordLength]))
        reader.serverSentHelloRetryRequest()
        let second = try reader.feed(Array(bytes[firstRecordLength...]))
        #expect(first.map(\.type) == [.clientHello])
        #expect(second.map(\.type) == [.clientHello])
        #expect(reader.sawNonHandshakeRecord == .applicationData)
        #expect(try ClientHello(first[0]).serverName == ClientHello(second[0]).serverName)
    }

    @Test("a ChangeCipherSpec before the first ClientHello ends the handshake, HelloRetryRequest or not")
    func changeCipherSpecBeforeAnyMessage() throws {
        // Found by the fuzzer: told of a HelloRetryRequest before any byte, the reader skipped a
        // leading ChangeCipherSpec and read the ClientHello behind it, which the first look
        // (looksLikeTLS: a stream starting with anything but a handshake record) calls cleartext.
        let hello = C.tls13HelloRetry.clientToServer
        var reader = TLSHandshakeReader()
        reader.serverSentHelloRetryRequest()
        let messages = try reader.feed(record(.changeCipherSpec, [1]) + hello)
        #expect(messages.isEmpty)
        #expect(reader.sawNonHandshakeRecord == .changeCipherSpec)
    }

    @Test("a compatibility ChangeCipherSpec that is not the single byte 1 is an error")
    func badCompatibilityChangeCipherSpec() {
        let retry = C.tls13HelloRetry.serverTranscript.messages[0].encoded.withRecord
        let result = transcript(retry + record(.changeCipherSpec, [2]))
        #expect(result.error == .malformed(message: "ChangeCipherSpec", reason: "a compatibility record must be the single byte 0x01"))
    }

    @Test("without a HelloRetryRequest a ChangeCipherSpec ends the handshake, even right after a ServerHello")
    func changeCipherSpecAfterServerHello() {
        // TLS 1.2 resumption: ServerHello, ChangeCipherSpec, then an encrypted Finished in a handshake record.
        let hello = C.tls12EcdheRSA.serverTranscript.messages[0].encoded.withRecord
        let result = transcript(hello + record(.changeCipherSpec, [1]) + record(.handshake, [20, 0, 0, 0xFF, 1, 2]))
        #expect(result.messages.map(\.type) == [.serverHello])
        #expect(result.stoppedAt == .changeCipherSpec)
        #expect(result.error == nil)
    }

    // MARK: Alerts

    @Test("a server's fatal alert is reported with its level and description")
    func capturedAlert() {
        let result = C.protocolVersionAlert.serverTranscript
        #expect(result.alert == TLSAlert(level: .fatal, description: .protocolVersion))
        #expect(result.alert?.summary == "fatal protocol_version(70)")
    }

    @Test("an alert record of another length ends the handshake without an alert")
    func oddAlert() {
        let result = transcript(record(.alert, [2, 40, 0]))
        #expect(result.stoppedAt == .alert)
        #expect(result.alert == nil)
        #expect(result.error == nil)
    }

    // MARK: Errors

    @Test("cleartext HTTP fails on its first byte and says so")
    func cleartext() {
        let result = transcript([UInt8(ascii: "G")])
        #expect(result.error == .unknownContentType(0x47))
        #expect(result.error?.description == "not a TLS record: content type 0x47 ('G': cleartext, not TLS)")
    }

    @Test("an SSL 2.0 ClientHello is not TLS")
    func sslv2() {
        let result = transcript([0x80, 0x2E, 0x01, 0x00, 0x02])
        #expect(result.error == .unknownContentType(0x80))
        #expect(result.error?.description.contains("SSL 2.0") == true)
    }

    @Test("record versions outside 3.0-3.4 are errors as soon as they arrive", arguments: [
        [UInt8](arrayLiteral: 0x16, 0x02, 0x00), [0x16, 0x03, 0x05], [0x15, 0x04, 0x03], [0x17, 0x00, 0x00],
    ])
    func recordVersion(_ bytes: [UInt8]) {
        let result = transcript(bytes)
        #expect(result.error == .unsupportedRecordVersion(UInt16(bytes[1]) << 8 | UInt16(bytes[2])))
    }

    @Test("a record longer than 2^14 + 2048 fails at its header; one at the limit waits")
    func recordLength() {
        #expect(transcript([0x16, 0x03, 0x03, 0x48, 0x01]).error == .recordTooLong(length: 18_433))
        #expect(transcript([0x16, 0x03, 0x03, 0x48, 0x00]).error == nil)
        #expect(transcript([0x17, 0x03, 0x03, 0xFF, 0xFF]).error == .recordTooLong(length: 65_535))
    }

    @Test("a handshake message over the limit fails at its header, before its body is buffered")
    func messageLimit() {
        let header: [UInt8] = [12, 0x01, 0x11, 0x71]  // server_key_exchange, 70 001 bytes
        let result = transcript(record(.handshake, header))
        #expect(result.error == .handshakeMessageTooLong(type: .serverKeyExchange, length: 70_001, limit: 65_536))
        #expect(result.error?.description
            == "handshake message server_key_exchange(12) of 70001 bytes exceeds the 65536-byte limit")
        #expect(result.error?.isOversizedCertificate == false)
    }

    /// badssl's 10000-sans sends a 212 KB Certificate message; Apple's stack (BoringSSL's default) takes
    /// 100 KiB.
    @Test("a Certificate message is read up to 102,400 bytes, as Apple's TLS stack takes it, and refused above")
    func certificateLimit() throws {
        let body = [UInt8](repeating: 0, count: 102_400)
        let message = [11, 0x01, 0x90, 0x00] + body  // certificate, 102 400 bytes
        // Records of at most 2^14 bytes, as a server sends them.
        var bytes: [UInt8] = []
        var offset = 0
        while offset < message.count {
            let end = min(offset + 16_384, message.count)
            bytes += record(.handshake, Array(message[offset..<end]))
            offset = end
        }
        let read = transcript(bytes)
        #expect(read.error == nil)
        #expect(read.messages.map(\.type) == [.certificate])
        #expect(read.messages.first?.body.count == 102_400)

        let tooLong = transcript(record(.handshake, [11, 0x03, 0x3C, 0xA5]))  // 212 133 bytes
        #expect(tooLong.error == .handshakeMessageTooLong(type: .certificate, length: 212_133, limit: 102_400))
        #expect(tooLong.error?.isOversizedCertificate == true)
        let words = try #require(tooLong.error?.description)
        #expect(words.contains("Certificate message of 212133 bytes exceeds the 102400 bytes"), "\(words)")
        #expect(!words.contains("not a TLS record"))
    }

    @Test("a lower limit applies to the real Certificate message")
    func customLimit() {
        // The ServerHello in a feed of its own: a feed that throws returns none of its messages.
        let bytes = C.tls12EcdheRSA.serverToClient
        let firstRecordLength = 5 + (Int(bytes[3]) << 8 | Int(bytes[4]))
        let result = transcript([bytes[..<firstRecordLength], bytes[firstRecordLength...]],
                                reader: TLSHandshakeReader(maximumMessageLength: 500, maximumCertificateMessageLength: 500))
        #expect(result.messages.map(\.type) == [.serverHello])
        guard case .handshakeMessageTooLong(.certificate, let length, 500)? = result.error else {
            Issue.record("expected the certificate to exceed the limit, got \(result)")
            return
        }
        #expect(length > 500)
    }

    @Test("an alert inside an unfinished handshake message is an error")
    func interleaved() {
        let hello = C.tls13.serverTranscript.messages[0].encoded
        let bytes = record(.handshake, Array(hello.prefix(20))) + record(.alert, [2, 40])
        #expect(transcript(bytes).error == .interleavedRecord(.alert))
    }

    @Test("after an error every feed throws it again")
    func stickyError() {
        var reader = TLSHandshakeReader()
        #expect(throws: TLSWireError.unknownContentType(0x47)) { try reader.feed(Array("GET".utf8)) }
        #expect(throws: TLSWireError.unknownContentType(0x47)) { try reader.feed(C.tls13.clientToServer) }
    }

    // MARK: looksLikeTLS

    @Test("looksLikeTLS: every prefix of a real ClientHello does, cleartext and a ServerHello do not")
    func looksLikeTLS() {
        for end in 1...6 {
            #expect(TLSHandshakeReader.looksLikeTLS(firstBytes: Array(C.curl.clientToServer.prefix(end))))
        }
        #expect(TLSHandshakeReader.looksLikeTLS(firstBytes: C.tls10.clientToServer))
        #expect(!TLSHandshakeReader.looksLikeTLS(firstBytes: []))
        #expect(!TLSHandshakeReader.looksLikeTLS(firstBytes: Array("GET / HTTP/1.1\r\n".utf8)))
        #expect(!TLSHandshakeReader.looksLikeTLS(firstBytes: Array("CONNECT".utf8)))
        #expect(!TLSHandshakeReader.looksLikeTLS(firstBytes: [0x16, 0x02]))
        #expect(!TLSHandshakeReader.looksLikeTLS(firstBytes: [0x16, 0x03, 0x05]))
        #expect(!TLSHandshakeReader.looksLikeTLS(firstBytes: C.tls13.serverToClient))
    }
}

extension Array where Element == UInt8 {
    /// These handshake bytes in one TLS 1.2-versioned record.
    var withRecord: [UInt8] { record(.handshake, self) }
}
