import Dispatch
import Glibc

/// A HAR capture given to `atsgate report`: recognised by its name, streamed through `HARParser`, and
/// summarised as a decision log is.
///
/// A large plain capture is read by one thread per core, as a large log is. A HAR is one JSON document,
/// so its parts cannot start at any newline: each later part starts where the bytes that open the
/// first entry (`{"startedDateTime":`, in that file's spelling) occur again. A raw quote is never inside
/// a JSON string, so such a place is always structure, though perhaps an object nested in an entry;
/// each part therefore reads on until the first entry at or after the next part's start, and the read
/// is accepted only when every part ended exactly where the next began. Otherwise (or for gzip, and
/// for small files) it is read again in one pass, which gives the same summary.
package enum HARFile {
    /// `.har` and `.har.gz`, in any case.
    package static func isHAR(_ path: String) -> Bool {
        let lower = path.lowercased()
        return lower.hasSuffix(".har") || lower.hasSuffix(".har.gz")
    }

    /// The app a HAR's entries count under without `ID=`: the file's name without `.har` or `.har.gz`.
    package static func defaultApp(_ path: String) -> String {
        var name = Substring(path.split(separator: "/").last ?? Substring(path))
        for suffix in [".gz", ".har"] where name.lowercased().hasSuffix(suffix) { name = name.dropLast(suffix.count) }
        return String(name)
    }

    package static func read(_ path: String, app: String, bufferSize: Int = LogReader.chunkSize, parallelism: Int = 1,
                     parallelMinimum: Int = 32 << 20) throws(LogReadError) -> TrafficSummary {
        if parallelism > 1, !path.hasSuffix(".gz"), let starts = try partStarts(path, parts: parallelism, minimumSize: parallelMinimum),
           let summary = try readParts(path, app: app, starts: starts, bufferSize: bufferSize) {
            return summary
        }
        return try readPart(path, app: app, from: 0, stopAt: .max, bufferSize: bufferSize).summary
    }

    /// One pass from `from` (0: the document's start; else an entry's start) to the first entry at or
    /// after `stopAt`, or the document's end; with where it stopped.
    private static func readPart(_ path: String, app: String, from: Int, stopAt: Int, bufferSize: Int)
        throws(LogReadError) -> (summary: TrafficSummary, stoppedAt: Int?) {
        var builder = TrafficSummaryBuilder()
        builder.beginHAR(path: path, app: app)
        var parser = HARParser(source: try ByteSource(path: path, from: from), bufferSize: bufferSize)
        defer { parser.close() }
        parser.stopAt = stopAt
        if from == 0 {
            try parser.parse { builder.ingest(entry: $0) }
        } else {
            try parser.parseContinuation { builder.ingest(entry: $0) }
        }
        builder.setCreator(parser.creator)
        return (builder.finish(), parser.stoppedAt)
    }

    /// The parts' start offsets (0, then entry starts), or nil when the file is small, has no entry, or
    /// no later entry start was found.
    private static func partStarts(_ path: String, parts: Int, minimumSize: Int) throws(LogReadError) -> [Int]? {
        var status = stat()
        guard stat(path, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG, status.st_size >= minimumSize else { return nil }
        let size = Int(status.st_size)
        // Where the first entry starts, and the bytes that open it up to its first key's closing quote.
        guard let first = try readPart(path, app: "", from: 0, stopAt: 0, bufferSize: 1 << 16).stoppedAt else { return nil }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw LogReadError(path: path, problem: "cannot open: \(ByteSource.errnoText())") }
        defer { close(fd) }
        var head = [UInt8](repeating: 0, count: 256)
        let got = head.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, off_t(first)) }
        guard got > 0, let quote = head[..<got].firstIndex(of: UInt8(ascii: "\"")),
              let close = head[(quote + 1)..<got].firstIndex(of: UInt8(ascii: "\"")),
              !head[quote..<close].contains(UInt8(ascii: "\\")) else { return nil }
        let pattern = Array(head[...close])
        var starts = [0]
        var window = [UInt8](repeating: 0, count: 1 << 16)
        for part in 1..<parts {
            var offset = max(size * part / parts, starts.last! + 1)
            var found: Int?
            // Windows overlap by the pattern's length, so a pattern across two reads is still found.
            while found == nil, offset < size {
                let count = window.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, off_t(offset)) }
                guard count >= pattern.count else { break }
                found = window.withUnsafeBytes { bytes in
                    pattern.withUnsafeBytes { HARFile.find($0, in: UnsafeRawBufferPointer(rebasing: bytes[..<count])) }
                }.map { offset + $0 }
                offset += count - pattern.count + 1
            }
            guard let found else { break }
            starts.append(found)
        }
        return starts.count > 1 ? starts : nil
    }

    /// The offset of `needle` in `haystack` (memchr for its first byte, then memcmp).
    private static func find(_ needle: UnsafeRawBufferPointer, in haystack: UnsafeRawBufferPointer) -> Int? {
        guard let base = haystack.baseAddress, let first = needle.first, needle.count <= haystack.count else { return nil }
        var start = 0
        while start + needle.count <= haystack.count,
              let hit = memchr(base + start, Int32(first), haystack.count - needle.count + 1 - start) {
            let at = base.distance(to: UnsafeRawPointer(hit))
            if memcmp(base + at, needle.baseAddress!, needle.count) == 0 { return at }
            start = at + 1
        }
        return nil
    }

    /// The parts read in parallel and joined, or nil when a part did not end where the next began.
    private static func readParts(_ path: String, app: String, starts: [Int], bufferSize: Int)
        throws(LogReadError) -> TrafficSummary? {
        let results = PartResults(count: starts.count)
        let stops = PartStops(count: starts.count)
        DispatchQueue.concurrentPerform(iterations: starts.count) { index in
            let stopAt = index + 1 < starts.count ? starts[index + 1] : .max
            do throws(LogReadError) {
                let part = try readPart(path, app: app, from: starts[index], stopAt: stopAt, bufferSize: bufferSize)
                stops.set(index, part.stoppedAt)
                results.set(index, .success(part.summary))
            } catch {
                results.set(index, .failure(error))
            }
        }
        var summaries: [TrafficSummary] = []
        let ended = stops.values
        for (index, result) in results.results.enumerated() {
            // A part's error is real only once every part before it ended where it began.
            summaries.append(try result!.get())
            let expected = index + 1 < starts.count ? starts[index + 1] : nil
            if ended[index] != expected { return nil }
        }
        return TrafficSummary.join(summaries)
    }
}

/// Where each part of a parallel HAR read stopped.
private final class PartStops: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: [Int?]

    package init(count: Int) { stored = Array(repeating: nil, count: count) }

    package func set(_ index: Int, _ value: Int?) { lock.withLock { stored[index] = value } }
    package var values: [Int?] { lock.withLock { stored } }
}

import Foundation
