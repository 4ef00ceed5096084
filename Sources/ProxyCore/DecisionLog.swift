import ATSPolicy
import Dispatch
import Foundation
import Glibc

/// The format of the decision log (INTERFACE.md).
public enum LogFormat: String, Sendable, CaseIterable {
    case json
    case text
    /// Structured journald entries: the JSON fields in upper case with an `ATS_` prefix.
    case journal
}

/// Sends one structured entry (journald's sd_journal_sendv, wired in by the executable): a
/// human-readable message, a syslog priority, and upper-case fields.
public typealias StructuredLogWriter = @Sendable (_ message: String, _ priority: Int32, _ fields: [(String, String)]) -> Void

/// One decision as the log records it; field names are INTERFACE.md's.
struct LogRecord {
    var time: Double
    var client: SocketAddress
    var method: String
    var decision: Decision?
    /// For answers that are not ATS decisions (400, 502, client-not-allowed ...).
    var action: String?
    var reason: String?
    var message: String?
    var enforced: Bool
    var status: Int?
    var upstreamIP: String?
    /// What the TLS handshake showed (CONNECT inspection, or the upstream of an upgrade).
    var tlsVersion: String?
    var cipher: String?
    var sni: String?
    var certificate: ServerJudgement.CertificateFacts?
    /// Certificate findings tolerated because the host allows cleartext (R15).
    var toleratedFindings: [String] = []
    var bytesUp = 0
    var bytesDown = 0
    var durationMilliseconds = 0.0

    /// The action as logged: the proxy's own when it answered, else the decision's.
    var loggedAction: String { action ?? decision?.action.rawValue ?? "allow" }

    /// The reason code as logged, if any.
    var loggedReason: String? { reason ?? decision?.reason?.rawValue }

    func json(policy: String) -> JSONValue {
        let destination = decision?.destination
        let requirements = decision?.requirements
        var fields: [(String, JSONValue)] = [
            ("time", .string(LogRecord.timestamp(time))),
            ("client", .string(client.description)),
            ("policy", .string(policy)),
            ("method", .string(method)),
            ("scheme", .optional(destination?.scheme.rawValue)),
            ("host", .optional(destination?.host.description)),
            ("port", destination.map { .int($0.port) } ?? .null),
            ("class", .optional(destination?.hostClass.rawValue)),
            ("direct", decision.map { .bool($0.direct) } ?? .null),
            ("exception", .optional(decision?.exception?.entry.displayName)),
            ("ats", .optional(decision?.ats.rawValue)),
            ("action", .string(loggedAction)),
            ("reason", .optional(loggedReason)),
            ("message", .optional(message ?? decision?.message)),
            ("enforced", .bool(enforced)),
            ("tls_version", .optional(tlsVersion)),
            ("cipher", .optional(cipher)),
            ("upstream_ip", .optional(upstreamIP)),
            ("bytes_up", .int(bytesUp)),
            ("bytes_down", .int(bytesDown)),
            ("duration_ms", .double((durationMilliseconds * 1000).rounded() / 1000)),
        ]
        if let status { fields.append(("status", .int(status))) }
        if let sni { fields.append(("sni", .string(sni))) }
        if let certificate {
            fields.append(("cert_subject", .string(certificate.subject)))
            fields.append(("cert_issuer", .string(certificate.issuer)))
            fields.append(("cert_key", .string(certificate.key)))
            fields.append(("cert_signature", .string(certificate.signatureAlgorithm)))
        }
        if !toleratedFindings.isEmpty { fields.append(("cert_tolerated", .array(toleratedFindings.map { .string($0) }))) }
        if let decision { fields.append(("rule", .string(decision.rule))) }
        if let requirements, requirements.minimumTLSVersion != nil {
            fields.append(("minimum_tls_version", .optional(requirements.minimumTLSVersion?.rawValue)))
        }
        return .object(fields)
    }

    func text(policy: String) -> String {
        let target = decision.map { "\($0.destination.scheme.rawValue)://\($0.destination.host):\($0.destination.port)" } ?? "-"
        let verdict = loggedAction
        let code = loggedReason
        var line = "\(LogRecord.timestamp(time)) \(client) \(method) \(target) \(verdict.uppercased())"
        if let code { line += " \(code)" }
        if !enforced { line += " (report only)" }
        if let tlsVersion { line += " \(tlsVersion)" }
        if let cipher { line += " \(cipher)" }
        line += " up=\(bytesUp) down=\(bytesDown) \(Int(durationMilliseconds))ms"
        if let text = message ?? decision?.message {
            // One record, one line: a policy value with a newline must not split it.
            line += ": " + text.replacing("\n", with: "\\n")
        }
        return line
    }

    /// RFC 3339 UTC with milliseconds.
    static func timestamp(_ time: Double) -> String {
        var seconds = time_t(time)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        let millis = Int((time - Double(Int(time))) * 1000)
        func pad(_ value: Int32, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))T"
            + "\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2)).\(pad(Int32(millis), 3))Z"
    }
}

/// Formats decision records for one configuration generation (its format and policy name) and
/// hands them to the shared sink. Each loop queue buffers its lines and writes them in batches (at
/// 16 KiB, on its clock tick, and on flush), so a record costs no thread hand-off.
final class DecisionLog: Sendable {
    let format: LogFormat
    private let policy: String
    private let sink: LogSink

    init(format: LogFormat, policy: String, sink: LogSink) {
        self.format = format
        self.policy = policy
        self.sink = sink
    }

    /// Formats the record into `buffer` (the calling loop's), writing the buffer out when it is full.
    func write(_ record: LogRecord, into buffer: inout [UInt8]) {
        switch format {
        case .json:
            record.json(policy: policy).appendCompact(to: &buffer)
        case .text:
            buffer += record.text(policy: policy).utf8
        case .journal:
            guard let structured = sink.structured else {
                // No journal wired in (a library user): fall back to JSON lines.
                record.json(policy: policy).appendCompact(to: &buffer)
                break
            }
            return structured(record.text(policy: policy), record.priority, record.journalFields(policy: policy))
        }
        buffer.append(0x0A)
        if buffer.count >= 16 * 1024 { flush(&buffer) }
    }

    func flush(_ buffer: inout [UInt8]) { sink.flush(&buffer) }
}

/// Where log lines go: one descriptor (standard output), written under a lock shared by every loop
/// and every configuration generation so lines never interleave; or a structured writer.
public final class LogSink: @unchecked Sendable {
    private let fd: Int32
    private let writeLock = NSLock()
    let structured: StructuredLogWriter?

    public init(fd: Int32 = STDOUT_FILENO, structured: StructuredLogWriter? = nil) {
        self.fd = fd
        self.structured = structured
    }

    /// Writes out and empties `buffer`.
    func flush(_ buffer: inout [UInt8]) {
        guard !buffer.isEmpty else { return }
        writeLock.lock()
        defer { writeLock.unlock() }
        var offset = 0
        while offset < buffer.count {
            let n = buffer[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                break // stdout is gone: records cannot be written anywhere
            }
            offset += n
        }
        buffer.removeAll(keepingCapacity: true)
    }
}

extension LogRecord {
    /// The JSON fields as journald fields: `ATS_` and the name in upper case; nulls are left out.
    func journalFields(policy: String) -> [(String, String)] {
        guard case .object(let fields) = json(policy: policy) else { return [] }
        return fields.compactMap { name, value in
            let text: String
            switch value {
            case .null: return nil
            case .string(let string): text = string
            default: text = value.compact
            }
            return ("ATS_" + name.uppercased(), text)
        }
    }

    /// Blocks are warnings, upstream failures errors, the rest informational (syslog levels).
    var priority: Int32 {
        switch loggedAction {
        case "block": 4
        case "error": 3
        default: 6
        }
    }
}

func now() -> Double {
    var spec = timespec()
    clock_gettime(CLOCK_REALTIME, &spec)
    return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
}
