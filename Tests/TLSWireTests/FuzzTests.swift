import Testing
import TestSupport
import TLSWire

/// Bounded, deterministic fuzzing from the real captures: every byte of every flight and every message
/// body mutated several ways, plus seeded random multi-byte mutations fed in random chunks. A trap would
/// end the test process; beyond that each run checks what must hold for any input.
@Suite("Fuzz: mutated captures")
struct FuzzTests {
    typealias C = CapturedHandshakes

    struct Stream: Sendable, CustomStringConvertible {
        var name: String
        var bytes: [UInt8]
        var description: String { name }
    }

    static let streams: [Stream] = C.all.flatMap {
        [Stream(name: "\($0.name) client", bytes: $0.clientToServer),
         Stream(name: "\($0.name) server", bytes: $0.serverToClient)]
    }

    /// Every way one position is changed: flipped, zeroed, saturated, off by one (lengths one short or
    /// long), and a 24-bit length made huge.
    static func mutations(of bytes: [UInt8]) -> [[UInt8]] {
        var result: [[UInt8]] = []
        result.reserveCapacity(bytes.count * 6)
        for index in bytes.indices {
            for change in [{ ~$0 }, { _ in 0 }, { _ in 0xFF }, { $0 &+ 1 }, { $0 &- 1 }] as [(UInt8) -> UInt8] {
                var mutated = bytes
                mutated[index] = change(bytes[index])
                if mutated[index] != bytes[index] { result.append(mutated) }
            }
            var huge = bytes
            for offset in index..<min(index + 3, bytes.count) { huge[offset] = 0xFF }
            result.append(huge)
        }
        return result
    }

    /// Parses each message with every parser that could apply; returns what a success promised but
    /// did not hold (empty when all is well). Plain checks rather than `#expect`, which is costly in
    /// loops of this size.
    static func parseAll(_ messages: [HandshakeMessage]) -> [String] {
        var tracker = KeyExchangeTracker()
        var broken = messages.flatMap { message in
            tracker.observe(message)
            return (message.body.count <= TLSHandshakeReader.defaultMaximumMessageLength ? [] : ["body over the limit"])
                + parse(body: message.body)
        }
        if case .group(let group) = tracker.outcome, tracker.group != group { broken.append("tracker group") }
        if tracker.outcome == .noGroup, tracker.group != nil { broken.append("tracker group without one") }
        return broken
    }

    static func parse(body: [UInt8]) -> [String] {
        var broken: [String] = []
        if let hello = try? ClientHello(body: body) {
            if hello.random.count != 32 || hello.sessionID.count > 32 { broken.append("ClientHello fixed fields") }
            if hello.cipherSuites.count * 2 >= body.count { broken.append("ClientHello suites") }
            if let name = hello.serverName, name.utf8.count > 255 || name.utf8.contains(0) {
                broken.append("ClientHello server name")
            }
            if hello.supportedGroups.count > 64 || hello.keyShares.count > 16 { broken.append("ClientHello group bounds") }
            if hello.keyShares.contains(where: { $0.keyExchangeLength < 1 })
                || hello.keyShares.reduce(0, { $0 + $1.keyExchangeLength }) > body.count {
                broken.append("ClientHello key share sizes")
            }
            if (hello.supportedGroups + hello.keyShares.map(\.group)).contains(where: \.isPostQuantum) && !hello.offersPostQuantum {
                broken.append("ClientHello post-quantum offer")
            }
        }
        if let hello = try? ServerHello(body: body) {
            if hello.random.count != 32 || hello.sessionID.count > 32 { broken.append("ServerHello fixed fields") }
            if let share = hello.serverShare, share.group != hello.selectedGroup || share.keyExchangeLength > body.count {
                broken.append("ServerHello share")
            }
            if hello.isHelloRetryRequest && hello.serverShare != nil { broken.append("HelloRetryRequest with a share") }
            if hello.keyExchangeError != nil && hello.selectedGroup != nil { broken.append("ServerHello group despite an error") }
        }
        for method in [ServerKeyExchange.Method.ecdhe, .ecdhePSK, .dhe, .dhePSK] {
            if let exchange = try? ServerKeyExchange(body: body, method: method) {
                if exchange.publicKeyLength > body.count || (exchange.dhPrimeBits ?? 0) > body.count * 8 {
                    broken.append("ServerKeyExchange sizes")
                }
                if (method == .ecdhe || method == .ecdhePSK) != (exchange.dhPrimeBits == nil) {
                    broken.append("ServerKeyExchange kind")
                }
            }
        }
        for format in [CertificateMessage.Format.tls12, .tls13] {
            if let certificate = try? CertificateMessage(body: body, format: format) {
                if certificate.certificates.contains(where: \.isEmpty)
                    || certificate.certificates.reduce(0, { $0 + $1.count }) > body.count {
                    broken.append("Certificate sizes")
                }
            }
        }
        return broken
    }

    @Test("every single-position mutation of a flight reads or fails cleanly", arguments: streams)
    func flightMutations(_ stream: Stream) {
        var failures = 0
        var broken: [String] = []
        // Messages the mutation did not touch were parsed already; parse only the changed ones.
        let original = Set(transcript(stream.bytes).messages.map(\.body))
        for bytes in Self.mutations(of: stream.bytes) {
            let result = transcript(bytes)
            if result.error != nil {
                failures += 1
            } else if result.messages.reduce(0, { $0 + $1.encoded.count }) > bytes.count {
                broken.append("more message bytes than input")
            }
            broken += Self.parseAll(result.messages.filter { !original.contains($0.body) })
        }
        #expect(broken.isEmpty)
        // Mutating the first record's type or version byte alone makes every stream fail.
        #expect(failures > 0)
    }

    @Test("every single-position mutation of a message body parses or fails cleanly")
    func bodyMutations() {
        var bodies: [[UInt8]] = []
        for capture in C.all {
            for message in capture.clientTranscript.messages + capture.serverTranscript.messages
            where [.clientHello, .serverHello, .certificate, .serverKeyExchange].contains(message.type) {
                bodies.append(message.body)
            }
        }
        #expect(bodies.count >= 20)
        var broken: [String] = []
        for body in bodies {
            for mutated in Self.mutations(of: body) { broken += Self.parse(body: mutated) }
            for end in 0..<body.count { broken += Self.parse(body: Array(body[..<end])) }
        }
        #expect(broken.isEmpty)
    }

    @Test("seeded random mutations: chunking never changes the outcome", arguments: streams)
    func randomMutations(_ stream: Stream) {
        var generator = SeededGenerator(seed: 0xF022_0000 ^ UInt64(stream.bytes.count))
        var broken: [String] = []
        for _ in 0..<300 {
            var bytes = stream.bytes
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                bytes[Int.random(in: bytes.indices, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
            }
            if Bool.random(using: &generator) {
                bytes.removeLast(Int.random(in: 0..<bytes.count, using: &generator))
            }
            let whole = transcript(bytes)
            let chunked = transcript(randomChunks(bytes, using: &generator))
            // Messages completed before an error in the same feed are not returned, so compare the
            // messages only when neither failed.
            if whole.error != chunked.error || (whole.error == nil && whole != chunked) {
                broken.append("whole \(whole) vs chunked \(chunked)")
            }
            broken += Self.parseAll(chunked.messages)
        }
        #expect(broken.isEmpty)
    }

    @Test("random bytes are rejected or ignored, never trusted")
    func noise() {
        var generator = SeededGenerator(seed: 0x0015_E000)
        var broken: [String] = []
        for _ in 0..<2_000 {
            let count = Int.random(in: 0...64, using: &generator)
            var bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
            // Half the time start with a plausible handshake header so the reader goes deeper.
            if Bool.random(using: &generator) { bytes = [0x16, 0x03, 0x03] + bytes }
            let result = transcript(bytes)
            if result.messages.reduce(0, { $0 + $1.encoded.count }) > bytes.count {
                broken.append("more message bytes than input")
            }
            broken += Self.parseAll(result.messages)
        }
        #expect(broken.isEmpty)
    }
}
