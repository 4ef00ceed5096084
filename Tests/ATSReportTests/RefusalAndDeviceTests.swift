import ATSPolicy
import ATSReport
import Foundation
import FoundationXML
import Testing

/// The app's own refusals (`client-refused-certificate`, `client_alert`) and the lab's devices
/// (`device`) in every format of the report: the per-app list "the app refused this server", and
/// which devices each destination was seen from.
@Suite struct RefusalAndDeviceTests {
    typealias F = ReportFixtures

    static let pinned = """
        {"NSPinnedDomains": {"pinned.example.com": {"NSPinnedLeafIdentities": [{"SPKI-SHA256-BASE64": "\(String(repeating: "A", count: 43))="}]}}}
        """

    static func device(_ name: String) -> String { #","device":"\#(name)""# }

    static func refusal(_ host: String, alert: String?, device: String) -> String {
        F.record("https", host, 443, action: "error", reason: "client-refused-certificate", tls: alert == nil ? "TLSv1.3" : "TLSv1.2",
                 extra: Self.device(device) + #","client_alert":\#(alert.map { "\"\($0)\"" } ?? "null"),"pinned_domain":null"#)
    }

    static func report() throws -> Report {
        try F.report(pinned, [
            refusal("pinned.example.com", alert: "unknown_ca", device: "iphone-15"),
            refusal("pinned.example.com", alert: "unknown_ca", device: "iphone-15"),
            refusal("pinned.example.com", alert: nil, device: "ipad-air"),
            refusal("other.example.com", alert: "bad_certificate", device: "ipad-air"),
            F.record("https", "www.example.com", 443, tls: "TLSv1.3", extra: device("iphone-15")),
            F.record("https", "www.example.com", 443, tls: "TLSv1.3", extra: device("ipad-air")),
            F.record("https", "www.example.com", 443, tls: "TLSv1.3", extra: device("iphone-15")),
            F.record("https", "www.example.com", 443, tls: "TLSv1.3"),
        ])
    }

    @Test func theSummaryCountsRefusalsByAlertAndRecordsByDevice() throws {
        let app = try #require(try Self.report().apps.first)
        let pinned = try #require(app.destinations.first { $0.traffic.host == "pinned.example.com" })
        #expect(pinned.traffic.clientRefusals == ["unknown_ca": 2, "encrypted": 1])
        #expect(pinned.traffic.devices == ["iphone-15": 2, "ipad-air": 1])
        let www = try #require(app.destinations.first { $0.traffic.host == "www.example.com" })
        #expect(www.traffic.devices == ["iphone-15": 2, "ipad-air": 1], "a record without a device is not counted under one")
        #expect(www.traffic.clientRefusals.isEmpty)
        #expect(app.refusedByApp.map(\.traffic.host) == ["other.example.com", "pinned.example.com"])
        #expect(app.devices.map(\.0) == ["iphone-15", "ipad-air"])
        #expect(!app.destinations.contains { $0.isBlocked }, "a refusal by the app is no ATS block")
    }

    @Test func theTextListsWhatTheAppRefusedAndTheDevices() throws {
        let text = try Self.report().text
        #expect(text.contains("  devices: iphone-15 (4 records), ipad-air (3 records)\n"), "\(text)")
        #expect(text.contains("THE APP REFUSED THIS SERVER (2)"), "\(text)")
        #expect(text.contains("    https://pinned.example.com:443  unknown_ca \u{d7}2, encrypted \u{d7}1  devices: ipad-air, iphone-15\n"),
                "\(text)")
        #expect(text.contains("verdict: nothing was or would be blocked"))
    }

    @Test func theJSONHasTheListAndEachDestinationsDevices() throws {
        let root = try #require(try JSONSerialization.jsonObject(with: Data(try Self.report().jsonText.utf8)) as? [String: Any])
        let app = try #require((root["apps"] as? [[String: Any]])?.first)
        let refused = try #require(app["refused_by_app"] as? [[String: Any]])
        #expect(refused.map { $0["url"] as? String } == ["https://other.example.com:443", "https://pinned.example.com:443"])
        #expect(refused[1]["alerts"] as? [String: Int] == ["encrypted": 1, "unknown_ca": 2])
        #expect(refused[1]["devices"] as? [String] == ["ipad-air", "iphone-15"])
        #expect(app["devices"] as? [String: Int] == ["iphone-15": 4, "ipad-air": 3])
        let destinations = try #require(app["destinations"] as? [[String: Any]])
        let www = try #require(destinations.first { $0["host"] as? String == "www.example.com" })
        #expect(www["devices"] as? [String: Int] == ["iphone-15": 2, "ipad-air": 1])
        #expect(www["client_refusals"] as? [String: Int] == [:])
    }

    @Test func theHTMLHasTheSectionAndADevicesColumn() throws {
        let html = try Self.report().html
        let document = try XMLDocument(data: Data(html.replacingOccurrences(of: "<!DOCTYPE html>", with: "").utf8),
                                       options: [.documentTidyHTML])
        let refused = try document.nodes(forXPath: "//table[@class='refused']/tbody/tr").compactMap { $0 as? XMLElement }
        #expect(refused.count == 2, "\(html)")
        #expect(refused.last?.stringValue?.contains("unknown_ca \u{d7}2, encrypted \u{d7}1") == true)
        let headers = try document.nodes(forXPath: "//table[@class='all']/thead/tr/th").map { $0.stringValue ?? "" }
        #expect(headers.contains("devices"), "\(headers)")
        // (The page's <br> are HTML's, not XML's: the cell is read as written.)
        #expect(html.contains(#"<td class="devices">ipad-air 1<br>iphone-15 2</td>"#), "\(html)")
    }

    @Test func sarifAndJUnitShowTheRefusalsWithoutFailing() throws {
        let report = try Self.report()
        let sarif = try #require(try JSONSerialization.jsonObject(with: Data(report.sarif(toolVersion: "0").pretty.utf8)) as? [String: Any])
        let run = try #require((sarif["runs"] as? [[String: Any]])?.first)
        let results = try #require(run["results"] as? [[String: Any]]).filter { $0["ruleId"] as? String == "refused-by-app" }
        #expect(results.count == 2)
        #expect(results.allSatisfy { $0["level"] as? String == "warning" })
        let pinned = try #require(results.first { (($0["properties"] as? [String: Any])?["url"] as? String) == "https://pinned.example.com:443" })
        let logical = ((pinned["locations"] as? [[String: Any]])?.first?["logicalLocations"] as? [[String: Any]])?.first
        #expect(logical?["fullyQualifiedName"] as? String == "NSPinnedDomains.pinned.example.com", "located on the app's pin")

        let junit = try XMLDocument(data: Data(report.junit.utf8))
        let cases = try junit.nodes(forXPath: "//testcase[@classname='policy.json.refused-by-app']").compactMap { $0 as? XMLElement }
        #expect(cases.count == 2)
        #expect(try junit.nodes(forXPath: "//testcase/failure").isEmpty)
        #expect(cases.last?.elements(forName: "skipped").first?.attribute(forName: "message")?.stringValue?
                .hasPrefix("the app refused this server on ipad-air, iphone-15: unknown_ca") == true)
        #expect(!report.fails)
    }
}
