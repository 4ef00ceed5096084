@testable import Systemd
import Glibc
import Testing

/// The record sd_journal_sendv gets: field order, bytes, and journald's naming rules.
@Suite struct JournalEntryTests {
    @Test func messagePriorityThenFieldsInOrder() throws {
        let entry = try JournalEntry(message: "blocked http://a.test/", priority: 5,
                                     fields: [("ATS_ACTION", "block"), ("ATS_REASON", "cleartext-http"), ("PORT", "80")])
        #expect(entry.fields.map { String(decoding: $0, as: UTF8.self) } == [
            "MESSAGE=blocked http://a.test/", "PRIORITY=5", "ATS_ACTION=block", "ATS_REASON=cleartext-http", "PORT=80",
        ])
    }

    @Test func valuesKeepNewlinesAndEveryOtherByte() throws {
        let entry = try JournalEntry(message: "two\nlines", priority: 6, fields: [("RAW", "a\u{0}b=c\té")])
        #expect(entry.fields[0] == Array("MESSAGE=two\nlines".utf8))
        #expect(entry.fields[2] == Array("RAW=".utf8) + [0x61, 0x00, 0x62, 0x3D, 0x63, 0x09, 0xC3, 0xA9])
    }

    @Test func iovecsCoverEachFieldExactly() throws {
        let entry = try JournalEntry(message: "m", priority: 3, fields: [("EMPTY", ""), ("LONGER_NAME", "value\nmore")])
        let seen = entry.withIOVecs { vectors in
            vectors.map { Array(UnsafeRawBufferPointer(start: $0.iov_base, count: $0.iov_len)) }
        }
        #expect(seen == entry.fields)
        #expect(seen.map(\.count) == [9, 10, 6, 22])
    }

    @Test(arguments: ["ATS_ACTION", "A", "TLS_VERSION", "X9_", String(repeating: "N", count: 64)])
    func validNames(_ name: String) throws {
        try JournalEntry.validate(fieldName: name)
    }

    @Test(arguments: [
        ("", "journal field name '' is empty"),
        ("ats_action", "journal field name 'ats_action' may hold only A-Z, 0-9 and '_'"),
        ("ATS-ACTION", "journal field name 'ATS-ACTION' may hold only A-Z, 0-9 and '_'"),
        ("ÄTS", "journal field name 'ÄTS' may hold only A-Z, 0-9 and '_'"),
        ("_PID", "journal field name '_PID' starts with '_' (reserved for journald's trusted fields)"),
        ("9LIVES", "journal field name '9LIVES' starts with a digit"),
        (String(repeating: "N", count: 65), "journal field name '\(String(repeating: "N", count: 65))' is longer than 64 characters"),
    ])
    func invalidNames(_ name: String, _ message: String) {
        let error = #expect(throws: SystemdError.self) { try JournalEntry.validate(fieldName: name) }
        #expect(error?.description == message)
    }

    @Test func anInvalidFieldNameRejectsTheEntry() {
        let error = #expect(throws: SystemdError.self) {
            try JournalEntry(message: "m", priority: 6, fields: [("ATS_ACTION", "block"), ("tls_version", "TLSv1.2")])
        }
        #expect(error?.description == "journal field name 'tls_version' may hold only A-Z, 0-9 and '_'")
    }

    @Test func messageAndPriorityComeFromTheirArguments() {
        let error = #expect(throws: SystemdError.self) { try JournalEntry(message: "m", priority: 6, fields: [("PRIORITY", "0")]) }
        #expect(error?.description == "journal field PRIORITY is set by the message and priority arguments")
    }

    @Test(arguments: [-1, 8])
    func priorityIsASyslogLevel(_ priority: Int) {
        let error = #expect(throws: SystemdError.self) { try JournalEntry(message: "m", priority: priority, fields: []) }
        #expect(error?.description == "journal priority \(priority) is not a syslog level 0...7")
    }

    @Test(arguments: [
        ("tls_version", "TLS_VERSION"), ("bytes-up", "BYTES_UP"), ("duration_ms", "DURATION_MS"),
        ("upstream_ip", "UPSTREAM_IP"), ("_private", "PRIVATE"), ("a.b c", "A_B_C"), ("ATS", "ATS"),
    ])
    func fieldNamesForLogKeys(_ key: String, _ name: String) {
        #expect(JournalEntry.fieldName(for: key) == name)
    }

    @Test(arguments: ["", "___", "9lives"])
    func keysWithNoValidName(_ key: String) {
        #expect(JournalEntry.fieldName(for: key) == nil)
    }

    @Test func longKeysAreCutTo64() {
        #expect(JournalEntry.fieldName(for: String(repeating: "k", count: 70)) == String(repeating: "K", count: 64))
    }
}
