import CSystemZlib

/// Decompresses a gzip stream chunk by chunk with the system zlib, the only user of CSystemZlib.
///
/// Concatenated members (what `cat a.gz b.gz` and log rotation produce) are read one after another, as
/// gzip(1) does. A stream that ends inside a member is an error: a truncated file must not pass for a
/// short log.
final class GzipInflater {
    private var stream = z_stream()
    private var inMember = false
    private var sawMember = false

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    init() throws(Failure) {
        // 15 + 32: the largest window, gzip or zlib header detected.
        let status = atsgate_inflateInit2(&stream, 15 + 32)
        guard status == Z_OK else { throw Failure(description: "zlib could not start (\(status))") }
    }

    deinit { inflateEnd(&stream) }

    /// Feeds `input`, handing each piece of decompressed output to `output`.
    func feed(_ input: UnsafeRawBufferPointer, output: (UnsafeRawBufferPointer) throws -> Void) throws {
        guard let base = input.baseAddress, input.count > 0 else { return }
        var buffer = [UInt8](repeating: 0, count: 1 << 18)
        stream.next_in = UnsafeMutablePointer(mutating: base.assumingMemoryBound(to: UInt8.self))
        stream.avail_in = uInt(input.count)
        while stream.avail_in > 0 {
            if !inMember {
                // Trailing zero padding after the last member (some writers add it) is not a new member.
                if sawMember, UnsafeBufferPointer(start: stream.next_in, count: Int(stream.avail_in)).allSatisfy({ $0 == 0 }) {
                    stream.avail_in = 0
                    break
                }
                inMember = true
            }
            let (status, produced) = buffer.withUnsafeMutableBytes { out -> (Int32, Int) in
                stream.next_out = out.baseAddress!.assumingMemoryBound(to: UInt8.self)
                stream.avail_out = uInt(out.count)
                let status = inflate(&stream, Z_NO_FLUSH)
                return (status, out.count - Int(stream.avail_out))
            }
            if produced > 0 { try buffer.withUnsafeBytes { try output(UnsafeRawBufferPointer(rebasing: $0[..<produced])) } }
            switch status {
            case Z_OK:
                continue
            case Z_BUF_ERROR:
                // No progress possible: zlib has taken all of this input; the rest comes with the next chunk.
                if produced == 0 { return }
            case Z_STREAM_END:
                inMember = false
                sawMember = true
                inflateReset(&stream)
            default:
                let detail = stream.msg.map { String(cString: $0) } ?? "error \(status)"
                throw Failure(description: "not a valid gzip stream (\(detail))")
            }
        }
    }

    /// Called at the end of input: a member left open means the file was cut short.
    func finish() throws(Failure) {
        if inMember { throw Failure(description: "truncated gzip stream (the file ends inside compressed data)") }
        if !sawMember { throw Failure(description: "empty gzip stream") }
    }
}
