import Foundation
import Glibc
import Testing
import TestSupport

/// The admin listener's live page in a real browser (Debian's chromium, headless): the recent
/// decisions are on the page as soon as it loads, decisions made while it is open arrive through
/// /events, the counts are by app, and the filter by app hides the others.
///
/// Chromium's `--virtual-time-budget` waits for every pending fetch, and the event stream never
/// ends, so the page is given real time instead (`--timeout`, after which the DOM is dumped).
@Suite(.serialized) struct LivePageTests {
    static let chromium = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }

    /// The page's DOM after it ran: `--virtual-time-budget` holds while a fetch is pending, so the
    /// page is asked to end its event stream after `stream` seconds (`?stream=`), and `work` runs
    /// meanwhile, in real time.
    static func dumpDOM(_ url: String, stream: Int = 5, while work: () throws -> Void) throws -> String {
        let browser = try #require(chromium, "chromium is not installed (scripts/install-deps installs it)")
        let separator = url.contains("?") ? "&" : "?"
        let process = try BackgroundProcess(browser, ["--headless", "--no-sandbox", "--disable-gpu",
                                                      "--user-data-dir=\(NSTemporaryDirectory())atsgate-chromium-\(getpid())",
                                                      "--virtual-time-budget=1500", "--dump-dom", url + separator + "stream=\(stream)"])
        try work()
        try process.wait(timeout: 60) { out, _ in out.contains("</html>") }
        process.stop()
        return process.stdout
    }

    static func rows(_ dom: String) -> [(app: String, fresh: Bool)] {
        dom.matches(of: /<tr class="decision( fresh)?" data-app="([^"]*)">/).map { (String($0.2), $0.1 != nil) }
    }

    @Test func thePageShowsRecentAndLiveDecisionsByAppAndFilters() throws {
        let origin = try Origin()
        let directory = try TemporaryDirectory()
        let lab = try DeviceLabTests.ipa("lab", in: directory)
        let other = try DeviceLabTests.ipa("other", in: directory)
        let daemon = try Daemon(DeviceLabTests.pins + ["--policy", lab, "--policy", other, "--admin", "127.0.0.1:0"])
        let url = "http://legacy.example.com:\(origin.httpPort)/small"
        #expect(try DeviceLabTests.curlStatus(daemon, ["-A", "Lab/1 CFNetwork/1 Darwin/1", url]) == "200")
        #expect(try DeviceLabTests.curlStatus(daemon, ["-A", "Other/1 CFNetwork/1 Darwin/1", url]) == "403")
        try daemon.waitForRecords(2)
        let page = "http://127.0.0.1:\(try daemon.adminPort())/"

        // Blocks made while the page is open (one every half second for 8 s: the browser's start
        // takes a while, longer when the whole suite runs beside it); those after the stream opened
        // arrive through /events, marked fresh, and the stream stays open 15 s so the last ones do too.
        var live = 0
        let all = try Self.dumpDOM(page, stream: 15) {
            for _ in 0..<16 {
                usleep(500_000)
                let status = try DeviceLabTests.curlStatus(daemon, ["-A", "Other/1 CFNetwork/1 Darwin/1",
                                                                    "http://legacy.example.com:\(origin.httpPort)/live"])
                #expect(status == "403")
                live += 1
            }
        }
        let rows = Self.rows(all)
        #expect(rows.count == 2 + live, "every decision is on the page: \(rows)")
        #expect(rows.last?.app == DeviceLabTests.lab, "newest first: \(rows)")
        #expect(rows.contains { $0.fresh && $0.app == DeviceLabTests.other }, "live decisions arrive through /events: \(rows)")
        #expect(all.contains("cleartext HTTP to legacy.example.com is not allowed"), "the latest blocks with their messages")
        let blocked = 1 + live
        #expect(all.contains("<td class=\"mono\">com.example.other</td><td class=\"num\">0</td><td class=\"num\">\(blocked)</td>"),
                "counts by app: \(all.firstMatch(of: /<table id="byApp">.*?<\/table>/)?.0 ?? "")")
        #expect(all.contains("<td class=\"mono\">cleartext-http</td><td class=\"num\">\(blocked)</td>"), "counts by reason")
        for external in ["<script src", "<link", "<img", "@import", "url("] {
            #expect(!all.contains(external), "no external assets: \(external)")
        }

        let filtered = try Self.dumpDOM(page + "?app=\(DeviceLabTests.lab)", stream: 1) {}
        #expect(Self.rows(filtered).map(\.app) == [DeviceLabTests.lab], "filtered by app")
        #expect(filtered.contains("no blocks"))
        #expect(filtered.contains("<option value=\"com.example.other\">"), "the other app is still offered")
        _ = try daemon.stop(expected: 2 + live)
    }

    @Test func theEventStreamSendsOneRecordPerEvent() throws {
        let origin = try Origin()
        let daemon = try Daemon(["--admin", "127.0.0.1:0"])
        _ = try Subprocess.curl(["-x", daemon.proxy, "-A", "Probe/1", "http://127.0.0.1:\(origin.httpPort)/small"])
        try daemon.waitForRecords(1)
        let run = try Subprocess.run("/usr/bin/curl", ["--silent", "--max-time", "1", "http://127.0.0.1:\(try daemon.adminPort())/events"])
        #expect(run.stdout.contains("event: counts\ndata: {\"through\":1,"), "\(run.stdout)")
        let record = try #require(run.stdout.firstMatch(of: /id: 1\ndata: (\{.*\})\n\n/)?.1)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(record.utf8)) as? [String: Any])
        #expect(json["user_agent"] as? String == "Probe/1")
        #expect(json["app"] as? String == "embedded")
        _ = try daemon.stop(expected: 1)
    }
}
