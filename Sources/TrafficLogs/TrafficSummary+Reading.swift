import Dispatch
import Foundation

extension TrafficSummary {
    /// Reads every line of `paths` (files, directories, `-`, `.gz`), and every entry of the HAR files
    /// among them (`.har`, `.har.gz`; `ID=FILE` makes its entries app ID's, else `harApp`'s when given,
    /// else the file's name is).
    ///
    /// A large plain file is cut at line boundaries (a HAR at entry boundaries) into one part per core,
    /// read in parallel, and the parts' summaries merged (the summary does not depend on the order of
    /// records, so this is the same result as one pass).
    /// (`harBuffer` is the HAR parser's read buffer: its size never changes the result, which tests check.)
    public static func read(_ paths: [String], parallelism: Int = ProcessInfo.processInfo.activeProcessorCount,
                            parallelMinimum: Int = 32 << 20, harBuffer: Int = LogReader.chunkSize,
                            harApp: String? = nil)
        throws(LogReadError) -> TrafficSummary {
        let reader = LogReader()
        var summary = TrafficSummary()
        for argument in paths {
            var app: String?
            var path = argument
            if let equals = argument.firstIndex(of: "="), !FileManager.default.fileExists(atPath: argument) {
                app = String(argument[..<equals])
                path = String(argument[argument.index(after: equals)...])
            }
            for file in try reader.expand([path]) {
                if HARFile.isHAR(file) {
                    summary.merge(try HARFile.read(file, app: app ?? harApp ?? HARFile.defaultApp(file), bufferSize: harBuffer,
                                                   parallelism: parallelism, parallelMinimum: parallelMinimum))
                } else {
                    try readLog(file, reader: reader, parallelism: parallelism, parallelMinimum: parallelMinimum,
                                into: &summary)
                }
            }
        }
        summary.destinations.sort { ($0.app, $0.host, $0.port, $0.scheme) < ($1.app, $1.host, $1.port, $1.scheme) }
        return summary
    }

    private static func readLog(_ path: String, reader: LogReader, parallelism: Int, parallelMinimum: Int,
                                into summary: inout TrafficSummary) throws(LogReadError) {
        let ranges = parallelism > 1 ? try reader.split(path, parts: parallelism, minimumSize: parallelMinimum) : []
        if ranges.count > 1 {
            summary.merge(try readInParallel(path, ranges: ranges, reader: reader))
        } else {
            var builder = TrafficSummaryBuilder()
            builder.begin(path: path)
            try reader.read(path) { builder.ingest($0) }
            summary.merge(builder.finish())
        }
    }

    private static func readInParallel(_ path: String, ranges: [Range<Int>], reader: LogReader)
        throws(LogReadError) -> TrafficSummary {
        let parts = PartResults(count: ranges.count)
        DispatchQueue.concurrentPerform(iterations: ranges.count) { index in
            var builder = TrafficSummaryBuilder()
            builder.begin(path: path)
            do throws(LogReadError) {
                try reader.read(path, range: ranges[index]) { builder.ingest($0) }
                parts.set(index, .success(builder.finish()))
            } catch {
                parts.set(index, .failure(error))
            }
        }
        var summaries: [TrafficSummary] = []
        for result in parts.results { summaries.append(try result!.get()) }
        return join(summaries)
    }

    /// The summaries of a file's parts, in order, as one input: counts summed, the first skipped line
    /// (or entry) numbered from the file's start.
    package static func join(_ parts: [TrafficSummary]) -> TrafficSummary {
        var whole = TrafficSummary()
        var linesBefore = 0
        var input = InputStats(path: parts[0].inputs[0].path, kind: parts[0].inputs[0].kind)
        for var part in parts {
            let stats = part.inputs[0]
            input.add(stats, linesBefore: linesBefore)
            linesBefore += stats.lines
            part.inputs = []
            whole.merge(part)
        }
        whole.inputs = [input]
        return whole
    }
}

/// The parts of a parallel read, each written by its own worker.
package final class PartResults: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: [Result<TrafficSummary, LogReadError>?]

    package init(count: Int) { stored = Array(repeating: nil, count: count) }

    package func set(_ index: Int, _ result: Result<TrafficSummary, LogReadError>) {
        lock.withLock { stored[index] = result }
    }

    package var results: [Result<TrafficSummary, LogReadError>?] { lock.withLock { stored } }
}
