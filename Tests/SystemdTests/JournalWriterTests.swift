import Foundation
import Glibc
import Systemd
import Testing

extension ProcessState {
    /// JOURNAL_STREAM names the device and inode of the stream systemd connected to the journal.
    @Suite struct JournalStreamTests {
        @Test func matchesOnlyTheNamedStream() throws {
            let directory = FileManager.default.temporaryDirectory
            let named = open(directory.appendingPathComponent("atsgate-js-\(UUID().uuidString)").path, O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
            let other = open(directory.appendingPathComponent("atsgate-js-\(UUID().uuidString)").path, O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
            defer { close(named); close(other) }
            let stream = try deviceAndInode(named)
            withEnvironment(managerVariablesUnset.merging(["JOURNAL_STREAM": stream]) { $1 }) {
                #expect(JournalWriter.isJournalStream(fd: named))
                #expect(!JournalWriter.isJournalStream(fd: other))
                #expect(!JournalWriter.isJournalStream(fd: -1))
            }
            for malformed in ["", "garbage", stream + ":1", stream.replacingOccurrences(of: ":", with: " ")] {
                withEnvironment(managerVariablesUnset.merging(["JOURNAL_STREAM": malformed]) { $1 }) {
                    #expect(!JournalWriter.isJournalStream(fd: named), "JOURNAL_STREAM=\(malformed)")
                }
            }
            withEnvironment(managerVariablesUnset) {
                #expect(!JournalWriter.isJournalStream(fd: named))
            }
        }

        @Test func standardErrorByDefault() throws {
            let stream = try deviceAndInode(STDERR_FILENO)
            withEnvironment(managerVariablesUnset.merging(["JOURNAL_STREAM": stream]) { $1 }) {
                #expect(JournalWriter.isJournalStream())
            }
        }
    }

    /// A real sd_journal_sendv call, received on a stand-in for journald's socket. libsystemd names
    /// the socket path itself, so this runs where no journald is and the path can be made.
    @Suite struct JournalSendTests {
        static let socketPath = "/run/systemd/journal/socket"
        static var canStandIn: Bool {
            !FileManager.default.fileExists(atPath: socketPath) && getuid() == 0
        }

        @Test(.enabled(if: canStandIn, "needs root and no journald on this machine"))
        func recordsArriveInTheNativeProtocol() throws {
            let created = try makeDirectories(["/run/systemd", "/run/systemd/journal"])
            defer { for directory in created.reversed() { rmdir(directory) } }
            let journald = try DatagramSink(path: Self.socketPath)
            try JournalWriter().send(message: "blocked", priority: 4,
                                     fields: [("ATS_ACTION", "block"), ("ATS_DETAIL", "line one\nline two")])
            let datagram = try journald.receive()
            // A value with a newline travels as NAME, newline, 64-bit little-endian length, bytes.
            let expected = Array("MESSAGE=blocked\nPRIORITY=4\nATS_ACTION=block\nATS_DETAIL\n".utf8)
                + [17, 0, 0, 0, 0, 0, 0, 0] + Array("line one\nline two\n".utf8)
            #expect(Array(datagram.prefix(expected.count)) == expected)
            // libsystemd adds the program name when the caller gives no SYSLOG_IDENTIFIER.
            #expect(String(decoding: datagram.dropFirst(expected.count), as: UTF8.self).hasPrefix("SYSLOG_IDENTIFIER="))
        }
    }
}

private func deviceAndInode(_ fd: Int32) throws -> String {
    var status = stat()
    guard fstat(fd, &status) == 0 else { throw SinkError("fstat(\(fd)) failed") }
    return "\(status.st_dev):\(status.st_ino)"
}

/// Creates the directories that are missing, in order, and returns those it created.
private func makeDirectories(_ paths: [String]) throws -> [String] {
    var created: [String] = []
    for path in paths where !FileManager.default.fileExists(atPath: path) {
        guard mkdir(path, 0o755) == 0 else { throw SinkError("mkdir \(path): \(String(cString: strerror(errno)))") }
        created.append(path)
    }
    return created
}
