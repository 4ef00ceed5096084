// libFuzzer target: ChunkedScanner.scan, fed whole, in two pieces and byte by byte. The first input
// byte steers the cut and the encoding; the rest is a chunked body as a peer would send it.
@testable import HTTP1

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzChunkedScanner(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = UnsafeRawBufferPointer(start: data, count: size)
    guard let control = input.first else { return 0 }
    let body = UnsafeRawBufferPointer(rebasing: input[1...])

    // The input as a peer's bytes: however it is cut, the scanner reaches the same end.
    let whole = ChunkedScan(body, cuts: [])
    let split = fuzzSplitPoint(count: body.count, control: control)
    let twoPieces = ChunkedScan(body, cuts: [split])
    fuzzCheck(whole == twoPieces, "whole \(whole), cut at \(split) \(twoPieces)")
    if body.count <= 512 {
        let byteByByte = ChunkedScan(body, cuts: Array(0...body.count))
        fuzzCheck(whole == byteByByte, "whole \(whole), byte by byte \(byteByByte)")
    }

    // What the scanner accepts is what RFC 9112's grammar accepts (issue 13: chunk sizes,
    // extensions, line endings, trailer fields).
    if fuzzHTTPStrict {
        let reference = ChunkedBodyGrammar(body)
        switch whole {
        case .done(let count): fuzzCheck(reference == .complete(count), "scanned as done(\(count)), the grammar says \(reference)")
        case .wantsMore: fuzzCheck(reference == .incomplete, "scanned as wanting more, the grammar says \(reference)")
        case .malformed: fuzzCheck(reference == .invalid, "scanned as malformed, the grammar says \(reference)")
        }
    }

    // The input as the payload of a well-formed body, which must end exactly where it was written to.
    let encoded = encodeChunked(body, control: control)
    var stream = encoded
    stream += Array("GET /next HTTP/1.1\r\n\r\n".utf8)
    stream.withUnsafeBytes { stream in
        fuzzCheck(ChunkedBodyGrammar(stream) == .complete(encoded.count), "the reference grammar refuses a body")
        let expected = ChunkedScan.done(encoded.count)
        let once = ChunkedScan(stream, cuts: [])
        fuzzCheck(once == expected, "a well-formed body of \(encoded.count) bytes scanned as \(once)")
        let cut = fuzzSplitPoint(count: stream.count, control: control &* 31)
        let cutScan = ChunkedScan(stream, cuts: [cut])
        fuzzCheck(cutScan == expected, "a well-formed body cut at \(cut) scanned as \(cutScan)")
        // Without its coding (for an HTTP/1.0 client) the body is the payload, however it is cut.
        for cuts in [[], [cut]] {
            fuzzCheck(chunkData(stream, cuts: cuts).elementsEqual(body), "the chunk data is not the payload (cuts \(cuts))")
        }
    }
    return 0
}

/// How scanning a stream ended: the body's length once done, all bytes taken and more wanted, or
/// refused.
enum ChunkedScan: Equatable {
    case done(Int)
    case wantsMore(Int)
    case malformed

    /// Scans `bytes` given in pieces that end at `cuts` (offsets, ascending), checking each call.
    init(_ bytes: UnsafeRawBufferPointer, cuts: [Int]) {
        var scanner = ChunkedScanner()
        var total = 0
        var start = 0
        for end in cuts + [bytes.count] where end >= start {
            let piece = UnsafeRawBufferPointer(rebasing: bytes[start..<end])
            let taken: Int
            do {
                taken = try scanner.scan(piece)
            } catch {
                self = .malformed
                return
            }
            fuzzCheck(taken >= 0 && taken <= piece.count, "scan took \(taken) of \(piece.count) bytes")
            fuzzCheck(scanner.isDone || taken == piece.count, "not done, yet took \(taken) of \(piece.count) bytes")
            total += taken
            start = end
            if scanner.isDone { break }
        }
        guard scanner.isDone else {
            self = .wantsMore(total)
            return
        }
        // Once done, the scanner takes nothing more.
        let more: [UInt8] = [0x30, 0x0D, 0x0A]
        let after = more.withUnsafeBytes { try? scanner.scan($0) }
        fuzzCheck(after == 0, "a done scanner took \(String(describing: after)) more bytes")
        self = .done(total)
    }
}

/// The chunk data the scanner hands out for `bytes` given in pieces ending at `cuts`, up to the
/// body's end.
func chunkData(_ bytes: UnsafeRawBufferPointer, cuts: [Int]) -> [UInt8] {
    var scanner = ChunkedScanner()
    var data: [UInt8] = []
    var start = 0
    for end in cuts + [bytes.count] where end >= start && !scanner.isDone {
        let piece = UnsafeRawBufferPointer(rebasing: bytes[start..<end])
        guard (try? scanner.scan(piece, data: { data += piece[$0] })) != nil else { return data }
        start = end
    }
    return data
}

/// `payload` as a chunked body (RFC 9112 section 7.1) with chunk sizes, hex case, leading zeros,
/// extensions and trailer fields chosen by the bytes themselves and `control`.
func encodeChunked(_ payload: UnsafeRawBufferPointer, control: UInt8) -> [UInt8] {
    var out: [UInt8] = []
    func size(_ count: Int) {
        var hex = String(count, radix: 16, uppercase: control & 1 != 0)
        if control & 2 != 0 { hex = "00" + hex }
        out += Array(hex.utf8)
    }
    var index = 0
    while index < payload.count {
        let length = min(1 + Int(payload[index]) % 23 + Int(control >> 4) * 16, payload.count - index)
        size(length)
        if payload[index] & 0x80 != 0 { out += Array(";name=\"quoted;value\"".utf8) }
        if payload[index] & 0x40 != 0 { out += Array(";bare".utf8) }
        out += [0x0D, 0x0A]
        out += payload[index..<(index + length)]
        out += [0x0D, 0x0A]
        index += length
    }
    size(0)
    if control & 8 != 0 { out += Array(";last=1".utf8) }
    out += [0x0D, 0x0A]
    if control & 4 != 0 { out += Array("X-Checksum: 1234\r\nX-Other: a, b\r\n".utf8) }
    out += [0x0D, 0x0A]
    return out
}
