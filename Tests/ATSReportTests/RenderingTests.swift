import ATSPolicy
import ATSReport
import Foundation
import FoundationXML
import Testing

/// The formats, read back by parsers that are not ours (FoundationXML, JSONSerialization).
@Suite struct RenderingTests {
    typealias F = ReportFixtures

    static let policyText = """
        {
          "NSExceptionDomains": {
            "legacy.example.com": {"NSExceptionAllowsInsecureHTTPLoads": true},
            "unused.example.org": {"NSExceptionAllowsInsecureHTTPLoads": true}
          }
        }
        """

    static func report() throws -> Report {
        try F.report(policyText, [
            F.record("http", "legacy.example.com", 80),
            F.record("http", "api.example.com", 80, action: "block", reason: "cleartext-http"),
            F.record("https", "bad.example.com", 443, action: "block", reason: "certificate-expired", tls: "TLSv1.2",
                     cipher: "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"),
            F.record("https", "www.example.com", 443, time: "2026-11-22T07:45:00.000Z", tls: "TLSv1.3",
                     cipher: "TLS_AES_128_GCM_SHA256"),
            #"{"time":"2026-11-22T06:30:00.000Z","action":"error","reason":"bad-request","scheme":null,"host":null,"port":null,"policy":"policy.json"}"#,
        ])
    }

    @Test func junitHasOneCaseperDestinationAndAFailurePerBlock() throws {
        let document = try XMLDocument(data: Data(try Self.report().junit.utf8))
        let root = try #require(document.rootElement())
        #expect(root.name == "testsuites")
        let cases = try root.nodes(forXPath: "//testcase").compactMap { $0 as? XMLElement }
        let failures = try root.nodes(forXPath: "//testcase/failure").compactMap { $0 as? XMLElement }
        let skipped = try root.nodes(forXPath: "//testcase/skipped")
        #expect(cases.count == 4 + 1, "four destinations and one unused key")
        #expect(failures.count == 2)
        #expect(skipped.count == 1)
        #expect(root.attribute(forName: "failures")?.stringValue == "2")
        let api = try #require(cases.first { $0.attribute(forName: "name")?.stringValue == "http://api.example.com:80" })
        let failure = try #require(api.elements(forName: "failure").first)
        #expect(failure.attribute(forName: "type")?.stringValue == "cleartext-http")
        #expect(failure.stringValue?.contains("fix: NSExceptionAllowsInsecureHTTPLoads=YES for api.example.com") == true)
        let bad = try #require(cases.first { $0.attribute(forName: "name")?.stringValue == "https://bad.example.com:443" })
        #expect(bad.elements(forName: "failure").first?.stringValue?.contains("no key: fix the server") == true)
    }

    @Test func sarifHasTheRequiredStructureAndPointsAtThePolicysKeys() throws {
        let text = try Self.report().sarif(toolVersion: "0.1.0").pretty
        let root = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        #expect(root["version"] as? String == "2.1.0")
        #expect(root["$schema"] as? String == "https://json.schemastore.org/sarif-2.1.0.json")
        let run = try #require((root["runs"] as? [[String: Any]])?.first)
        let driver = try #require((run["tool"] as? [String: Any])?["driver"] as? [String: Any])
        #expect(driver["name"] as? String == "atsgate")
        let rules = try #require(driver["rules"] as? [[String: Any]])
        let results = try #require(run["results"] as? [[String: Any]])
        #expect(results.count == 3, "two blocks and one unused key")
        for result in results {
            // SARIF 2.1.0 §3.27: message.text is required; ruleIndex must point at the rule with ruleId.
            #expect((result["message"] as? [String: Any])?["text"] is String)
            let index = try #require(result["ruleIndex"] as? Int)
            #expect(rules[index]["id"] as? String == result["ruleId"] as? String)
            let location = try #require((result["locations"] as? [[String: Any]])?.first)
            let physical = try #require(location["physicalLocation"] as? [String: Any])
            #expect((physical["artifactLocation"] as? [String: Any])?["uri"] as? String == "policy.json")
        }
        let unused = try #require(results.first { $0["ruleId"] as? String == "unused-key" })
        let region = ((unused["locations"] as? [[String: Any]])?.first?["physicalLocation"] as? [String: Any])?["region"]
        let line = Self.policyText.split(separator: "\n", omittingEmptySubsequences: false)
            .firstIndex { $0.contains("\"unused.example.org\"") }! + 1
        #expect((region as? [String: Any])?["startLine"] as? Int == line, "the unused entry's own line")
    }

    @Test func jsonIsOneDocumentWithEveryDestination() throws {
        let object = try #require(try JSONSerialization.jsonObject(with: Data(try Self.report().json.pretty.utf8)) as? [String: Any])
        #expect(object["would_block"] as? Bool == true)
        let app = try #require((object["apps"] as? [[String: Any]])?.first)
        #expect((app["destinations"] as? [Any])?.count == 4)
        #expect((app["without_destination"] as? [String: Int]) == ["bad-request": 1])
        #expect(((app["suggestion"] as? [String: Any])?["proven"]) as? Bool == false)
    }

    @Test func htmlIsOneSelfContainedFileWithItsCharts() throws {
        let html = try Self.report().html
        #expect(html.hasPrefix("<!DOCTYPE html>"))
        #expect(html.components(separatedBy: "<svg").count - 1 == 2, "a timeline and the reasons")
        for external in ["<script", "<link", "src=", "@import", "url("] {
            #expect(!html.contains(external), "\(external)")
        }
        #expect(html.contains("http://api.example.com:80"))
        #expect(html.contains("NSExceptionAllowsInsecureHTTPLoads=YES for api.example.com"))
        // The page is well-formed enough for an XML parser once the doctype is dropped.
        let body = html.replacingOccurrences(of: "<!DOCTYPE html>", with: "")
            .replacingOccurrences(of: "<br>", with: "<br/>")
            .replacingOccurrences(of: "<meta charset=\"utf-8\">", with: "<meta charset=\"utf-8\"/>")
            .replacingOccurrences(of: "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">",
                                  with: "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>")
            .replacingOccurrences(of: "&middot;", with: "&#183;").replacingOccurrences(of: "&mdash;", with: "&#8212;")
        _ = try XMLDocument(data: Data(body.utf8))
    }

    @Test func oneOfAnythingIsSaidInTheSingular() throws {
        let report = try ReportFixtures.report("{}", [ReportFixtures.record("https", "api.example.com", 443, tls: "TLSv1.3",
                                                                                 extra: #","key_exchange":"x25519""#)])
        let text = report.text
        #expect(text.hasPrefix("atsgate report: 1 record from"), "\(text)")
        #expect(text.contains("  1 destination, 1 record: "), "\(text)")
        #expect(text.contains("quantum-secure (1 TLS destination): "), "\(text)")
        #expect(!text.contains("1 destinations") && !text.contains("1 records"), "\(text)")
        #expect(report.html.contains("Share of 1 TLS destination<"))
    }

    @Test func textSaysCountsThenWhatWouldBreakThenUnused() throws {
        let text = try Self.report().text
        let counts = try #require(text.range(of: "4 destinations, 5 records"))
        let breaks = try #require(text.range(of: "WOULD BREAK (2)"))
        let unused = try #require(text.range(of: "UNUSED (1, candidates to remove)"))
        #expect(counts.lowerBound < breaks.lowerBound && breaks.lowerBound < unused.lowerBound)
        #expect(text.contains("fix: NSExceptionAllowsInsecureHTTPLoads=YES for api.example.com [App Review asks for a justification]"))
        #expect(text.hasSuffix("verdict: 2 destinations were or would be blocked\n"))
    }
}

extension RenderingTests {
    @Test func theStreamedJSONIsTheSameDocumentAsTheTree() throws {
        let report = try Self.report()
        #expect(report.jsonText == report.json.pretty)
        let two = Report(summary: F.summary([F.record("http", "a.example.com", 80, app: "one"),
                                             F.record("http", "b.example.com", 80, app: "two")]),
                         policies: [], options: EngineOptions())
        #expect(two.jsonText == two.json.pretty)
    }
}
