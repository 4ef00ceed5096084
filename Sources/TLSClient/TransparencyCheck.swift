import ATSPolicy
import COpenSSL
import Foundation

/// R16 as the operator configured it: the trust store's log list by default (`TrustStore.logList`),
/// `--ct-log-list FILE` instead, or none (SCTs counted by distinct log id and not verified).
public struct TransparencyCheck: Sendable {
    /// The log list each SCT's log must be in, and its signature verify against.
    public var logList: CTLogList?

    public init(logList: CTLogList? = nil) {
        self.logList = logList
    }

    /// The rule the certificate rules run.
    public var rule: CertificateTransparencyRule { CertificateTransparencyRule(verifying: logList != nil) }
}

/// One SCT that came with the handshake rather than inside the certificate: the serialized SCT
/// (RFC 6962 section 3.2) and where it came from.
public struct PresentedSCT: Sendable, Equatable {
    public var source: SCTFacts.Source
    public var bytes: [UInt8]

    public init(source: SCTFacts.Source, bytes: [UInt8]) {
        self.source = source
        self.bytes = bytes
    }
}

/// A CT log list in Apple's format (log list schema v5, https://valid.apple.com/ct/log_list/: operators,
/// each with `logs` and `tiled_logs`, each log with base64 `key` and `log_id` and a `state`), loaded
/// into an OpenSSL log store for SCT verification. Owns the `CTLOG_STORE*` and frees it in deinit.
public final class CTLogList: @unchecked Sendable {
    /// A log's state in the list (Apple support 103703); the date is when it entered it.
    public enum State: Sendable, Equatable {
        case pending(Date?), qualified(Date?), usable(Date?), readonly(Date?), retired(Date), rejected(Date?)
        /// A state this version of atsgate does not know: its SCTs do not count.
        case other(String)
        /// The list gives no state: a list the operator wrote by hand, whose logs all count.
        case unstated

        /// Whether an SCT of a log in this state can count at some time (a retired log's, before it retired).
        var mayCount: Bool {
            switch self {
            case .qualified, .usable, .readonly, .retired, .unstated: true
            case .pending, .rejected, .other: false
            }
        }
    }

    /// One log of the list.
    public struct Log: Sendable, Equatable {
        public var description: String
        public var operatorName: String
        public var state: State
        /// From `logs` (RFC 6962) rather than `tiled_logs` (static-ct-api).
        public var rfc6962: Bool
    }

    let pointer: OpaquePointer
    /// Descriptions by base64 log id.
    public let logs: [String: String]
    /// Every log, by its 32-byte id.
    public let entries: [[UInt8]: Log]
    /// The list's own `version`, when it has one ("375").
    public let version: String?

    /// Reads `file`; throws with the file name, the key at fault and the problem.
    public convenience init(file: String) throws(CTLogListError) {
        let data: Data
        do { data = try Data(contentsOf: URL(fileURLWithPath: file)) } catch {
            let problem = (error as NSError).domain == NSCocoaErrorDomain && (error as NSError).code == NSFileReadNoSuchFileError
                ? "no such file" : error.localizedDescription
            throw CTLogListError(file: file, problem: "cannot read it: \(problem)")
        }
        try self.init(data: data, file: file)
    }

    /// Parses the bytes of a log list; `file` names it in errors.
    ///
    /// Only the logs whose SCTs can count (qualified, usable, read-only, retired, or without a state) go
    /// into OpenSSL's log store: reading a key costs OpenSSL half a millisecond, and Apple's list names
    /// over 80 rejected logs. An SCT of a listed log that cannot count is reported as such, unverified.
    public init(data: Data, file: String) throws(CTLogListError) {
        guard let object = try? JSONSerialization.jsonObject(with: data) else {
            throw CTLogListError(file: file, problem: "is not JSON")
        }
        guard let root = object as? [String: Any], let operators = root["operators"] as? [Any] else {
            throw CTLogListError(file: file, key: "operators",
                                 problem: "is not a CT log list (expected a JSON object with an \"operators\" array)")
        }
        var loaded: [(name: String, key: String, path: String, description: String)] = []
        var logs: [String: String] = [:]
        var entries: [[UInt8]: Log] = [:]
        for (operatorIndex, element) in operators.enumerated() {
            let operatorKey = "operators[\(operatorIndex)]"
            guard let logOperator = element as? [String: Any] else {
                throw CTLogListError(file: file, key: operatorKey, problem: "expected an object")
            }
            let operatorName = (logOperator["name"] as? String) ?? "operator \(operatorIndex)"
            for list in ["logs", "tiled_logs"] {
                guard let value = logOperator[list] else { continue }
                guard let members = value as? [Any] else {
                    throw CTLogListError(file: file, key: "\(operatorKey).\(list)", problem: "expected an array")
                }
                for (index, member) in members.enumerated() {
                    let key = "\(operatorKey).\(list)[\(index)]"
                    let parsed = try Self.log(member, key: key, file: file, operatorName: operatorName,
                                              rfc6962: list == "logs")
                    logs[Data(parsed.id).base64EncodedString()] = parsed.log.description
                    entries[parsed.id] = parsed.log
                    if parsed.log.state.mayCount {
                        loaded.append(("\(list == "logs" ? "log" : "tiled")\(operatorIndex)_\(index)", parsed.key,
                                       "\(key).key", parsed.log.description))
                    }
                }
            }
        }
        guard !entries.isEmpty else { throw CTLogListError(file: file, key: "operators", problem: "names no CT log") }
        guard let store = CTLOG_STORE_new() else { throw CTLogListError(file: file, problem: "out of memory") }
        if !loaded.isEmpty {
            // OpenSSL's log store format: one section per log, its description and base64 key.
            var config = "enabled_logs = \(loaded.map(\.name).joined(separator: ","))\n"
            for log in loaded {
                let safe = log.description.filter { $0 != "\n" && $0 != "\\" && $0 != "$" }
                config += "[\(log.name)]\ndescription = \(safe)\nkey = \(log.key)\n"
            }
            // OpenSSL reads log stores from files only.
            let temporary = FileManager.default.temporaryDirectory
                .appendingPathComponent("atsgate-ctlogs-\(UUID().uuidString).cnf").path
            defer { try? FileManager.default.removeItem(atPath: temporary) }
            OpenSSLErrorQueue.clear()
            guard FileManager.default.createFile(atPath: temporary, contents: Data(config.utf8),
                                                 attributes: [.posixPermissions: 0o600]) else {
                CTLOG_STORE_free(store)
                throw CTLogListError(file: file, problem: "cannot write \(temporary) for OpenSSL to read the logs from")
            }
            guard CTLOG_STORE_load_file(store, temporary) == 1 else {
                let problem = OpenSSLErrorQueue.drain().text
                CTLOG_STORE_free(store)
                // Find the log at fault, one key at a time (the slow way, only when something is wrong).
                for log in loaded {
                    var made: OpaquePointer?
                    if CTLOG_new_from_base64(&made, log.key, log.name) == 1 {
                        CTLOG_free(made)
                        continue
                    }
                    OpenSSLErrorQueue.clear()
                    throw CTLogListError(file: file, key: log.path, problem: "is not a DER SubjectPublicKeyInfo")
                }
                throw CTLogListError(file: file, problem: "OpenSSL cannot load its logs: \(problem)")
            }
        }
        pointer = store
        self.logs = logs
        self.entries = entries
        version = (root["version"] as? String) ?? (root["version"] as? NSNumber)?.stringValue
    }

    deinit { CTLOG_STORE_free(pointer) }

    /// The log `id` as R16 counts an SCT it signed at `timestamp`; nil for a log the list does not name.
    public func facts(forLog id: [UInt8], signedAt timestamp: Date?) -> CTLogFacts? {
        guard let log = entries[id] else { return nil }
        let standing: CTLogFacts.Standing
        switch log.state {
        case .qualified, .usable, .readonly, .unstated:
            standing = .approved
        case .retired(let retired):
            if let timestamp, timestamp < retired {
                standing = .onceApproved
            } else {
                standing = .notCounted("retired \(DateText.iso8601(retired)), before the SCT")
            }
        case .pending: standing = .notCounted("pending")
        case .rejected: standing = .notCounted("rejected")
        case .other(let name): standing = .notCounted(name)
        }
        return CTLogFacts(description: log.description, operatorName: log.operatorName, standing: standing,
                          rfc6962: log.rfc6962)
    }

    /// One log entry, checked: a key OpenSSL reads as a public key, a log id that is its SHA-256, a
    /// state with a readable date.
    private static func log(_ member: Any, key: String, file: String, operatorName: String,
                            rfc6962: Bool) throws(CTLogListError) -> (log: Log, key: String, id: [UInt8]) {
        guard let log = member as? [String: Any] else { throw CTLogListError(file: file, key: key, problem: "expected an object") }
        guard let base64 = log["key"] as? String, let spki = Data(base64Encoded: base64), !spki.isEmpty else {
            throw CTLogListError(file: file, key: "\(key).key", problem: "expected the log's public key in base64")
        }
        let id = X509Certificate.sha256([UInt8](spki))
        if let logID = log["log_id"] {
            guard let text = logID as? String, let given = Data(base64Encoded: text) else {
                throw CTLogListError(file: file, key: "\(key).log_id", problem: "expected base64")
            }
            guard [UInt8](given) == id else {
                throw CTLogListError(file: file, key: "\(key).log_id", problem: "is not the SHA-256 of the log's key")
            }
        }
        let description = (log["description"] as? String) ?? "log \(Data(id).base64EncodedString())"
        let state = try Self.state(log["state"], key: "\(key).state", file: file)
        return (Log(description: description, operatorName: operatorName, state: state, rfc6962: rfc6962), base64, id)
    }

    private static func state(_ value: Any?, key: String, file: String) throws(CTLogListError) -> State {
        guard let value else { return .unstated }
        guard let object = value as? [String: Any], object.count == 1, let entry = object.first else {
            throw CTLogListError(file: file, key: key, problem: "expected an object with one state (usable, qualified, ...)")
        }
        let (name, detail) = (entry.key, entry.value)
        let timestamp: Date?
        if let text = (detail as? [String: Any])?["timestamp"] {
            guard let string = text as? String, let date = Self.date(string) else {
                throw CTLogListError(file: file, key: "\(key).\(name).timestamp", problem: "expected an RFC 3339 date")
            }
            timestamp = date
        } else {
            timestamp = nil
        }
        switch name {
        case "pending": return .pending(timestamp)
        case "qualified": return .qualified(timestamp)
        case "usable": return .usable(timestamp)
        case "readonly": return .readonly(timestamp)
        case "rejected": return .rejected(timestamp)
        case "retired":
            guard let timestamp else {
                throw CTLogListError(file: file, key: "\(key).retired.timestamp",
                                     problem: "a retired log needs the date it retired")
            }
            return .retired(timestamp)
        default: return .other(name)
        }
    }

    /// "2025-01-01T00:00:00Z", with or without fractions of a second.
    static func date(_ text: String) -> Date? {
        if let date = try? Date(text, strategy: .iso8601) { return date }
        return try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }
}

/// A CT log list that cannot be used, naming the file and, when one is at fault, the key.
public struct CTLogListError: Error, CustomStringConvertible, Sendable {
    public var file: String
    /// The JSON path of the value at fault, e.g. `operators[3].logs[0].key`.
    public var key: String?
    public var problem: String

    public init(file: String, key: String? = nil, problem: String) {
        self.file = file
        self.key = key
        self.problem = problem
    }

    public var description: String { "CT log list \(file): " + (key.map { "\($0): " } ?? "") + problem }
}

/// Gathers a leaf's SCTs from every source into R16's facts, verifying each against a log list.
enum SCTCollector {
    static func collect(leaf: X509Certificate, issuer: X509Certificate?, presented: [PresentedSCT],
                        logs: CTLogList?, now: Date) -> [SCTFacts] {
        var context: OpaquePointer?
        if let logs, let made = CT_POLICY_EVAL_CTX_new() {
            context = made
            CT_POLICY_EVAL_CTX_set1_cert(made, leaf.pointer)
            if let issuer { CT_POLICY_EVAL_CTX_set1_issuer(made, issuer.pointer) }
            CT_POLICY_EVAL_CTX_set_shared_CTLOG_STORE(made, logs.pointer)
            CT_POLICY_EVAL_CTX_set_time(made, UInt64(max(0, now.timeIntervalSince1970) * 1000))
        }
        defer {
            if let context { CT_POLICY_EVAL_CTX_free(context) }
            OpenSSLErrorQueue.clear()
        }
        func facts(_ sct: OpaquePointer, _ source: SCTFacts.Source) -> SCTFacts? {
            guard let id = SCTReader.logID(sct) else { return nil }
            let timestamp = Date(timeIntervalSince1970: TimeInterval(SCT_get_timestamp(sct)) / 1000)
            var verified: Bool?
            let log = logs?.facts(forLog: id, signedAt: timestamp)
            // A log of the list that cannot count is not in OpenSSL's store: its SCT is left unverified.
            if let context, log == nil || logs?.entries[id]?.state.mayCount == true {
                // An embedded SCT signs the precertificate; the source tells OpenSSL which entry to rebuild.
                _ = SCT_set_source(sct, source == .embedded ? SCT_SOURCE_X509V3_EXTENSION
                                   : source == .ocsp ? SCT_SOURCE_OCSP_STAPLED_RESPONSE : SCT_SOURCE_TLS_EXTENSION)
                verified = SCT_validate(sct, context) == 1
            }
            return SCTFacts(logID: id, source: source, verified: verified, log: log, timestamp: timestamp)
        }
        var result: [SCTFacts] = []
        if let list = atsgate_embedded_scts(leaf.pointer) {
            defer { atsgate_sct_list_free(list) }
            for index in 0..<atsgate_sct_count(list) {
                if let sct = atsgate_sct_value(list, index), let made = facts(sct, .embedded) { result.append(made) }
            }
        }
        for sct in presented {
            let parsed: OpaquePointer? = sct.bytes.withUnsafeBufferPointer { buffer in
                var cursor = buffer.baseAddress
                return o2i_SCT(nil, &cursor, buffer.count)
            }
            guard let parsed else { continue }
            defer { SCT_free(parsed) }
            if let made = facts(parsed, sct.source) { result.append(made) }
        }
        return result
    }
}
