import ATSPolicy
import POSIX
import Testing
@testable import DecisionLog
import TestSupport
import TLSWire

/// docs/reference/record-fields.md against the records' own field lists (`visit`): a field written
/// and not documented, or documented and never written, fails here, as does a wrong JSON type.
@Suite struct ReferenceFieldsTests {
    /// The names and JSON types a record hands to `visit`, in order.
    struct FieldNames: LogFieldVisitor {
        var fields: [(name: String, type: String)] = []
        private mutating func add(_ name: StaticString, _ type: String) { fields.append((name.description, type)) }
        mutating func string(_ name: StaticString, _ value: String?) { add(name, "string") }
        mutating func strings(_ name: StaticString, _ values: [String]) { add(name, "array") }
        mutating func int(_ name: StaticString, _ value: Int?) { add(name, "integer") }
        mutating func bool(_ name: StaticString, _ value: Bool?) { add(name, "boolean") }
        mutating func time(_ name: StaticString, _ value: Double) { add(name, "string") }
        mutating func milliseconds(_ name: StaticString, _ value: Double) { add(name, "number") }
        mutating func address(_ name: StaticString, _ value: SocketAddress) { add(name, "string") }
        mutating func host(_ name: StaticString, _ value: ATSPolicy.Host?) { add(name, "string") }
        mutating func ip(_ name: StaticString, _ value: IPAddress?) { add(name, "string") }
        // Only a frozen record (an upgrade's adopted tunnel) replays; its fields are its maker's.
        mutating func replayed(_ name: String, _ value: JSONValue) {
            fields.append((name, "replayed"))
        }
    }

    private static let page = Result { try ReferencePage("docs/reference/record-fields.md") }
    private static let client = SocketAddress(ip: .v4(0x7F00_0001), port: 50123)

    private static func names<Record>(_ records: [Record], _ visit: (Record, inout FieldNames) -> Void) -> [String: String] {
        var all: [String: String] = [:]
        for record in records {
            var names = FieldNames()
            visit(record, &names)
            for field in names.fields { all[field.name] = field.type }
        }
        return all
    }

    /// The record as begun, before anything is known: the fields every decision record has.
    private static var bareRecord: DecisionRecord { DecisionRecord.begin(client: client, method: "-", time: 0) }

    /// A record with everything set that any request can set, so that each conditional field is written.
    private static func fullRecord() throws -> DecisionRecord {
        let engine = DecisionEngine(policy: Policy(PolicySource(origin: "test.plist", format: nil, root: .bare, dictionary: [:])))
        var record = DecisionRecord.begin(client: client, method: "CONNECT", time: 0)
        record.decision = engine.decide(try Destination.parse(url: "https://www.example.com/"))
        record.status = 200
        record.sni = "www.example.com"
        record.keyExchange = KeyExchangeFacts(group: .x25519MLKEM768, postQuantumOffered: true)
        record.clientTLS = true
        record.clientRefusal = ClientRefusal(alert: nil, pinnedDomain: "example.com")
        record.certificate = LoggedCertificate(subject: "CN=www.example.com", issuer: "CN=CA", key: "RSA 2048",
                                               signatureAlgorithm: "sha256WithRSAEncryption")
        record.toleratedFindings = ["certificate-expired"]
        record.certificateDepth = 0
        record.aiaFetched = "http://ca.example/int.cer"
        record.dnsStale = true
        record.dnsMilliseconds = 1.5
        record.rule = .r15
        return record
    }

    /// Every kind of ledger record, with the fields an upgrade adds.
    private static var ledgerRecords: [LedgerRecord] {
        let peer = RunPeer(run: "00000000000000bb", pid: 99, version: "2.0")
        return [
            LedgerRecord(time: 0, version: "1.0", event: .start(RunStart(version: "1.0", checkpointSeconds: 10, predecessor: peer))),
            LedgerRecord(time: 0, version: "1.0", event: .checkpoint(records: 1, dropped: 0, RunStatus(open: 0, generation: 1))),
            LedgerRecord(time: 0, version: "1.0",
                         event: .stop(records: 1, dropped: 0, RunStop(cut: 0, handOver: RunHandOver(successor: peer, handedOver: 1)))),
        ]
    }

    /// Names in the code and not on the page, and the reverse, and types that differ, as one message.
    private static func differences(code: [String: String], page rows: [ReferencePage.Row], table: String) -> [String] {
        var problems: [String] = []
        let documented = Dictionary(rows.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        for (name, type) in code.sorted(by: { $0.key < $1.key }) {
            guard let row = documented[name] else {
                problems.append("`\(name)` (\(type)) is written but not in record-fields.md's \(table) table")
                continue
            }
            if !(row["type"] ?? "").hasPrefix(type) {
                problems.append("`\(name)` is a JSON \(type), record-fields.md line \(row.line) says \(row["type"] ?? "nothing")")
            }
        }
        for row in rows where code[row.name] == nil {
            problems.append("`\(row.name)` (record-fields.md line \(row.line)) is never written by a \(table) record")
        }
        return problems
    }

    @Test func everyDecisionFieldIsDocumentedWithItsTypeAndNothingElseIs() throws {
        let page = try Self.page.get()
        let code = Self.names([Self.bareRecord, try Self.fullRecord()]) { $0.visit(policy: "test.plist", &$1) }
        let problems = Self.differences(code: code, page: page.table("decision-fields"), table: "decision")
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
    }

    @Test func theFieldsMarkedAlwaysAreExactlyThoseOfARecordThatKnowsNothingYet() throws {
        let page = try Self.page.get()
        var bare = FieldNames()
        Self.bareRecord.visit(policy: "test.plist", &bare)
        let always = page.table("decision-fields").filter { $0["present"] == "always" }.map(\.name)
        #expect(always == bare.fields.map(\.name), "record-fields.md's `always` rows, in order, against DecisionRecord.visit")
    }

    @Test func everyOverflowFieldIsDocumentedAndNothingElseIs() throws {
        let page = try Self.page.get()
        let record = LogOverflowRecord(time: 0, dropped: 1, droppedTotal: 1, cause: "the buffer was full")
        let code = Self.names([record]) { $0.visit(&$1) }
        let problems = Self.differences(code: code, page: page.table("overflow-fields"), table: "overflow")
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
    }

    @Test func everyLedgerFieldIsDocumentedAndNothingElseIs() throws {
        let page = try Self.page.get()
        let code = Self.names(Self.ledgerRecords) { $0.visit(&$1) }
        let problems = Self.differences(code: code, page: page.table("ledger-fields"), table: "ledger")
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
    }
}
