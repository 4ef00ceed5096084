import ATSPolicy
import Testing
import TestSupport
import TLSWire
@testable import Inspection

/// A transparent connection's first bytes told apart with no socket: real captured ClientHellos whole,
/// split over records and cut at every byte; request lines of HTTP/1.x; and what is neither.
@Suite struct TransparentFirstBytesTests {
    typealias Outcome = TransparentFirstBytes.Outcome

    /// The first record of a captured client flight: its ClientHello, alone.
    static func helloRecord(_ handshake: CapturedHandshake) -> [UInt8] {
        let bytes = handshake.clientToServer
        return Array(bytes[..<(5 + (Int(bytes[3]) << 8 | Int(bytes[4])))])
    }

    /// The same ClientHello framed in records of at most `size` bytes of payload, as a client may send it.
    static func reframed(_ record: [UInt8], size: Int) -> [UInt8] {
        let payload = record[5...]
        var out: [UInt8] = []
        var start = payload.startIndex
        while start < payload.endIndex {
            let end = min(start + size, payload.endIndex)
            out += [0x16, 0x03, 0x01, UInt8((end - start) >> 8), UInt8((end - start) & 0xFF)] + payload[start..<end]
            start = end
        }
        return out
    }

    @Test(arguments: [CapturedHandshakes.curl, CapturedHandshakes.tls13, CapturedHandshakes.pqTLS13, CapturedHandshakes.tls10])
    func aClientHelloIsTLSWithItsServerNameAndEveryShorterPrefixWaits(_ handshake: CapturedHandshake) throws {
        let record = Self.helloRecord(handshake)
        guard case .tls(let hello) = TransparentFirstBytes.classify(record) else {
            Issue.record("\(handshake): \(TransparentFirstBytes.classify(record))")
            return
        }
        var reader = TLSHandshakeReader()
        #expect(hello == (try ClientHello(reader.feed(record)[0])))
        // What the client sends after it (its next flight) changes nothing.
        #expect(TransparentFirstBytes.classify(handshake.clientToServer) == .tls(hello))
        for length in 0..<record.count {
            #expect(TransparentFirstBytes.classify(Array(record[..<length])) == .needMore, "\(handshake) cut at \(length)")
        }
    }

    @Test(arguments: [1, 7, 100, 512])
    func aClientHelloSplitOverManyRecordsIsPutTogether(size: Int) throws {
        let record = Self.helloRecord(CapturedHandshakes.pqTLS13)
        let split = Self.reframed(record, size: size)
        guard case .tls(let hello) = TransparentFirstBytes.classify(split) else {
            Issue.record("\(size): \(TransparentFirstBytes.classify(split))")
            return
        }
        #expect(hello.serverName != nil && hello.offersPostQuantum)
        for length in stride(from: 0, to: split.count, by: max(1, size / 3)) {
            #expect(TransparentFirstBytes.classify(Array(split[..<length])) == .needMore, "records of \(size) cut at \(length)")
        }
    }

    @Test(arguments: ["GET / HTTP/1.1\r\nHost: example.com\r\n\r\n", "POST /api?x=1 HTTP/1.0\r\n", "HEAD /x HTTP/1.1\n",
                      "\r\nGET / HTTP/1.1\r\n", "PROPPATCH /dav/file HTTP/1.1\r\n", "GET http://example.com/ HTTP/1.1\r\n"])
    func anHTTP1RequestLineIsHTTPAndItsPrefixesWait(_ text: String) {
        let bytes = Array(text.utf8)
        #expect(TransparentFirstBytes.classify(bytes) == .http)
        let lineEnd = bytes.firstIndex(of: 0x0A, after: text.hasPrefix("\r\n") ? 2 : 0)!
        for length in 0..<lineEnd {
            #expect(TransparentFirstBytes.classify(Array(bytes[..<length])) == .needMore, "\(text.debugDescription) cut at \(length)")
        }
    }

    @Test(arguments: [
        ("SSH-2.0-OpenSSH_9.2p1\r\n", "53 53 48 2d 32 2e 30 2d 4f 70 65 6e ... (\"SSH-2.0-Open\")"),
        ("EHLO mail.example.com\r\n", "45 48 4c 4f 20 6d 61 69 6c 2e 65 78 ... (\"EHLO mail.ex\")"),
        ("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "50 52 49 20 2a 20 48 54 54 50 2f 32 ... (\"PRI * HTTP/2\")"),
        ("GET / HTTP/2\r\n", "47 45 54 20 2f 20 48 54 54 50 2f 32 ... (\"GET / HTTP/2\")"),
        ("\u{0}\u{1}\u{2}", "00 01 02 (\"...\")"),
    ])
    func anythingElseIsAnotherProtocolNamedByItsFirstBytes(_ text: String, _ described: String) {
        #expect(TransparentFirstBytes.classify(Array(text.utf8))
                == .other("the first bytes are neither a TLS ClientHello nor an HTTP/1.x request: " + described))
    }

    @Test func whatStartsLikeTLSButIsNoClientHelloIsAnotherProtocol() {
        // A ServerHello's record (a client speaking server), a record of version 5, a handshake record
        // followed by an alert before the message is whole.
        let serverHello = Array(CapturedHandshakes.curl.serverToClient.prefix(200))
        guard case .other(let text)? = Optional(TransparentFirstBytes.classify(serverHello)) else {
            Issue.record("\(TransparentFirstBytes.classify(serverHello))")
            return
        }
        #expect(text.hasPrefix("the first bytes start like TLS but are no ClientHello: 16 03 03"), "\(text)")
        if case .other = TransparentFirstBytes.classify([0x16, 0x05, 0x01, 0x00, 0x10]) {} else { Issue.record("version 5") }
        let record = Self.helloRecord(CapturedHandshakes.curl)
        let interrupted = Self.reframed(record, size: 100).prefix(105) + [0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x28]
        #expect(TransparentFirstBytes.classify(Array(interrupted))
                == .other("a ClientHello interrupted by a record of another type: " + TransparentFirstBytes.describe(Array(interrupted))))
    }

    @Test func nothingWaitsPastTheLimit() {
        // A request line that never ends, and a ClientHello that claims to be longer than the limit.
        let endless = Array("GET /".utf8) + [UInt8](repeating: UInt8(ascii: "a"), count: TransparentFirstBytes.limit)
        if case .other = TransparentFirstBytes.classify(endless) {} else { Issue.record("an endless request line waited") }
        #expect(TransparentFirstBytes.classify(Array(endless.prefix(TransparentFirstBytes.limit))) == .needMore)
        let huge: [UInt8] = [0x16, 0x03, 0x01, 0x40, 0x00, 0x01, 0x01, 0x00, 0x00] + [UInt8](repeating: 0, count: 100)
        #expect(TransparentFirstBytes.classify(huge) == .needMore, "a record of 16 KiB is still allowed")
        let tooLong = Self.reframed([0x16, 0x03, 0x01, 0, 0] + [0x01, 0x01, 0x00, 0x00] + [UInt8](repeating: 0, count: 17_000), size: 16_384)
        if case .other(let text) = TransparentFirstBytes.classify(tooLong) {
            #expect(text.hasPrefix("a ClientHello longer than 16 KiB"), "\(text)")
        } else {
            Issue.record("a 64 KiB ClientHello waited: \(TransparentFirstBytes.classify(tooLong))")
        }
    }

    @Test func randomBytesAlwaysGetAnAnswer() {
        var generator = SeededGenerator(seed: 30)
        let record = Self.helloRecord(CapturedHandshakes.curl)
        for _ in 0..<2_000 {
            var bytes = Array(record.prefix(Int(generator.next() % UInt64(record.count + 1))))
            for _ in 0..<(generator.next() % 4) where !bytes.isEmpty {
                bytes[Int(generator.next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: generator.next())
            }
            // Total: any outcome, never a trap; a cut ClientHello never claims to be whole.
            let outcome = TransparentFirstBytes.classify(bytes)
            if bytes.count < record.count, case .tls = outcome, bytes == Array(record.prefix(bytes.count)) {
                Issue.record("a prefix of \(bytes.count) bytes read as a whole ClientHello")
            }
        }
    }
}

extension Array where Element: Equatable {
    fileprivate func firstIndex(of element: Element, after start: Int) -> Int? {
        self[start...].firstIndex(of: element)
    }
}
