import ATSPolicy
import ATSReport
import Foundation

/// Hand-written decision logs and policies for the report's unit tests.
enum ReportFixtures {
    /// One decision record as the proxy writes it (the README's field order), with the given values.
    static func record(_ scheme: String, _ host: String, _ port: Int, action: String = "allow", reason: String? = nil,
                       time: String = "2026-11-22T06:21:01.792Z", tls: String? = nil, cipher: String? = nil,
                       exception: String? = nil, policy: String = "policy.json", app: String? = nil,
                       enforced: Bool = false, extra: String = "") -> String {
        func quoted(_ text: String?) -> String { text.map { "\"\($0)\"" } ?? "null" }
        var line = #"{"time":"\#(time)","client":"127.0.0.1:58102","policy":"\#(policy)","method":"GET","#
        line += #""scheme":"\#(scheme)","host":"\#(host)","port":\#(port),"class":"public","direct":false,"#
        line += #""exception":\#(quoted(exception)),"ats":"on","action":"\#(action)","reason":\#(quoted(reason)),"#
        line += #""message":"a message with \"quotes\" and a \\ backslash","enforced":\#(enforced),"#
        line += #""tls_version":\#(quoted(tls)),"cipher":\#(quoted(cipher)),"upstream_ip":null,"bytes_up":0,"#
        line += #""bytes_down":0,"duration_ms":0.12,"status":403,"rule":"R12""#
        if let app { line += #","app":"\#(app)""# }
        return line + extra + "}"
    }

    static func summary(_ lines: [String], path: String = "test.log") -> TrafficSummary {
        var builder = TrafficSummaryBuilder()
        builder.begin(path: path)
        for line in lines {
            var line = line
            line.withUTF8 { builder.ingest(UnsafeRawBufferPointer($0)) }
        }
        return builder.finish()
    }

    static func policy(_ json: String, origin: String = "policy.json") throws -> ReportPolicy {
        let source = try PolicyLoader.parse(data: Data(json.utf8), origin: origin)
        return ReportPolicy(id: nil, source: source, text: json)
    }

    /// Judges `lines` under the JSON policy; the only app's report.
    static func app(_ policyJSON: String, _ lines: [String], profile: Profile = .ios17,
                    settings: ReportSettings = ReportSettings()) throws -> AppReport {
        let report = Report(summary: summary(lines), policies: [try policy(policyJSON)],
                            options: EngineOptions(profile: profile), settings: settings)
        guard report.apps.count == 1 else { throw FixtureError("expected one app, got \(report.apps.map(\.app))") }
        return report.apps[0]
    }

    static func report(_ policyJSON: String, _ lines: [String], settings: ReportSettings = ReportSettings()) throws -> Report {
        Report(summary: summary(lines), policies: [try policy(policyJSON)], options: EngineOptions(), settings: settings)
    }
}

extension ReportFixtures {
    /// `bytes` with one to four bytes replaced, by JSON's structural bytes or any byte: what a reader of
    /// untrusted input must survive.
    static func corrupt(_ bytes: [UInt8], using generator: inout some RandomNumberGenerator) -> [UInt8] {
        let interesting: [UInt8] = [0x22, 0x5C, 0x7B, 0x7D, 0x5B, 0x5D, 0x3A, 0x2C, 0x00, 0x0A, 0xFF, 0x20]
        var bytes = bytes
        for _ in 0..<Int.random(in: 1...4, using: &generator) {
            let at = Int.random(in: 0..<bytes.count, using: &generator)
            bytes[at] = Bool.random(using: &generator) ? interesting.randomElement(using: &generator)!
                : UInt8.random(in: 0...255, using: &generator)
        }
        return bytes
    }

    /// A new directory under the system's temporary directory (the caller removes it).
    static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("atsgate-report-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// Compresses `path` with gzip(1) into `path.gz` (keeping `path` when asked).
    static func gzip(_ path: String, keep: Bool = false) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/gzip")
        process.arguments = ["-f"] + (keep ? ["-k"] : []) + [path]
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw FixtureError("gzip \(path) exited \(process.terminationStatus)") }
    }
}

struct FixtureError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

extension AppReport {
    func destination(_ url: String) -> DestinationReport? { destinations.first { $0.traffic.url == url } }
}
