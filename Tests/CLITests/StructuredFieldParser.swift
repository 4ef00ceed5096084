import Foundation
import Testing
import TestSupport

/// Proxy-Status values read by a real Structured Field Values parser (http-sf, run by
/// Tests/Fixtures/proxy_status.py from the venv scripts/install-test-tools makes), never by a regex.
enum StructuredFieldParser {
    /// One member of a parsed list: its bare item and its parameters, each with its type.
    struct Member: CustomStringConvertible {
        var name: String
        /// `token` or `string`.
        var nameType: String
        var parameters: [String: (type: String, value: Any)]

        func token(_ key: String) -> String? { parameters[key].flatMap { $0.type == "token" ? $0.value as? String : nil } }
        func string(_ key: String) -> String? { parameters[key].flatMap { $0.type == "string" ? $0.value as? String : nil } }
        func integer(_ key: String) -> Int? { parameters[key].flatMap { $0.type == "integer" ? $0.value as? Int : nil } }

        var description: String {
            "\(nameType) \(name) " + parameters.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value.type):\($0.value.value)" }
                .joined(separator: " ")
        }
    }

    static let python = URL(fileURLWithPath: fixturePath("proxy_status.py")).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(".build/sf-tools/bin/python3").path

    /// Each value parsed as an sf-list (the field's type, RFC 9209 section 2); throws when one does not parse.
    static func parseLists(_ values: [String]) throws -> [[Member]] {
        guard FileManager.default.isExecutableFile(atPath: python) else {
            throw HarnessError("\(python) is missing: scripts/install-test-tools installs the pinned PyPI test tools")
        }
        let run = try Subprocess.run(python, [fixturePath("proxy_status.py")] + values)
        guard run.status == 0 else { throw HarnessError("proxy_status.py: \(run.stderr)") }
        let lines = run.stdout.split(separator: "\n")
        guard lines.count == values.count else { throw HarnessError("proxy_status.py printed \(lines.count) lines for \(values.count)") }
        return try zip(lines, values).map { line, value in
            let parsed = try JSONSerialization.jsonObject(with: Data(line.utf8))
            if let failure = parsed as? [String: Any] {
                throw HarnessError("not a Structured Field list: \(value): \(failure["error"] ?? "")")
            }
            let members = try #require(parsed as? [[String: Any]])
            return try members.map { member in
                let parameters = try #require(member["params"] as? [String: [Any]])
                return Member(name: try #require(member["member"] as? String),
                              nameType: try #require(member["member_type"] as? String),
                              parameters: parameters.mapValues { ($0[0] as? String ?? "?", $0[1]) })
            }
        }
    }

    /// The one Proxy-Status member of each response: its field values (each response must have
    /// exactly one field, with one member: the proxy answered alone).
    static func proxyStatus(of responses: [String]) throws -> [Member] {
        let values = try responses.map { response in
            let head = response.components(separatedBy: "\r\n\r\n").first ?? ""
            let fields = head.split(separator: "\r\n").dropFirst().compactMap { line -> String? in
                guard let colon = line.firstIndex(of: ":"), line[..<colon].lowercased() == "proxy-status" else { return nil }
                return line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
            guard fields.count == 1 else { throw HarnessError("\(fields.count) Proxy-Status fields in: \(head)") }
            return fields[0]
        }
        return try parseLists(values).enumerated().map { index, members in
            guard members.count == 1 else { throw HarnessError("\(members.count) members in \(values[index])") }
            return members[0]
        }
    }
}
