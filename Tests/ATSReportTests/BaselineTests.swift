import ATSPolicy
import ATSReport
import Foundation
import FoundationXML
import Testing

/// `--baseline`: an earlier JSON report; findings new, unchanged or absent, and only new ones count.
@Suite struct BaselineTests {
    typealias F = ReportFixtures

    static let policy = #"{"NSExceptionDomains": {"unused.example.org": {"NSExceptionAllowsInsecureHTTPLoads": true}}}"#
    static let before = [
        F.record("http", "api.example.com", 80, action: "block", reason: "cleartext-http"),
        F.record("http", "gone.example.com", 80, action: "block", reason: "cleartext-http"),
        F.record("https", "www.example.com", 443, tls: "TLSv1.3", cipher: "TLS_AES_128_GCM_SHA256"),
    ]
    /// api.example.com still blocked; gone.example.com went; old.example.com is new.
    static let after = [
        F.record("http", "api.example.com", 80, action: "block", reason: "cleartext-http", time: "2026-11-23T06:21:01.792Z"),
        F.record("https", "old.example.com", 443, action: "block", reason: "tls-version", tls: "TLSv1.0",
                 cipher: "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA"),
        F.record("https", "www.example.com", 443, tls: "TLSv1.3", cipher: "TLS_AES_128_GCM_SHA256"),
    ]

    /// The earlier report's JSON, loaded back as the tool loads `--baseline`.
    static func baseline(_ lines: [String]) throws -> (Baseline, URL) {
        let directory = try F.temporaryDirectory()
        let path = directory.appendingPathComponent("baseline.json").path
        try F.report(policy, lines).jsonText.write(toFile: path, atomically: true, encoding: .utf8)
        return (try Baseline.load(path), directory)
    }

    @Test func onlyNewFindingsFailAndTheRestAreUnchangedOrAbsent() throws {
        let (baseline, directory) = try Self.baseline(Self.before)
        defer { try? FileManager.default.removeItem(at: directory) }
        let report = try F.report(Self.policy, Self.after, settings: ReportSettings(baseline: baseline))
        let app = try #require(report.apps.first)
        #expect(app.destination("http://api.example.com:80")?.baseline == .unchanged)
        #expect(app.destination("https://old.example.com:443")?.baseline == .new)
        #expect(app.destination("https://www.example.com:443")?.baseline == nil, "not a finding")
        #expect(app.unusedBaseline == [.unchanged])
        #expect(app.absent == [AbsentFinding(rule: "would-block", app: app.app, subject: "http://gone.example.com:80",
                                             reasons: ["cleartext-http"])])
        #expect(report.fails, "old.example.com is new")
        #expect(report.baselineCounts == (new: 1, unchanged: 2, absent: 1))

        // The same traffic against its own report: nothing new, nothing fails.
        let (same, other) = try Self.baseline(Self.after)
        defer { try? FileManager.default.removeItem(at: other) }
        let again = try F.report(Self.policy, Self.after, settings: ReportSettings(baseline: same))
        #expect(again.wouldBlock && !again.fails)
    }

    @Test func aNewReasonOnAnOldDestinationIsNew() throws {
        let (baseline, directory) = try Self.baseline([
            F.record("https", "old.example.com", 443, action: "block", reason: "tls-version", tls: "TLSv1.0",
                     cipher: "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA"),
        ])
        defer { try? FileManager.default.removeItem(at: directory) }
        let report = try F.report(Self.policy, [
            F.record("https", "old.example.com", 443, action: "block", reason: "tls-version", tls: "TLSv1.0",
                     cipher: "TLS_RSA_WITH_AES_128_CBC_SHA"),
        ], settings: ReportSettings(baseline: baseline))
        #expect(report.apps.first?.destination("https://old.example.com:443")?.findings.map(\.reason) == ["cipher-suite", "tls-version"])
        #expect(report.apps.first?.destination("https://old.example.com:443")?.baseline == .new)
        #expect(report.fails)
    }

    @Test func everyFormatShowsTheStates() throws {
        let (baseline, directory) = try Self.baseline(Self.before)
        defer { try? FileManager.default.removeItem(at: directory) }
        let report = try F.report(Self.policy, Self.after, settings: ReportSettings(baseline: baseline))

        let text = report.text
        #expect(text.contains("baseline \(baseline.path): 1 new, 2 unchanged, 1 absent"))
        #expect(text.contains("  WOULD BREAK, NEW since the baseline (1):\n    https://old.example.com:443  tls-version"))
        #expect(text.contains("  WOULD BREAK, UNCHANGED since the baseline (1):\n    http://api.example.com:80  cleartext-http"))
        #expect(text.contains("  ABSENT since the baseline (1):\n    http://gone.example.com:80 is no longer blocked for cleartext-http"))
        #expect(text.contains("NSExceptionDomains.unused.example.org: no recorded load was decided by this entry [unchanged]"))
        #expect(text.hasSuffix("verdict: 2 destinations were or would be blocked (1 new since the baseline)\n"))

        let sarif = try #require(try JSONSerialization.jsonObject(with: Data(report.sarif(toolVersion: "0").pretty.utf8)) as? [String: Any])
        let results = try #require(((sarif["runs"] as? [[String: Any]])?.first)?["results"] as? [[String: Any]])
        let states = results.map { "\($0["ruleId"]!) \(($0["properties"] as? [String: Any])?["url"] ?? ($0["properties"] as? [String: Any])?["subject"] ?? "") \($0["baselineState"] ?? "-")" }
        #expect(Set(states) == ["would-block http://api.example.com:80 unchanged", "would-block https://old.example.com:443 new",
                                "unused-key  unchanged", "would-block http://gone.example.com:80 absent"], "\(states)")
        let absent = try #require(results.first { $0["baselineState"] as? String == "absent" })
        #expect(absent["kind"] as? String == "pass" && absent["level"] as? String == "none")

        let junit = try XMLDocument(data: Data(report.junit.utf8))
        let cases = try junit.nodes(forXPath: "//testcase").compactMap { $0 as? XMLElement }
        func outcome(_ name: String) -> String? {
            guard let element = cases.first(where: { $0.attribute(forName: "name")?.stringValue == name }) else { return nil }
            if let failure = element.elements(forName: "failure").first { return "failure " + (failure.attribute(forName: "message")?.stringValue ?? "") }
            if let skipped = element.elements(forName: "skipped").first { return "skipped " + (skipped.attribute(forName: "message")?.stringValue ?? "") }
            return "pass"
        }
        #expect(outcome("https://old.example.com:443") == "failure new since the baseline: would be blocked: tls-version")
        #expect(outcome("http://api.example.com:80") == "skipped unchanged since the baseline: would be blocked: cleartext-http")
        #expect(outcome("http://gone.example.com:80") == "pass")
        #expect(junit.rootElement()?.attribute(forName: "failures")?.stringValue == "1")

        let json = try #require(try JSONSerialization.jsonObject(with: Data(report.jsonText.utf8)) as? [String: Any])
        let counts = try #require(json["baseline"] as? [String: Any])
        #expect(counts["new"] as? Int == 1 && counts["unchanged"] as? Int == 2 && counts["absent"] as? Int == 1)
        #expect(json["fails"] as? Bool == true)

        let html = report.html
        #expect(html.contains("<h3 class=\"new\">New since the baseline: what would break, and the fix</h3>"))
        #expect(html.contains("<h3 class=\"unchanged\">Unchanged since the baseline"))
        #expect(html.contains("<h3 class=\"absent\">Absent since the baseline</h3>"))
    }

    @Test func aReportWrittenWithABaselineIsABaselineItself() throws {
        let (baseline, directory) = try Self.baseline(Self.before)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("second.json").path
        try F.report(Self.policy, Self.after, settings: ReportSettings(baseline: baseline)).jsonText
            .write(toFile: path, atomically: true, encoding: .utf8)
        let second = try Baseline.load(path)
        let third = try F.report(Self.policy, Self.after, settings: ReportSettings(baseline: second))
        #expect(!third.fails)
        #expect(third.baselineCounts == (new: 0, unchanged: 3, absent: 0))
    }

    @Test(arguments: [
        ("not json at all", "not an atsgate report --format json document (not JSON)"),
        (#"{"version": "2.1.0", "runs": []}"#, #"not an atsgate report --format json document (it needs "apps", "inputs", "would_block" and "profile")"#),
        (#"[{"file": "Info.plist", "findings": []}]"#, #"not an atsgate report --format json document (it needs "apps", "inputs", "would_block" and "profile")"#),
        (#"{"apps": [{"name": "x"}], "inputs": [], "would_block": false, "profile": "ios17"}"#, #"not an atsgate report --format json document (an app without "app" or "destinations")"#),
    ])
    func aBaselineFromAnotherToolIsRefusedNamingTheFile(text: String, problem: String) throws {
        let directory = try F.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("other.json").path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        #expect(throws: Baseline.LoadError.self) { try Baseline.load(path) }
        do { _ = try Baseline.load(path) } catch { #expect(error.description == "\(path): \(problem)") }
    }
}
