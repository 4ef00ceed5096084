import Glibc

/// The bytes of one input, pulled a buffer at a time: a file, standard input (`-`), or a `.gz` file
/// decompressed on the way. Errors name the path. Both readers of the report use it: the decision
/// log's line splitter and the HAR parser.
package final class ByteSource {
    package let path: String
    /// Bytes handed out so far (decompressed bytes for gzip): the offset of the next byte.
    private(set) var offset = 0
    package let isCompressed: Bool
    private let fd: Int32
    private let inflater: GzipInflater?
    /// Compressed input for the inflater.
    private var compressed: UnsafeMutableRawBufferPointer?

    /// `from`: where to start in a plain file (a part of a parallel read); offsets stay the file's.
    package init(path: String, from start: Int = 0) throws(LogReadError) {
        self.path = path
        if path == "-" {
            fd = STDIN_FILENO
        } else {
            fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { throw LogReadError(path: path, problem: "cannot open: \(ByteSource.errnoText())") }
        }
        isCompressed = path.hasSuffix(".gz")
        if start > 0, !isCompressed, fd != STDIN_FILENO {
            guard lseek(fd, off_t(start), SEEK_SET) == off_t(start) else {
                close(fd)
                throw LogReadError(path: path, problem: "cannot seek to byte \(start): \(ByteSource.errnoText())")
            }
            offset = start
        }
        do {
            inflater = isCompressed ? try GzipInflater() : nil
        } catch {
            if fd != STDIN_FILENO { close(fd) }
            throw LogReadError(path: path, problem: error.description)
        }
        if isCompressed { compressed = .allocate(byteCount: LogReader.chunkSize, alignment: 16) }
    }

    deinit {
        if fd != STDIN_FILENO { close(fd) }
        compressed?.deallocate()
    }

    /// Fills the front of `buffer`; the count, 0 at the end of the input.
    package func read(into buffer: UnsafeMutableRawBufferPointer) throws(LogReadError) -> Int {
        let count: Int
        if let inflater, let compressed {
            do {
                count = try inflater.read(into: buffer) {
                    let got = try self.readFile(into: compressed)
                    return UnsafeRawBufferPointer(rebasing: compressed[..<got])
                }
            } catch let failure as GzipInflater.Failure {
                throw LogReadError(path: path, problem: failure.description)
            } catch let error as LogReadError {
                throw error
            } catch {
                throw LogReadError(path: path, problem: "\(error)")
            }
        } else {
            count = try readFile(into: buffer)
        }
        offset += count
        return count
    }

    private func readFile(into buffer: UnsafeMutableRawBufferPointer) throws(LogReadError) -> Int {
        while true {
            let count = Glibc.read(fd, buffer.baseAddress, buffer.count)
            if count >= 0 { return count }
            if errno == EINTR { continue }
            throw LogReadError(path: path, problem: "cannot read: \(ByteSource.errnoText())")
        }
    }

    package static func errnoText() -> String { String(cString: strerror(errno)).lowercased() }
}
