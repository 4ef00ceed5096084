import Foundation
import Glibc

/// Why a log could not be read: one line naming the input and the problem (exit status 2).
public struct LogReadError: Error, CustomStringConvertible, Sendable {
    public var path: String
    public var problem: String
    public var description: String { "\(path): \(problem)" }
}

/// Streams the lines of decision logs: files, directories (every regular file inside, by name), `-` for
/// standard input, and gzip (`.gz`) by extension. Memory stays at one read buffer plus the longest line:
/// lines are handed over inside the buffer they were read into.
public struct LogReader {
    /// Bytes read per system call.
    static let chunkSize = 1 << 20

    public init() {}

    /// The inputs `paths` names, with directories expanded, in the order given; errors name the path.
    public func expand(_ paths: [String]) throws(LogReadError) -> [String] {
        var files: [String] = []
        for path in paths {
            if path == "-" { files.append(path); continue }
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
                throw LogReadError(path: path, problem: "no such file or directory")
            }
            guard isDirectory.boolValue else { files.append(path); continue }
            guard let enumerator = FileManager.default.enumerator(atPath: path) else {
                throw LogReadError(path: path, problem: "cannot list the directory")
            }
            var inside: [String] = []
            for case let name as String in enumerator {
                let full = (path as NSString).appendingPathComponent(name)
                let last = (name as NSString).lastPathComponent
                var nested: ObjCBool = false
                if last.hasPrefix(".") { continue }
                if FileManager.default.fileExists(atPath: full, isDirectory: &nested), !nested.boolValue {
                    inside.append(full)
                }
            }
            files += inside.sorted()
        }
        return files
    }

    /// Calls `line` for every line of `path` (without its newline; a last line without one included).
    public func read(_ path: String, line: (UnsafeRawBufferPointer) -> Void) throws(LogReadError) {
        let fd: Int32
        if path == "-" {
            fd = STDIN_FILENO
        } else {
            fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { throw LogReadError(path: path, problem: "cannot open: \(errnoText())") }
        }
        defer { if fd != STDIN_FILENO { close(fd) } }
        var splitter = LineSplitter()
        do {
            if path.hasSuffix(".gz") {
                let inflater = try GzipInflater()
                try readChunks(fd, path: path) { chunk in
                    try inflater.feed(chunk) { splitter.feed($0, line: line) }
                }
                try inflater.finish()
            } else {
                try readChunks(fd, path: path) { splitter.feed($0, line: line) }
            }
        } catch let failure as GzipInflater.Failure {
            throw LogReadError(path: path, problem: failure.description)
        } catch let error as LogReadError {
            throw error
        } catch {
            throw LogReadError(path: path, problem: "\(error)")
        }
        splitter.finish(line: line)
    }

    private func readChunks(_ fd: Int32, path: String, _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: LogReader.chunkSize, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let count = Glibc.read(fd, buffer.baseAddress, buffer.count)
            if count < 0 {
                if errno == EINTR { continue }
                throw LogReadError(path: path, problem: "cannot read: \(errnoText())")
            }
            if count == 0 { return }
            try body(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
        }
    }

    private func errnoText() -> String { String(cString: strerror(errno)).lowercased() }
}

/// Cuts a stream of chunks into lines; only a line that spans two chunks is copied.
struct LineSplitter {
    private var carry: [UInt8] = []

    mutating func feed(_ chunk: UnsafeRawBufferPointer, line: (UnsafeRawBufferPointer) -> Void) {
        guard let base = chunk.baseAddress, chunk.count > 0 else { return }
        var start = 0
        while start < chunk.count {
            guard let found = memchr(base + start, 0x0A, chunk.count - start) else {
                carry.append(contentsOf: UnsafeRawBufferPointer(rebasing: chunk[start...]))
                return
            }
            let end = base.distance(to: UnsafeRawPointer(found))
            if carry.isEmpty {
                line(UnsafeRawBufferPointer(rebasing: chunk[start..<end]))
            } else {
                carry.append(contentsOf: UnsafeRawBufferPointer(rebasing: chunk[start..<end]))
                carry.withUnsafeBytes { line($0) }
                carry.removeAll(keepingCapacity: true)
            }
            start = end + 1
        }
    }

    mutating func finish(line: (UnsafeRawBufferPointer) -> Void) {
        guard !carry.isEmpty else { return }
        carry.withUnsafeBytes { line($0) }
        carry.removeAll()
    }
}
