import ATSPolicy
import ATSReport
import Foundation
import FoundationXML
import Testing

/// The report knows when its evidence is incomplete: `log-overflow` records (action `error`, reason
/// `log-overflow`, `dropped`) say how many decisions the proxy made but could not log.
@Suite struct EvidenceTests {
    typealias F = ReportFixtures

    static func overflow(_ dropped: Int, time: String = "2026-11-22T06:21:05.000Z") -> String {
        #"{"time":"\#(time)","client":null,"policy":"policy.json","method":null,"scheme":null,"host":null,"port":null,"action":"error","reason":"log-overflow","message":"the log could not keep up: \#(dropped) records dropped","enforced":true,"dropped":\#(dropped)}"#
    }

    static let lines = [
        F.record("http", "api.example.com", 80, action: "block", reason: "cleartext-http"),
        overflow(1200),
        F.record("https", "www.example.com", 443, tls: "TLSv1.3", cipher: "TLS_AES_128_GCM_SHA256"),
        overflow(34, time: "2026-11-22T06:22:05.000Z"),
    ]

    @Test func overflowRecordsAreCountedPerLogAndAreNotDecisions() throws {
        let summary = F.summary(Self.lines, path: "proxy-a.log")
        let input = try #require(summary.inputs.first)
        #expect(input.overflowRecords == 2)
        #expect(input.dropped == 1234)
        #expect(input.records == 2, "the two decisions; the overflow records are the log's, not decisions")
        #expect(summary.undirected.isEmpty)
        let report = Report(summary: summary, policies: [try F.policy("{}")], options: EngineOptions())
        #expect(report.isIncomplete)
        #expect(report.missingDecisions == 1234)
        #expect(report.incompleteInputs.map(\.path) == ["proxy-a.log"])
    }

    @Test func anErrorRecordWithoutDroppedOrAnotherReasonIsADecision() {
        let summary = F.summary([
            #"{"time":"2026-11-22T06:21:05.000Z","action":"error","reason":"log-overflow","scheme":null,"host":null,"port":null}"#,
            #"{"time":"2026-11-22T06:21:05.000Z","action":"error","reason":"bad-request","dropped":3,"scheme":null,"host":null,"port":null}"#,
        ])
        #expect(summary.inputs.first?.dropped == 0)
        #expect(summary.records == 2)
    }

    @Test func everyFormatSaysHowManyAreMissing() throws {
        let report = Report(summary: F.summary(Self.lines, path: "proxy-a.log"), policies: [try F.policy("{}")],
                            options: EngineOptions())
        let line = "proxy-a.log: 1234 decisions missing (2 log-overflow records: the proxy made them but could not write them)"
        #expect(report.text.contains("  INCOMPLETE: \(line)\n"))
        #expect(report.text.hasSuffix("; INCOMPLETE: 1234 decisions missing from the logs\n"))

        let json = try #require(try JSONSerialization.jsonObject(with: Data(report.jsonText.utf8)) as? [String: Any])
        #expect(json["complete"] as? Bool == false)
        #expect(json["missing_decisions"] as? Int == 1234)
        let input = try #require((json["inputs"] as? [[String: Any]])?.first)
        #expect(input["dropped"] as? Int == 1234 && input["log_overflow_records"] as? Int == 2)

        #expect(report.html.contains("<p class=\"incomplete\"><b>Incomplete evidence</b> \(line)</p>"))

        let sarif = try #require(try JSONSerialization.jsonObject(with: Data(report.sarif(toolVersion: "0").pretty.utf8)) as? [String: Any])
        let run = try #require((sarif["runs"] as? [[String: Any]])?.first)
        let result = try #require((run["results"] as? [[String: Any]])?.first { $0["ruleId"] as? String == "incomplete-evidence" })
        #expect(result["level"] as? String == "error")
        #expect((result["message"] as? [String: Any])?["text"] as? String == "Incomplete evidence: \(line).")
        let invocation = try #require((run["invocations"] as? [[String: Any]])?.first)
        #expect(invocation["executionSuccessful"] as? Bool == false)

        let junit = try XMLDocument(data: Data(report.junit.utf8))
        let errors = try junit.nodes(forXPath: "//testsuite[@name='evidence']/testcase/error").compactMap { $0 as? XMLElement }
        #expect(errors.map { $0.attribute(forName: "type")?.stringValue } == ["log-overflow"])
        #expect(junit.rootElement()?.attribute(forName: "errors")?.stringValue == "1")

        // --allow-incomplete: still said, no longer an error.
        let allowed = Report(summary: F.summary(Self.lines, path: "proxy-a.log"), policies: [try F.policy("{}")],
                             options: EngineOptions(), settings: ReportSettings(allowIncomplete: true))
        #expect(try XMLDocument(data: Data(allowed.junit.utf8)).rootElement()?.attribute(forName: "errors")?.stringValue == "0")
        #expect(allowed.text.contains("  INCOMPLETE: \(line)\n"))
    }

    @Test func aCompleteLogSaysNothingOfIt() throws {
        let report = try F.report("{}", [F.record("http", "api.example.com", 80)])
        #expect(!report.isIncomplete)
        #expect(!report.text.contains("INCOMPLETE"))
        #expect(!report.junit.contains("evidence"))
    }
}
