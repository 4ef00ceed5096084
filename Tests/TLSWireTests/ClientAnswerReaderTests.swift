import Testing
import TestSupport
import TLSWire

/// How the client answered the server's flight, read at the record layer: a plaintext alert (TLS 1.2,
/// and OpenSSL's TLS 1.3 clients), TLS 1.3's encrypted alert told by its size, or the client going
/// on. Real client streams from the captures, and records built to the RFCs' sizes.
@Suite("ClientAnswerReader")
struct ClientAnswerReaderTests {
    typealias Answer = ClientAnswerReader.Answer

    /// A record: type, version 3.3, length, payload.
    static func record(_ type: UInt8, _ payload: [UInt8]) -> [UInt8] {
        [type, 3, 3, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)] + payload
    }

    static let unknownCA = record(21, [2, 48])
    static let compatibilityCCS = record(20, [1])
    /// TLS 1.3: a 2-byte alert and its inner type, sealed with a 16-byte tag (what Chrome sends).
    static let sealedAlert = record(23, [UInt8](repeating: 0xA5, count: 19))
    /// TLS 1.3: a Finished (SHA-256: 4 + 32 bytes, its inner type, a 16-byte tag).
    static let sealedFinished = record(23, [UInt8](repeating: 0x5A, count: 53))

    /// The first record of a captured client stream (its ClientHello).
    static func firstRecord(_ bytes: [UInt8]) -> [UInt8] {
        Array(bytes.prefix(5 + (Int(bytes[3]) << 8 | Int(bytes[4]))))
    }

    /// Feeds `before` unarmed, arms, feeds `after` in pieces of `piece` bytes.
    static func answer(before: [UInt8], after: [UInt8], version: UInt16, suite: UInt16 = 0x1301, piece: Int = .max) -> Answer? {
        var reader = ClientAnswerReader()
        reader.feed(before)
        reader.arm(version: version, cipherSuite: suite)
        var start = 0
        while start < after.count {
            let end = min(after.count, start + piece)
            reader.feed(after[start..<end])
            start = end
        }
        return reader.answer
    }

    @Test(arguments: [1, 2, 3, 7, Int.max])
    func aTLS12RefusalIsItsPlaintextAlertWhateverTheCuts(piece: Int) {
        let hello = Self.firstRecord(CapturedHandshakes.tls12EcdheRSA.clientToServer)
        #expect(Self.answer(before: hello, after: Self.unknownCA, version: 0x0303, piece: piece)
                == .alert(TLSAlert(level: .fatal, description: .unknownCA)))
    }

    @Test func aTLS12ClientThatGoesOnIsSeenAtItsChangeCipherSpec() {
        let stream = CapturedHandshakes.tls12EcdheRSA.clientToServer
        let hello = Self.firstRecord(stream)
        // The rest of the captured client stream: ClientKeyExchange, ChangeCipherSpec, Finished, data.
        #expect(Self.answer(before: hello, after: Array(stream.dropFirst(hello.count)), version: 0x0303) == .accepted)
        #expect(Self.answer(before: hello, after: Array(stream.dropFirst(hello.count)), version: 0x0303, piece: 1) == .accepted)
    }

    @Test(arguments: [1, 5, Int.max])
    func aTLS13EncryptedAlertIsToldByItsSizeAfterTheCompatibilityChangeCipherSpec(piece: Int) {
        let hello = Self.firstRecord(CapturedHandshakes.tls13.clientToServer)
        #expect(Self.answer(before: hello, after: Self.compatibilityCCS + Self.sealedAlert, version: 0x0304, piece: piece)
                == .encryptedAlert)
        #expect(Self.answer(before: hello, after: Self.sealedAlert, version: 0x0304, piece: piece) == .encryptedAlert)
    }

    @Test func aTLS13FinishedIsTheClientGoingOn() {
        let stream = CapturedHandshakes.tls13.clientToServer
        let hello = Self.firstRecord(stream)
        // The capture's own CCS and Finished (a 69-byte record: SHA-384) after its ClientHello.
        #expect(Self.answer(before: hello, after: Array(stream.dropFirst(hello.count)), version: 0x0304) == .accepted)
        #expect(Self.answer(before: hello, after: Self.compatibilityCCS + Self.sealedFinished, version: 0x0304) == .accepted)
    }

    @Test func aTLS13ClientThatStillSendsItsAlertInTheClearIsRead() {
        // OpenSSL's client alerts before it switches to the handshake keys: the alert is plaintext.
        #expect(Self.answer(before: [], after: Self.unknownCA, version: 0x0304) == .alert(TLSAlert(level: .fatal, description: .unknownCA)))
    }

    @Test func anAESCCM8SuiteSealsAnAlertIn11Bytes() {
        let short = Self.record(23, [UInt8](repeating: 1, count: 11))
        #expect(Self.answer(before: [], after: short, version: 0x0304, suite: 0x1305) == .encryptedAlert)
        #expect(Self.answer(before: [], after: short, version: 0x0304, suite: 0x1301) == .accepted)
    }

    @Test func recordsBeforeTheReaderIsArmedAreNoAnswer() {
        // The client's CCS and Finished, sent before the server's flight reached it (the capture
        // holds them whole): only what comes after arming answers.
        var reader = ClientAnswerReader()
        #expect(reader.feed(Self.compatibilityCCS + Self.sealedAlert + Self.unknownCA) == nil)
        #expect(!reader.isArmed)
        reader.arm(version: 0x0304, cipherSuite: 0x1301)
        #expect(reader.feed(Self.sealedFinished) == .accepted)
        #expect(reader.feed(Self.unknownCA) == .accepted, "the answer does not change once given")
    }

    @Test func whatIsNotTLSSaysNothing() {
        #expect(Self.answer(before: [], after: Array("GET / HTTP/1.1\r\n".utf8), version: 0x0303) == .unreadable)
        #expect(Self.answer(before: [], after: Self.record(21, [2, 48, 0]), version: 0x0303) == .unreadable,
                "an alert record of 3 bytes is none this reader can name")
        var reader = ClientAnswerReader()
        #expect(reader.feed([0x16, 0x03, 0x03, 0xFF, 0xFF]) == .unreadable, "a record over the limit")
    }

    @Test func aFuzzedClientStreamGivesTheSameAnswerWholeAndByteByByte() {
        var generator = SeededGenerator(seed: 26)
        for capture in CapturedHandshakes.all {
            for _ in 0..<40 {
                var bytes = capture.clientToServer
                for _ in 0..<3 { bytes[Int.random(in: 0..<bytes.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator) }
                let version: UInt16 = Bool.random(using: &generator) ? 0x0303 : 0x0304
                let whole = Self.answer(before: [], after: bytes, version: version)
                #expect(whole == Self.answer(before: [], after: bytes, version: version, piece: 1), "\(capture)")
                #expect(whole == Self.answer(before: [], after: bytes, version: version, piece: 13), "\(capture)")
            }
        }
    }
}
