import CSystemd
import Glibc

/// Writes structured records to journald over its native protocol (sd_journal_sendv(3)).
public struct JournalWriter: Sendable {
    public init() {}

    /// Sends one record: MESSAGE, PRIORITY (syslog level 0...7) and `fields` (upper-case names,
    /// see `JournalEntry.validate(fieldName:)`). Values may hold newlines.
    public func send(message: String, priority: Int, fields: [(String, String)] = []) throws {
        try send(JournalEntry(message: message, priority: priority, fields: fields))
    }

    /// Sends a record built (and checked) beforehand.
    public func send(_ entry: JournalEntry) throws {
        let result = entry.withIOVecs { vectors in
            sd_journal_sendv(vectors.baseAddress, Int32(vectors.count))
        }
        if result < 0 { throw SystemdError.call("sd_journal_sendv", returned: result) }
    }

    /// `fd` is the stream systemd connected to the journal for this service (JOURNAL_STREAM names
    /// its device and inode), so records written there land in journald: the signal to switch to
    /// native journal records. False outside systemd and when the output was redirected.
    public static func isJournalStream(fd: Int32 = STDERR_FILENO) -> Bool {
        guard let value = getenv("JOURNAL_STREAM").map({ String(cString: $0) }) else { return false }
        let parts = value.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return false }
        var status = stat()
        guard fstat(fd, &status) == 0 else { return false }
        return UInt64(status.st_dev) == device && UInt64(status.st_ino) == inode
    }
}
