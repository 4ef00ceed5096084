// libFuzzer target: TLSHandshakeReader.feed over one direction of a connection, and the hello,
// ServerKeyExchange and Certificate parsers and the key-exchange tracker over the messages it reassembles. The first input byte steers the cuts and
// the reader's options; the rest is the stream.
@testable import TLSWire

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTLSHandshake(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = UnsafeRawBufferPointer(start: data, count: size)
    guard let control = input.first else { return 0 }
    let stream = UnsafeRawBufferPointer(rebasing: input[1...])

    // However the stream is cut into reads, the reader sees the same messages and the same end.
    let whole = TLSRead(stream, cuts: [], control: control)
    let split = fuzzSplitPoint(count: stream.count, control: control)
    let twoPieces = TLSRead(stream, cuts: [split], control: control)
    fuzzCheck(whole == twoPieces, "whole \(whole), cut at \(split) \(twoPieces)")
    if stream.count <= 4096 {
        let cuts = Array(stride(from: 0, through: stream.count, by: 1 + Int(control >> 5)))
        let small = TLSRead(stream, cuts: cuts, control: control)
        fuzzCheck(whole == small, "whole \(whole), in pieces of \(1 + Int(control >> 5)) \(small)")
    }
    // The reader of a client's answer to the server's flight says the same however the stream is cut.
    let answer = clientAnswer(stream, cuts: [], control: control)
    fuzzCheck(answer == clientAnswer(stream, cuts: [split], control: control), "client answer whole \(String(describing: answer)), cut at \(split)")
    if stream.count <= 4096 {
        let cuts = Array(stride(from: 0, through: stream.count, by: 1 + Int(control >> 5)))
        fuzzCheck(answer == clientAnswer(stream, cuts: cuts, control: control), "client answer whole \(String(describing: answer)), in pieces")
    }
    guard case .read(let messages, _, _, _) = whole else { return 0 }

    // A stream the reader takes as starting with a ClientHello is one the proxy's first look calls TLS.
    if messages.first?.type == .clientHello, stream.count >= 5, stream[3] != 0 || stream[4] != 0 {
        fuzzCheck(TLSHandshakeReader.looksLikeTLS(firstBytes: UnsafeRawBufferPointer(rebasing: stream.prefix(6))),
                  "the reader found a ClientHello where looksLikeTLS saw none")
    }
    var bodies = 0
    var tracker = KeyExchangeTracker()
    for message in messages {
        bodies += message.body.count
        fuzzCheck(message.body.count <= messageLimit(control), "a message over the limit")
        checkMessage(message)
        tracker.observe(message)
    }
    switch tracker.outcome {
    case .group(let group): fuzzCheck(tracker.group == group, "the tracker settled on \(group) but reports \(String(describing: tracker.group))")
    case .noGroup: fuzzCheck(tracker.group == nil, "the tracker settled on no group but reports one")
    case nil: break
    }
    fuzzCheck(bodies + 4 * messages.count <= stream.count, "more message bytes than stream bytes")
    return 0
}

/// A small limit for some inputs, so the limit's path is fuzzed too.
func messageLimit(_ control: UInt8) -> Int {
    control & 2 != 0 ? 512 : TLSHandshakeReader.defaultMaximumMessageLength
}

/// Parses a message the way the proxy would, checking what each parser promises.
func checkMessage(_ message: HandshakeMessage) {
    switch message.type {
    case .clientHello:
        guard let hello = try? ClientHello(message) else { return }
        fuzzCheck(hello.random.count == 32 && hello.sessionID.count <= 32, "random or session id of a wrong size")
        fuzzCheck(!hello.cipherSuites.isEmpty && !hello.compressionMethods.isEmpty, "empty suites or compression")
        if let name = hello.serverName {
            fuzzCheck(!name.utf8.isEmpty && name.utf8.count <= 255 && !name.utf8.contains(0), "server name \(name)")
        }
        fuzzCheck(Set(hello.extensionTypes).count == hello.extensionTypes.count, "an extension type twice")
        fuzzCheck(hello.supportedVersions.isEmpty || hello.extensionTypes.contains(TLSExtensionType.supportedVersions),
                  "supported versions without the extension")
        // Key exchange: bounded lists, shares that fit, and an offer whenever a kept group is post-quantum.
        fuzzCheck(hello.supportedGroups.count <= 64 && hello.keyShares.count <= 16, "more groups or shares kept than the bounds")
        fuzzCheck(hello.keyShares.allSatisfy { $0.keyExchangeLength >= 1 }
                      && hello.keyShares.reduce(0) { $0 + $1.keyExchangeLength } <= message.body.count, "key share sizes")
        fuzzCheck(hello.supportedGroups.isEmpty || hello.extensionTypes.contains(TLSExtensionType.supportedGroups),
                  "groups without the extension")
        let kept = hello.supportedGroups + hello.keyShares.map(\.group)
        fuzzCheck(!kept.contains(where: \.isPostQuantum) || hello.offersPostQuantum, "a post-quantum group but no offer")
        _ = kept.map(\.name)
    case .serverHello:
        guard let hello = try? ServerHello(message) else { return }
        fuzzCheck(hello.random.count == 32 && hello.sessionID.count <= 32, "random or session id of a wrong size")
        fuzzCheck(hello.isHelloRetryRequest == ServerHello.isHelloRetryRequest(body: message.body),
                  "two answers to whether this is a HelloRetryRequest")
        if let share = hello.serverShare {
            fuzzCheck(share.group == hello.selectedGroup && !hello.isHelloRetryRequest
                          && share.keyExchangeLength <= message.body.count, "a server share that disagrees")
        }
        fuzzCheck(hello.keyExchangeError == nil || hello.selectedGroup == nil, "a group read from a broken key_share")
        _ = hello.selectedGroup?.name
        _ = CertificateMessage.Format(negotiatedVersion: hello.negotiatedVersion)
    case .serverKeyExchange:
        for method in [ServerKeyExchange.Method.ecdhe, .ecdhePSK, .dhe, .dhePSK] {
            guard let exchange = try? ServerKeyExchange(message, method: method) else { continue }
            fuzzCheck(exchange.publicKeyLength <= message.body.count
                          && (exchange.dhPrimeBits ?? 0) <= message.body.count * 8, "key exchange sizes")
            fuzzCheck((method == .ecdhe || method == .ecdhePSK) == (exchange.dhPrimeBits == nil), "a prime for a curve")
            _ = exchange.group?.name
        }
    case .certificate:
        for format in [CertificateMessage.Format.tls12, .tls13] {
            guard let certificates = try? CertificateMessage(message, format: format) else { continue }
            fuzzCheck(certificates.certificates.allSatisfy { !$0.isEmpty }, "an empty certificate")
            fuzzCheck(certificates.certificates.reduce(0) { $0 + $1.count } <= message.body.count,
                      "more certificate bytes than message bytes")
        }
    default:
        break
    }
}

/// What a reader made of a stream fed in pieces.
enum TLSRead: Equatable, CustomStringConvertible {
    case read([HandshakeMessage], ended: ContentType?, alert: TLSAlert?, firstVersion: UInt16?)
    case failed(TLSWireError)

    /// Feeds `bytes` in pieces that end at `cuts` (offsets, ascending).
    init(_ bytes: UnsafeRawBufferPointer, cuts: [Int], control: UInt8) {
        var reader = TLSHandshakeReader(maximumMessageLength: messageLimit(control))
        if control & 1 != 0 { reader.serverSentHelloRetryRequest() }
        var messages: [HandshakeMessage] = []
        var start = 0
        for end in cuts + [bytes.count] where end >= start {
            do {
                messages += try reader.feed(UnsafeRawBufferPointer(rebasing: bytes[start..<end]))
            } catch {
                // Once failed, the reader keeps failing the same way.
                let again = Result { () throws(TLSWireError) in try reader.feed([0x16]) }
                fuzzCheck(again == .failure(error), "after \(error), a later feed gave \(again)")
                _ = error.description
                self = .failed(error)
                return
            }
            start = end
        }
        if reader.sawNonHandshakeRecord != nil {
            // After the plaintext ends, nothing more is read.
            let after = try? reader.feed([0x16, 0x03, 0x03, 0x00, 0x04, 0x01, 0x00, 0x00, 0x00])
            fuzzCheck(after == [], "the reader read on after the handshake's plaintext ended")
        }
        _ = reader.alert?.summary
        self = .read(messages, ended: reader.sawNonHandshakeRecord, alert: reader.alert,
                     firstVersion: reader.firstRecordVersion)
    }

    var description: String {
        switch self {
        case .read(let messages, let ended, let alert, let version):
            "read \(messages.map { "\($0.type)(\($0.body.count))" }) ended \(String(describing: ended)) "
                + "alert \(String(describing: alert)) version \(String(describing: version))"
        case .failed(let error):
            "failed \(error)"
        }
    }
}

/// ClientAnswerReader over the stream, armed from its first byte (the version and suite chosen by
/// the control byte), fed in the pieces `cuts` makes.
func clientAnswer(_ stream: UnsafeRawBufferPointer, cuts: [Int], control: UInt8) -> ClientAnswerReader.Answer? {
    var reader = ClientAnswerReader()
    reader.arm(version: control & 1 == 0 ? 0x0303 : 0x0304, cipherSuite: control & 4 == 0 ? 0x1301 : 0x1305)
    var start = 0
    for cut in cuts + [stream.count] where cut >= start && cut <= stream.count {
        reader.feed(stream[start..<cut])
        start = cut
    }
    return reader.answer
}
