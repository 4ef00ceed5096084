import TestSupport
import TLSWire

/// Everything a reader reports for a stream: its messages, where the plaintext ended, and how.
struct Transcript: Equatable, CustomStringConvertible {
    var messages: [HandshakeMessage] = []
    var stoppedAt: ContentType?
    var alert: TLSAlert?
    var firstRecordVersion: UInt16?
    var error: TLSWireError?

    var types: [HandshakeType] { messages.map(\.type) }

    var description: String {
        "\(types.map(\.description)) stopped=\(stoppedAt?.name ?? "-") error=\(error.map(String.init(describing:)) ?? "-")"
    }
}

/// Feeds `chunks` in order to a fresh reader and records what it reports; stops at the first error.
func transcript(_ chunks: [ArraySlice<UInt8>], reader: TLSHandshakeReader = TLSHandshakeReader()) -> Transcript {
    var reader = reader
    var result = Transcript()
    for chunk in chunks {
        do {
            result.messages += try reader.feed(Array(chunk))
        } catch {
            result.error = error
            break
        }
    }
    result.stoppedAt = reader.sawNonHandshakeRecord
    result.alert = reader.alert
    result.firstRecordVersion = reader.firstRecordVersion
    return result
}

func transcript(_ bytes: [UInt8]) -> Transcript {
    transcript([bytes[...]])
}

/// `bytes` cut into chunks of random sizes, mostly small so header and length fields get split.
func randomChunks(_ bytes: [UInt8], using generator: inout SeededGenerator) -> [ArraySlice<UInt8>] {
    var chunks: [ArraySlice<UInt8>] = []
    var start = 0
    while start < bytes.count {
        let limit = Bool.random(using: &generator) ? 8 : 700
        let size = min(Int.random(in: 1...limit, using: &generator), bytes.count - start)
        chunks.append(bytes[start..<start + size])
        start += size
    }
    return chunks
}

/// A record header and payload as TLS puts them on the wire.
func record(_ type: ContentType, version: UInt16 = 0x0303, _ payload: [UInt8]) -> [UInt8] {
    [type.rawValue, UInt8(version >> 8), UInt8(version & 0xFF), UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        + payload
}

/// Handshake bytes framed into handshake records of at most `fragment` bytes each.
func handshakeRecords(_ bytes: [UInt8], fragment: Int, version: UInt16 = 0x0303) -> [UInt8] {
    stride(from: 0, to: bytes.count, by: fragment).flatMap {
        record(.handshake, version: version, Array(bytes[$0..<min($0 + fragment, bytes.count)]))
    }
}

extension HandshakeMessage {
    /// The message as it travels inside handshake records: type, 24-bit length, body.
    var encoded: [UInt8] {
        [type.rawValue, UInt8(body.count >> 16 & 0xFF), UInt8(body.count >> 8 & 0xFF), UInt8(body.count & 0xFF)] + body
    }
}

extension CapturedHandshake {
    var clientTranscript: Transcript { transcript(clientToServer) }
    var serverTranscript: Transcript { transcript(serverToClient) }

    /// The whole messages of a direction, parsed once.
    func messages(_ type: HandshakeType, fromServer: Bool) -> [HandshakeMessage] {
        (fromServer ? serverTranscript : clientTranscript).messages.filter { $0.type == type }
    }
}
