import Glibc
import POSIX
import Synchronization

/// Where a log's writer thread puts records, with blocking writes: lines to a descriptor (standard
/// output, or a file opened O_APPEND that SIGUSR1 reopens), journal entries to the structured writer
/// (journald). Touched by the writer thread only. A failed write loses the records it did not
/// complete, and says why; the next batch tries again.
package final class LogOutput {
    private var fd: Int32
    /// The file's path, when the output is a file (it can be reopened).
    package let path: String?
    package let structured: StructuredLogWriter?
    /// A failed write left half a line that could not be cut off: the next write starts a new line,
    /// so only that half line is damaged.
    private var tornLine = false
    /// Another process writes to the same descriptor now (an upgrade's old and new process, both
    /// with the standard output they inherited): see `write(lines:)`.
    package let shared = Atomic<Bool>(false)

    package init(fd: Int32, structured: StructuredLogWriter?) {
        self.fd = fd
        self.path = nil
        self.structured = structured
    }

    package init(path: String) throws(SystemError) {
        fd = try LogFile.open(path)
        self.path = path
        structured = nil
    }

    deinit {
        if path != nil { SystemCall.close(fd) }
    }

    /// What the records are written to, for messages.
    package var name: String { path ?? (fd == STDOUT_FILENO ? "standard output" : "descriptor \(fd)") }

    /// Opens the file again under its path (after logrotate moved it) and writes there from now on;
    /// on failure keeps writing to the file it has, and says why. Nothing to do for other outputs.
    package func reopen() -> String? {
        guard let path else { return nil }
        let fresh: Int32
        do {
            fresh = try LogFile.open(path)
        } catch {
            return "cannot reopen the decision log: \(error); still writing to the file it had"
        }
        SystemCall.close(fd)
        fd = fresh
        tornLine = false
        return nil
    }

    /// Writes `batch` and removes from it what was written: on a failure it keeps the records that
    /// were not (a line written in part is cut off the file and kept whole), and says why.
    package func write(_ batch: inout LogBatch) -> String? {
        if !batch.lines.isEmpty {
            let (complete, problem) = write(lines: batch.lines)
            let lines = batch.lines[..<complete].count { $0 == 0x0A }
            batch.records = max(0, batch.records - lines)
            batch.lines.removeFirst(complete)
            if let problem { return problem }
        }
        var sent = 0
        defer {
            for entry in batch.entries[..<sent] { batch.entryBytes -= entry.size }
            batch.entries.removeFirst(sent)
            batch.records = max(0, batch.records - sent)
        }
        for entry in batch.entries {
            do {
                guard let structured else { throw LogSinkError("no journal writer") }
                try structured(entry.message, entry.priority, entry.fields)
            } catch {
                return "the journal refused them: \(error)"
            }
            sent += 1
        }
        return nil
    }

    /// Writes whole lines: how many bytes of complete lines were written, and why not all, if not.
    private func write(lines: [UInt8]) -> (complete: Int, problem: String?) {
        if tornLine {
            if let error = writeAll([0x0A]).error { return (0, "writing to \(name) failed: \(error)") }
            tornLine = false
        }
        let (written, error) = shared.load(ordering: .relaxed) && isPipeOrSocket ? writeInAtomicChunks(lines) : writeAll(lines)
        guard let error else { return (written, nil) }
        let complete = (lines[..<written].lastIndex(of: 0x0A) ?? -1) + 1
        if written > complete, !LogFile.cutTail(fd, count: written - complete) { tornLine = true }
        return (complete, "writing to \(name) failed: \(error)")
    }

    /// Whether the descriptor is a pipe, a FIFO or a socket: where two writers' writes longer than
    /// PIPE_BUF may interleave inside a line. (A regular file takes each write whole, at its end.)
    private var isPipeOrSocket: Bool {
        var status = stat()
        guard fstat(fd, &status) == 0 else { return false }
        let type = status.st_mode & S_IFMT
        return type == S_IFIFO || type == S_IFSOCK
    }

    /// Writes whole lines in writes of at most PIPE_BUF bytes, which a pipe never splits or mixes
    /// with another writer's; a longer line goes alone (and may be split, as it would anyway).
    private func writeInAtomicChunks(_ lines: [UInt8]) -> (written: Int, error: SystemError?) {
        var offset = 0
        while offset < lines.count {
            var end = offset
            // Whole lines while they fit; at least one line.
            while end < lines.count {
                guard let newline = lines[end...].firstIndex(of: 0x0A) else { end = lines.count; break }
                if newline + 1 - offset > Int(PIPE_BUF), end > offset { break }
                end = newline + 1
            }
            let (written, error) = writeAll(lines, from: offset, to: end)
            offset += written
            if let error { return (offset, error) }
        }
        return (offset, nil)
    }

    /// write(2) until everything is written or a write fails; how far it got.
    private func writeAll(_ bytes: [UInt8]) -> (written: Int, error: SystemError?) {
        writeAll(bytes, from: 0, to: bytes.count)
    }

    /// write(2) of `bytes[start..<end]` until it is all written or a write fails; how many bytes went.
    private func writeAll(_ bytes: [UInt8], from start: Int, to end: Int) -> (written: Int, error: SystemError?) {
        var offset = start
        while offset < end {
            let outcome = bytes[offset..<end].withUnsafeBytes { buffer in
                Result { () throws(SystemError) in try LogFile.write(fd, buffer) }
            }
            switch outcome {
            case .success(.done(let n)) where n > 0:
                offset += n
            case .success(.wouldBlock):
                // Standard output inherited non-blocking: this thread may wait, the loops never do.
                if case .failed(let code) = Poll.wait(fd: fd, events: Int16(POLLOUT), timeout: 3600) {
                    return (offset - start, SystemError(call: "poll", code: code))
                }
            case .success:
                return (offset - start, SystemError(call: "write", code: EIO))
            case .failure(let error):
                return (offset - start, error)
            }
        }
        return (offset - start, nil)
    }
}

/// A log failure described for the operator.
package struct LogSinkError: Error, CustomStringConvertible {
    package var description: String
    package init(_ description: String) { self.description = description }
}
