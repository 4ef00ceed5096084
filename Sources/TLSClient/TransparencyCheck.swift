import ATSPolicy
import COpenSSL
import Foundation

/// R16 as the operator configured it (`--certificate-transparency`, optionally `--ct-log-list FILE`).
/// Without a log list, SCTs are counted by distinct log id and not verified.
public struct TransparencyCheck: Sendable {
    /// Apple's log list, when given: each SCT's log must be in it and its signature must verify.
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

/// CT logs from a file in Apple's log list format (`operators[].logs[]` with base64 `key` and `log_id`,
/// as https://valid.apple.com/ct/log_list/current_log_list.json has them), loaded into an OpenSSL log
/// store for SCT verification. Owns the `CTLOG_STORE*` and frees it in deinit.
public final class CTLogList: @unchecked Sendable {
    let pointer: OpaquePointer
    /// Descriptions by base64 log id.
    public let logs: [String: String]

    /// Reads `file`; throws with the file name and the problem.
    public init(file: String) throws(CTLogListError) {
        let data: Data
        do { data = try Data(contentsOf: URL(fileURLWithPath: file)) } catch {
            throw CTLogListError(file: file, problem: "cannot read it: \(error.localizedDescription)")
        }
        guard let root = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
              let operators = root["operators"] as? [[String: Any]] else {
            throw CTLogListError(file: file, problem: "is not a CT log list (expected a JSON object with \"operators\")")
        }
        var config = ""
        var names: [String] = []
        var logs: [String: String] = [:]
        for (operatorIndex, logOperator) in operators.enumerated() {
            for (index, log) in ((logOperator["logs"] as? [[String: Any]]) ?? []).enumerated() {
                guard let key = log["key"] as? String, Data(base64Encoded: key) != nil else { continue }
                let name = "log\(operatorIndex)_\(index)"
                let description = (log["description"] as? String) ?? name
                names.append(name)
                // OpenSSL's log store format: one section per log, its description and base64 key.
                config += "[\(name)]\ndescription = \(description.filter { $0 != "\n" && $0 != "\\" })\nkey = \(key)\n"
                if let id = log["log_id"] as? String { logs[id] = description }
            }
        }
        guard !names.isEmpty else { throw CTLogListError(file: file, problem: "names no CT log with a key") }
        config = "enabled_logs = \(names.joined(separator: ","))\n" + config
        guard let store = CTLOG_STORE_new() else { throw CTLogListError(file: file, problem: "out of memory") }
        let temporary = FileManager.default.temporaryDirectory
            .appendingPathComponent("atsgate-ctlogs-\(UUID().uuidString).cnf").path
        defer { try? FileManager.default.removeItem(atPath: temporary) }
        guard FileManager.default.createFile(atPath: temporary, contents: Data(config.utf8)),
              CTLOG_STORE_load_file(store, temporary) == 1 else {
            let problem = OpenSSLErrorQueue.drain().text
            CTLOG_STORE_free(store)
            throw CTLogListError(file: file, problem: "OpenSSL cannot load its logs: \(problem)")
        }
        pointer = store
        self.logs = logs
    }

    deinit { CTLOG_STORE_free(pointer) }
}

/// A CT log list that cannot be used, naming the file.
public struct CTLogListError: Error, CustomStringConvertible, Sendable {
    public var file: String
    public var problem: String

    public var description: String { "CT log list \(file): \(problem)" }
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
            var verified: Bool?
            if let context {
                // An embedded SCT signs the precertificate; the source tells OpenSSL which entry to rebuild.
                _ = SCT_set_source(sct, source == .embedded ? SCT_SOURCE_X509V3_EXTENSION
                                   : source == .ocsp ? SCT_SOURCE_OCSP_STAPLED_RESPONSE : SCT_SOURCE_TLS_EXTENSION)
                verified = SCT_validate(sct, context) == 1
            }
            return SCTFacts(logID: id, source: source, verified: verified)
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
