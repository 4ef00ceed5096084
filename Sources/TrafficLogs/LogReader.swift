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
public struct LogReader: Sendable {
    /// Bytes read per system call.
    public static let chunkSize = 1 << 20

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
            guard !inside.isEmpty else { throw LogReadError(path: path, problem: "no log files in the directory") }
            files += inside.sorted()
        }
        return files
    }

    /// Calls `line` for every line of `path` (without its newline; a last line without one included).
    public func read(_ path: String, line: (UnsafeRawBufferPointer) -> Void) throws(LogReadError) {
        let source = try ByteSource(path: path)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: LogReader.chunkSize, alignment: 16)
        defer { buffer.deallocate() }
        var splitter = LineSplitter()
        while true {
            let count = try source.read(into: buffer)
            if count == 0 { break }
            splitter.feed(UnsafeRawBufferPointer(rebasing: buffer[..<count]), line: line)
        }
        splitter.finish(line: line)
    }

    /// Parts of a large plain file for parallel reading: `parts` byte ranges that start at line starts.
    /// Empty for standard input, gzip, and files under `minimumSize` (not worth a thread).
    package func split(_ path: String, parts: Int, minimumSize: Int) throws(LogReadError) -> [Range<Int>] {
        guard path != "-", !path.hasSuffix(".gz"), parts > 1 else { return [] }
        var status = stat()
        guard stat(path, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG, status.st_size >= minimumSize else { return [] }
        let size = Int(status.st_size)
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw LogReadError(path: path, problem: "cannot open: \(ByteSource.errnoText())") }
        defer { close(fd) }
        var starts = [0]
        var probe = [UInt8](repeating: 0, count: 1 << 16)
        for part in 1..<parts {
            var offset = max(size * part / parts, starts.last!)
            // The part starts after the next newline at or past its share.
            while offset < size {
                let count = probe.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, off_t(offset)) }
                guard count > 0 else { break }
                if let newline = probe[..<count].firstIndex(of: 0x0A) {
                    offset += newline + 1
                    break
                }
                offset += count
            }
            if offset < size, offset > starts.last! { starts.append(offset) }
        }
        starts.append(size)
        return zip(starts, starts.dropFirst()).map { $0..<$1 }
    }

    /// Calls `line` for every line in `range` of a plain file (which starts at a line start).
    package func read(_ path: String, range: Range<Int>, line: (UnsafeRawBufferPointer) -> Void) throws(LogReadError) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw LogReadError(path: path, problem: "cannot open: \(ByteSource.errnoText())") }
        defer { close(fd) }
        var splitter = LineSplitter()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: LogReader.chunkSize, alignment: 16)
        defer { buffer.deallocate() }
        var offset = range.lowerBound
        while offset < range.upperBound {
            let count = pread(fd, buffer.baseAddress, min(buffer.count, range.upperBound - offset), off_t(offset))
            if count < 0 {
                if errno == EINTR { continue }
                throw LogReadError(path: path, problem: "cannot read: \(ByteSource.errnoText())")
            }
            if count == 0 { break }
            splitter.feed(UnsafeRawBufferPointer(rebasing: buffer[..<count]), line: line)
            offset += count
        }
        splitter.finish(line: line)
    }

}

/// Cuts a stream of chunks into lines; only a line that spans two chunks is copied.
public struct LineSplitter {
    private var carry: [UInt8] = []

    public init() {}

    public mutating func feed(_ chunk: UnsafeRawBufferPointer, line: (UnsafeRawBufferPointer) -> Void) {
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

    public mutating func finish(line: (UnsafeRawBufferPointer) -> Void) {
        guard !carry.isEmpty else { return }
        carry.withUnsafeBytes { line($0) }
        carry.removeAll()
    }
}
