// libFuzzer target: QUICInitialReader.read, the QUIC listener's reader of client Initial packets. The
// input is read three ways, steered by its first byte: as a UDP datagram straight off the wire; as
// the decrypted frames of an Initial the target protects with the right keys (so the frame reader,
// the CRYPTO stream and the ClientHello parser are reached past the AEAD); and as a CRYPTO stream the
// target cuts into shuffled frames over several datagrams, read in two orders.
import POSIX
@testable import TLSClient
@testable import TLSWire

// One cipher for every input, because setting up OpenSSL's contexts costs more than reading a
// packet; a reader of its own for each, so that nothing an input leaves in a table outlives it
// (libFuzzer would take that for a leak, and check every input for leaks).
let cipher = QUICInitialCipher()
let sender = SocketAddress(ip: .v4(0xC612_0002), port: 50_000)
let knownKinds: Set<String> = ["not-long-header", "unsupported-version", "not-initial", "too-short", "decryption-failed",
                               "malformed", "too-long"]

func newReader() -> QUICInitialReader {
    QUICInitialReader(limits: QUICInitialLimits(), cipher: cipher)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzQUICInitial(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = UnsafeRawBufferPointer(start: data, count: size)
    guard let control = input.first else { return 0 }
    let rest = Array(input.dropFirst())
    readAsDatagram(rest)
    readAsFrames(rest, control: control)
    readAsStream(rest, control: control)
    return 0
}

/// What a read came to, for comparing reads.
enum Outcome: Equatable, CustomStringConvertible {
    case hello(QUICClientHello)
    case incomplete
    case alreadyRead
    case failed(QUICInitialError)

    init(_ read: () throws(QUICInitialError) -> QUICInitialReading) {
        do {
            switch try read() {
            case .clientHello(let hello):
                checkHello(hello)
                self = .hello(hello)
            case .incomplete(let progress):
                fuzzCheck(progress.packets >= 1 && progress.bufferedBytes <= QUICInitialLimits().maximumClientHelloBytes,
                          "progress \(progress)")
                self = .incomplete
            case .alreadyRead:
                self = .alreadyRead
            }
        } catch {
            fuzzCheck(knownKinds.contains(error.kind) && !error.description.isEmpty, "error \(error)")
            self = .failed(error)
        }
    }

    /// The outcome without the details that depend on a packet's size.
    var kind: String {
        switch self {
        case .hello(let hello): "hello \(hello.clientHello)"
        case .incomplete: "incomplete"
        case .alreadyRead: "already read"
        case .failed(let error): error.kind
        }
    }

    var isHelloRead: Bool {
        switch self {
        case .hello, .alreadyRead: true
        default: false
        }
    }

    var description: String {
        switch self {
        case .hello(let hello): "hello(\(hello.serverName ?? "-"), \(hello.packets) packets)"
        case .incomplete: "incomplete"
        case .alreadyRead: "already read"
        case .failed(let error): "failed(\(error))"
        }
    }
}

func checkHello(_ hello: QUICClientHello) {
    fuzzCheck(hello.version.isSupported && hello.packets >= 1, "hello \(hello.version) from \(hello.packets) packets")
    if let name = hello.serverName {
        fuzzCheck(!name.utf8.isEmpty && name.utf8.count <= 255 && !name.utf8.contains(0), "server name \(name)")
    }
}

/// The bytes as a datagram: reading it again gives the same answer, except that a ClientHello is
/// then one already read.
func readAsDatagram(_ datagram: [UInt8]) {
    let reader = newReader()
    let first = Outcome { () throws(QUICInitialError) in try reader.read(datagram, from: sender, at: .now) }
    let again = Outcome { () throws(QUICInitialError) in try reader.read(datagram, from: sender, at: .now) }
    switch first {
    case .hello: fuzzCheck(again == .alreadyRead, "a ClientHello read twice: \(again)")
    default: fuzzCheck(again == first, "read twice: \(first), then \(again)")
    }
}

/// The bytes as the plaintext of an Initial protected with its connection ID's keys: whatever the
/// frames say, the packet itself reads (no header or decryption failure), and the packet number's
/// length changes nothing.
func readAsFrames(_ frames: [UInt8], control: UInt8) {
    guard !frames.isEmpty else { return }
    let version: QUICVersion = control & 1 == 0 ? .version1 : .version2
    let connectionID = (0..<Int(8 + control % 13)).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ Int(control)) }
    var outcomes: [Outcome] = []
    // Unpadded, so that both packets carry the same payload (a run of PADDING could complete a
    // frame the input leaves short, and the padding's length depends on the header's).
    for (packetNumberLength, size) in [(1, 0), (4, 0), (2, 1200)] {
        let packet = QUICClientInitial.seal(version: version, destinationConnectionID: connectionID,
                                            packetNumber: UInt32(control), packetNumberLength: packetNumberLength, frames: frames,
                                            size: size, using: cipher)
        let reader = newReader()
        let outcome = Outcome { () throws(QUICInitialError) in try reader.read(packet, from: sender, at: .now) }
        if case .failed(let error) = outcome {
            fuzzCheck(!["not-long-header", "unsupported-version", "not-initial", "decryption-failed"].contains(error.kind),
                      "a well-protected packet failed: \(error)")
        }
        outcomes.append(outcome)
    }
    // A payload under 3 bytes is padded to fit the header-protection sample, more so with a 1-byte
    // packet number.
    if frames.count >= 3 {
        fuzzCheck(outcomes[0] == outcomes[1], "1-byte packet number \(outcomes[0]), 4-byte \(outcomes[1])")
    }
}

/// The bytes as a CRYPTO stream, cut into frames that are shuffled over up to three datagrams: read
/// in order and in reverse, the stream ends as a ClientHello in both or in neither (and then the
/// same one), and agrees with the stream assembled whole.
func readAsStream(_ stream: [UInt8], control: UInt8) {
    let limit = QUICInitialLimits().maximumClientHelloBytes
    guard !stream.isEmpty, stream.count <= limit else { return }
    var state = UInt32(control) &* 2_654_435_761 &+ UInt32(stream.count)
    func next(_ bound: Int) -> Int {
        state = state &* 1_103_515_245 &+ 12_345
        return Int(state >> 8) % max(1, bound)
    }
    let cuts = Set((0..<Int(control >> 5)).map { _ in next(stream.count) }).union([0, stream.count]).sorted()
    var frames = zip(cuts, cuts.dropFirst()).filter { $0 < $1 }.map { QUICInitialFrames.crypto(offset: $0, stream[$0..<$1]) }
    for index in frames.indices.reversed() { frames.swapAt(index, next(index + 1)) }
    let datagramCount = 1 + Int(control & 3) % 3
    let connectionID: [UInt8] = [0xC0, 0xFF, 0xEE, control, 1, 2, 3, 4]
    let datagrams = (0..<datagramCount).map { number in
        QUICClientInitial.seal(version: .version1, destinationConnectionID: connectionID, packetNumber: UInt32(number),
                               frames: frames.indices.filter { $0 % datagramCount == number }.flatMap { [0x01] + frames[$0] },
                               using: cipher)
    }
    func final(_ order: [[UInt8]]) -> Outcome {
        let reader = newReader()
        var last = Outcome.incomplete
        for datagram in order {
            let outcome = Outcome { () throws(QUICInitialError) in try reader.read(datagram, from: sender, at: .now) }
            if case .hello = last { fuzzCheck(outcome == .alreadyRead, "after the ClientHello: \(outcome)") }
            if !last.isHelloRead { last = outcome }
        }
        return last
    }
    let forward = final(datagrams)
    let backward = final(datagrams.reversed())
    func hello(_ outcome: Outcome) -> ClientHello? {
        if case .hello(let hello) = outcome { return hello.clientHello }
        return nil
    }
    fuzzCheck(hello(forward) == hello(backward), "in order \(forward), in reverse \(backward)")
    var whole = QUICCryptoAssembly(limit: limit)
    let assembled = stream.withUnsafeBytes { bytes in Result { () throws(QUICInitialError) in try whole.add(offset: 0, bytes) } }
        .flatMap { Result { () throws(QUICInitialError) in try whole.clientHello() } }
    let wholeHello: ClientHello? = (try? assembled.get()) ?? nil
    fuzzCheck(wholeHello == hello(forward), "whole \(assembled), in frames \(forward)")
}
