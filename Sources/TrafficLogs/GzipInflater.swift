import CSystemZlib

/// Decompresses a gzip stream with the system zlib, the only user of CSystemZlib: the reader pulls
/// output a buffer at a time and the inflater pulls compressed input as it needs it, so neither side
/// holds more than one buffer whatever the compression ratio.
///
/// Concatenated members (what `cat a.gz b.gz` and log rotation produce) are read one after another, as
/// gzip(1) does. A stream that ends inside a member is an error: a truncated file must not pass for a
/// short log.
package final class GzipInflater {
    private var stream = z_stream()
    private var inMember = false
    private var sawMember = false
    private var atEnd = false

    package struct Failure: Error, CustomStringConvertible {
        package var description: String
    }

    package init() throws(Failure) {
        // 15 + 32: the largest window, gzip or zlib header detected.
        let status = atsgate_inflateInit2(&stream, 15 + 32)
        guard status == Z_OK else { throw Failure(description: "zlib could not start (\(status))") }
    }

    deinit { inflateEnd(&stream) }

    /// Fills `output` with decompressed bytes, calling `input` for more compressed bytes when zlib has
    /// taken all it was given (an empty buffer means the file ended; the bytes handed over must stay
    /// valid until the next call to `input`). Returns the count written; 0 only at the end of the stream.
    package func read(into output: UnsafeMutableRawBufferPointer, input: () throws -> UnsafeRawBufferPointer) throws -> Int {
        guard let base = output.baseAddress, output.count > 0 else { return 0 }
        stream.next_out = base.assumingMemoryBound(to: UInt8.self)
        stream.avail_out = uInt(output.count)
        while stream.avail_out > 0 {
            if stream.avail_in == 0 {
                if atEnd { break }
                let chunk = try input()
                guard let chunkBase = chunk.baseAddress, chunk.count > 0 else { atEnd = true; break }
                stream.next_in = UnsafeMutablePointer(mutating: chunkBase.assumingMemoryBound(to: UInt8.self))
                stream.avail_in = uInt(chunk.count)
            }
            if !inMember {
                // Trailing zero padding after the last member (some writers add it) is not a new member.
                if sawMember, UnsafeBufferPointer(start: stream.next_in, count: Int(stream.avail_in)).allSatisfy({ $0 == 0 }) {
                    stream.avail_in = 0
                    continue
                }
                inMember = true
            }
            let before = (stream.avail_in, stream.avail_out)
            let status = inflate(&stream, Z_NO_FLUSH)
            switch status {
            case Z_OK:
                continue
            case Z_BUF_ERROR:
                // No progress possible with what zlib holds: more input is needed (or the output is full).
                if stream.avail_in == 0 || stream.avail_out == 0 { continue }
                if before == (stream.avail_in, stream.avail_out) {
                    throw Failure(description: "not a valid gzip stream (zlib made no progress)")
                }
            case Z_STREAM_END:
                inMember = false
                sawMember = true
                inflateReset(&stream)
            default:
                let detail = stream.msg.map { String(cString: $0) } ?? "error \(status)"
                throw Failure(description: "not a valid gzip stream (\(detail))")
            }
        }
        let produced = output.count - Int(stream.avail_out)
        if produced == 0, atEnd { try finish() }
        return produced
    }

    /// At the end of input: a member left open means the file was cut short.
    private func finish() throws(Failure) {
        if inMember { throw Failure(description: "truncated gzip stream (the file ends inside compressed data)") }
        if !sawMember { throw Failure(description: "empty gzip stream") }
    }
}
