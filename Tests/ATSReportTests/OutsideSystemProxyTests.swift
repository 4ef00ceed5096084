import ATSPolicy
import ATSReport
import Foundation
import FoundationXML
import Testing

/// The transparent gate's evidence in the report: per app and device, the connections that came in
/// on the transparent path from a device that also used the proxy ("outside the system proxy: N
/// connections to M destinations"), in every format; a device seen on one path only has no such line.
@Suite struct OutsideSystemProxyTests {
    typealias F = ReportFixtures

    static func record(_ scheme: String, _ host: String, _ port: Int, path: String, client: String, device: String? = nil,
                       original: String? = nil, action: String = "allow", reason: String? = nil) -> String {
        var extra = #","path":"\#(path)","original_dst":\#(original.map { "\"\($0)\"" } ?? "null")"#
        if let device { extra += #","device":"\#(device)""# }
        return F.record(scheme, host, port, action: action, reason: reason, tls: scheme == "https" ? "TLSv1.3" : nil, extra: extra)
            .replacingOccurrences(of: #""client":"127.0.0.1:58102""#, with: #""client":"\#(client)""#)
    }

    /// Device 198.18.1.2 (no --device name) used both paths; the iPad (named) both; 198.18.1.9 only the
    /// transparent one.
    static let lines = [
        record("https", "api.example.com", 443, path: "proxy", client: "198.18.1.2:50001"),
        record("https", "api.example.com", 443, path: "transparent", client: "198.18.1.2:50002", original: "198.18.2.2:443"),
        record("https", "api.example.com", 443, path: "transparent", client: "198.18.1.2:50003", original: "198.18.2.2:443"),
        record("http", "ads.example.com", 80, path: "transparent", client: "198.18.1.2:50004", original: "198.18.2.3:80",
               action: "block", reason: "cleartext-http"),
        // Neither TLS nor HTTP: no destination of its own, named by where it was going.
        F.record("https", "x", 1, action: "block", reason: "other-protocol").replacingOccurrences(
            of: #""scheme":"https","host":"x","port":1"#, with: #""scheme":null,"host":null,"port":null"#)
            .replacingOccurrences(of: #""client":"127.0.0.1:58102""#, with: #""client":"198.18.1.2:50005""#)
            .replacingOccurrences(of: #"}"#, with: #","path":"transparent","original_dst":"198.18.2.4:5222"}"#),
        record("https", "www.example.com", 443, path: "proxy", client: "[fd00:18:1::7]:50006", device: "ipad"),
        record("https", "cdn.example.com", 443, path: "transparent", client: "[fd00:18:1::7]:50007", device: "ipad",
               original: "[fd00:18:2::2]:443"),
        record("https", "only.example.com", 443, path: "transparent", client: "198.18.1.9:50008", original: "198.18.2.2:443"),
        // A QUIC attempt is no connection around the proxy: it was dropped.
        record("https", "quic.example.com", 443, path: "quic", client: "198.18.1.2:50009", action: "block", reason: "quic-fallback"),
    ]

    static func report() throws -> Report { try F.report("{}", lines) }

    @Test func theSummaryCountsConnectionsAndDestinationsOfDevicesThatUsedBothPaths() throws {
        let app = try #require(try Self.report().apps.first)
        #expect(app.outsideSystemProxy == [
            OutsideSystemProxy(device: "198.18.1.2", connections: 4,
                               destinations: ["198.18.2.4:5222", "ads.example.com:80", "api.example.com:443"]),
            OutsideSystemProxy(device: "ipad", connections: 1, destinations: ["cdn.example.com:443"]),
        ])
        #expect(app.outsideSystemProxy[0].summary == "outside the system proxy: 4 connections to 3 destinations")
        #expect(app.outsideSystemProxy[1].summary == "outside the system proxy: 1 connection to 1 destination")
    }

    @Test func itIsInEveryFormat() throws {
        let report = try Self.report()
        let text = report.text
        #expect(text.contains("  device 198.18.1.2: outside the system proxy: 4 connections to 3 destinations (an app or API "
                              + "that ignores the system proxy, which ATS does not protect): 198.18.2.4:5222, ads.example.com:80, "
                              + "api.example.com:443\n"), "\(text)")
        #expect(!text.contains("198.18.1.9"), "a device seen on the transparent path only")

        let root = try #require(try JSONSerialization.jsonObject(with: Data(report.jsonText.utf8)) as? [String: Any])
        let app = try #require((root["apps"] as? [[String: Any]])?.first)
        let outside = try #require(app["outside_system_proxy"] as? [[String: Any]])
        #expect(outside.map { $0["device"] as? String } == ["198.18.1.2", "ipad"])
        #expect(outside.first?["connections"] as? Int == 4)
        #expect(outside.last?["destinations"] as? [String] == ["cdn.example.com:443"])

        let junit = try XMLDocument(data: Data(report.junit.utf8))
        let cases = try junit.nodes(forXPath: "//testcase[@classname='policy.json.outside-system-proxy']").compactMap { $0 as? XMLElement }
        #expect(cases.compactMap { $0.attribute(forName: "name")?.stringValue } == ["198.18.1.2", "ipad"])
        #expect(try junit.nodes(forXPath: "//testcase[@classname='policy.json.outside-system-proxy']/skipped").count == 2)

        let sarif = try #require(try JSONSerialization.jsonObject(with: Data(report.sarif(toolVersion: "0").pretty.utf8)) as? [String: Any])
        let results = try #require(((sarif["runs"] as? [[String: Any]])?.first?["results"]) as? [[String: Any]])
        let found = results.filter { $0["ruleId"] as? String == "outside-system-proxy" }
        #expect(found.count == 2)
        #expect(((found.first?["message"] as? [String: Any])?["text"] as? String)?
            .hasPrefix("policy.json on device 198.18.1.2: outside the system proxy: 4 connections to 3 destinations") == true)

        let html = report.html
        let document = try XMLDocument(data: Data(html.replacingOccurrences(of: "<!DOCTYPE html>", with: "").utf8),
                                       options: [.documentTidyHTML])
        let rows = try document.nodes(forXPath: "//table[@class='outside']/tbody/tr").compactMap { $0 as? XMLElement }
        #expect(rows.count == 2)
        #expect(rows.first?.stringValue?.contains("outside the system proxy: 4 connections to 3 destinations") == true)

        #expect(report.plist.contains("<!-- device ipad: outside the system proxy: 1 connection to 1 destination"), "\(report.plist)")
    }

    @Test func logsWithoutPathsHaveNoSuchSection() throws {
        let app = try F.app("{}", [F.record("https", "api.example.com", 443)])
        #expect(app.outsideSystemProxy.isEmpty)
        #expect(!(try F.report("{}", [F.record("https", "api.example.com", 443)]).text.contains("outside the system proxy")))
    }

    @Test func partsReadInParallelMergeTheirPaths() throws {
        // Split the log in two as a parallel read does: the proxy record in one part, the transparent
        // ones in the other.
        var summary = F.summary(Array(Self.lines.prefix(1)))
        summary.merge(F.summary(Array(Self.lines.dropFirst())))
        let report = Report(summary: summary, policies: [try F.policy("{}")], options: EngineOptions())
        #expect(report.apps.first?.outsideSystemProxy.first?.connections == 4)
    }
}
