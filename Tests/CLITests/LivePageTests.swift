import Foundation
import Glibc
import Synchronization
import Testing
import TestSupport

/// The admin listener's live page in a real browser (Debian's chromium, headless): the recent
/// decisions are on the page as soon as it loads, decisions made while it is open arrive through
/// /events, repeated decisions are one row with their count and times, report mode's blocks are
/// "would block" and apart from the blocks, a burst leaves the page's totals equal to the daemon's,
/// and the filter by app hides the others.
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
        // A profile of its own: suites run side by side, and a profile in use stops a second browser.
        let profile = try TemporaryDirectory()
        let process = try BackgroundProcess(browser, ["--headless", "--no-sandbox", "--disable-gpu",
                                                      "--user-data-dir=\(profile.url.path)",
                                                      "--virtual-time-budget=1500", "--dump-dom", url + separator + "stream=\(stream)"])
        try work()
        try process.wait(timeout: 60) { out, _ in out.contains("</html>") }
        process.stop()
        return process.stdout
    }

    /// One row of the decisions table: its attributes (`data-app`, `data-kind`, `data-count`,
    /// `class`) and its cells' text and title, in the table's order: last, times, app, destination,
    /// action, reason, user, device, first.
    struct Group {
        var attributes: [String: String]
        var cells: [(text: String, title: String?)]
        var app: String { attributes["data-app"] ?? "" }
        var kind: String { attributes["data-kind"] ?? "" }
        var count: Int? { attributes["data-count"].flatMap { Int($0) } }
        var fresh: Bool { (attributes["class"] ?? "").split(separator: " ").contains("fresh") }
    }

    static func attributes(_ text: Substring) -> [String: String] {
        Dictionary(text.matches(of: /([\w-]+)="([^"]*)"/).map { (String($0.1), String($0.2)) }) { first, _ in first }
    }

    static func groups(_ dom: String) -> [Group] {
        guard let table = dom.firstMatch(of: /<table id="decisions">(.*?)<\/table>/.dotMatchesNewlines())?.1 else { return [] }
        return table.matches(of: /<tr([^>]*)>(.*?)<\/tr>/).compactMap { row in
            let attributes = Self.attributes(row.1)
            guard attributes["class"]?.hasPrefix("group") == true else { return nil }
            let cells = row.2.matches(of: /<td([^>]*)>(.*?)<\/td>/).map { cell in
                (String(cell.2.replacing(/<[^>]*>/, with: "")), Self.attributes(cell.1)["title"])
            }
            return Group(attributes: attributes, cells: cells)
        }
    }

    /// The number on each totals tile, by its class (`allow`, `block`, `would-block` ...).
    static func totals(_ dom: String) -> [String: Int] {
        Dictionary(dom.matches(of: /<div class="([\w-]+)"><b>([\d,]+)<\/b>/).map {
            (String($0.1), Int($0.2.replacing(",", with: "")) ?? -1)
        }) { first, _ in first }
    }

    /// A record's `time` as the page shows it in a title (`2026-01-02 03:04:05.678`).
    static func shown(_ time: Any?) -> String {
        (time as? String ?? "").replacing("T", with: " ").replacing("Z", with: "")
    }

    @Test func repeatedDecisionsAreOneRowWithTheirCountAndTimesAndTheFilterByAppWorks() throws {
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

        // The same block again while the page is open (one every half second for 8 s: the browser's
        // start takes a while, longer when the whole suite runs beside it); those after the stream
        // opened arrive through /events, and the stream stays open 15 s so the last ones do too.
        var live = 0
        let all = try Self.dumpDOM(page, stream: 15) {
            for _ in 0..<16 {
                usleep(500_000)
                let status = try DeviceLabTests.curlStatus(daemon, ["-A", "Other/1 CFNetwork/1 Darwin/1", url])
                #expect(status == "403")
                live += 1
            }
        }
        let filtered = try Self.dumpDOM(page + "?app=\(DeviceLabTests.lab)", stream: 1) {}
        let records = try daemon.stop(expected: 2 + live).records
        let blocks = records.filter { $0["app"] as? String == DeviceLabTests.other }
        let blocked = 1 + live
        #expect(blocks.count == blocked)

        let groups = Self.groups(all)
        #expect(groups.map(\.app) == [DeviceLabTests.other, DeviceLabTests.lab], "one row per group, the newest first: \(groups)")
        let block = try #require(groups.first)
        #expect(block.kind == "block" && block.count == blocked, "\(block)")
        #expect(block.cells[1].text == "×\(blocked)")
        #expect(block.cells[3].text == "http://legacy.example.com:\(origin.httpPort)")
        #expect(block.cells[4].text == "proxy", "the path column")
        #expect(block.cells[6].text == "cleartext-http")
        #expect(block.cells[0].title == Self.shown(blocks.last?["time"]), "the last time: \(block)")
        #expect(block.cells[0].text == String(Self.shown(blocks.last?["time"]).dropFirst(11).prefix(8)))
        #expect(block.cells[9].title == Self.shown(blocks.first?["time"]), "the first time: \(block)")
        #expect(block.fresh, "live decisions arrive through /events")
        #expect(groups.last?.count == 1 && groups.last?.kind == "allow" && groups.last?.fresh == false)

        #expect(all.contains("cleartext HTTP to legacy.example.com is not allowed"), "the latest blocks with their messages")
        #expect(all.contains("<span class=\"times\">×\(blocked) </span>"), "the latest blocks are grouped too")
        #expect(all.contains("<td class=\"mono\">com.example.other</td><td class=\"num\">0</td><td class=\"num\">\(blocked)</td>"),
                "counts by app: \(all.firstMatch(of: /<table id="byApp">.*?<\/table>/)?.0 ?? "")")
        #expect(all.contains("<td class=\"mono\">cleartext-http</td><td class=\"num\">\(blocked)</td>"), "counts by reason")
        #expect(Self.totals(all) == ["allow": 1, "block": blocked, "upgrade": 0, "error": 0], "no would-block tile in enforce mode")
        for external in ["<script src", "<link", "<img", "@import", "url("] {
            #expect(!all.contains(external), "no external assets: \(external)")
        }

        #expect(Self.groups(filtered).map(\.app) == [DeviceLabTests.lab], "filtered by app")
        #expect(Self.totals(filtered) == ["allow": 1, "block": 0, "upgrade": 0, "error": 0], "the totals follow the filter")
        #expect(filtered.contains("no blocks"))
        #expect(filtered.contains("<option value=\"com.example.other\">"), "the other app is still offered")
    }

    /// `--device`: the device filter beside the app's keeps the rows and the totals of one device,
    /// and the page counts by device.
    @Test func theFilterByDeviceShowsOneDevicesDecisionsAndTotals() throws {
        let origin = try Origin()
        let daemon = try Daemon(DeviceLabTests.pins + ["--admin", "127.0.0.1:0", "--device", "iphone-15=127.0.0.2",
                                                       "--device", "ipad=127.0.0.3"])
        let url = "http://legacy.example.com:\(origin.httpPort)/small"
        for (source, times) in [("127.0.0.2", 3), ("127.0.0.3", 2), ("127.0.0.1", 1)] {
            for _ in 0..<times { #expect(try DeviceLabTests.curlStatus(daemon, ["--interface", source, url]) == "403") }
        }
        try daemon.waitForRecords(6)
        let page = "http://127.0.0.1:\(try daemon.adminPort())/"
        let all = try Self.dumpDOM(page, stream: 1) {}
        let iphone = try Self.dumpDOM(page + "?device=iphone-15", stream: 1) {}
        #expect(try daemon.stop(expected: 6).records.filter { $0["device"] as? String == "iphone-15" }.count == 3)

        let groups = Self.groups(all)
        #expect(Set(groups.map { $0.attributes["data-device"] ?? "?" }) == ["iphone-15", "ipad", ""], "one row per device: \(groups)")
        #expect(groups.first { $0.attributes["data-device"] == "ipad" }?.cells[8].text == "ipad", "the device column")
        #expect(Self.totals(all)["block"] == 6)
        #expect(all.contains(#"<tr class="device-row" data-device="ipad"><td class="mono">ipad</td><td class="num">0</td><td class="num">2</td>"#),
                "counts by device: \(all.firstMatch(of: /<table id="byDevice">.*?<\/table>/)?.0 ?? "")")
        #expect(all.contains(#"<td class="mono">(none)</td><td class="num">0</td><td class="num">1</td>"#), "the record without a device")

        let filtered = Self.groups(iphone)
        #expect(filtered.map { $0.attributes["data-device"] } == ["iphone-15"], "\(filtered)")
        #expect(filtered.first?.count == 3)
        #expect(Self.totals(iphone) == ["allow": 0, "block": 3, "upgrade": 0, "error": 0], "the totals follow the filter")
        #expect(iphone.contains(#"<option value="ipad">ipad</option>"#), "the other device is still offered")
    }

    @Test func reportModeShowsWouldBlockApartFromWhatWasBlocked() throws {
        let origin = try Origin()
        let directory = try TemporaryDirectory()
        let lab = try DeviceLabTests.ipa("lab", in: directory)
        let other = try DeviceLabTests.ipa("other", in: directory)
        let daemon = try Daemon(DeviceLabTests.pins + ["--policy", lab, "--policy", other, "--unrouted", "block",
                                                       "--mode", "report", "--admin", "127.0.0.1:0"])
        let url = "http://legacy.example.com:\(origin.httpPort)/small"
        // Full ATS refuses cleartext, but report mode lets it through; a request no policy is
        // routed to is refused in report mode too (the proxy's own rule, not ATS).
        #expect(try DeviceLabTests.curlStatus(daemon, ["-A", "Other/1 CFNetwork/1 Darwin/1", url]) == "200")
        #expect(try DeviceLabTests.curlStatus(daemon, ["-A", "Stranger/1 CFNetwork/1 Darwin/1", url]) == "403")
        try daemon.waitForRecords(2)
        var live = 0
        let dom = try Self.dumpDOM("http://127.0.0.1:\(try daemon.adminPort())/", stream: 12) {
            for _ in 0..<12 {
                usleep(500_000)
                let status = try DeviceLabTests.curlStatus(daemon, ["-A", "Other/1 CFNetwork/1 Darwin/1", url])
                #expect(status == "200")
                live += 1
            }
            let status = try DeviceLabTests.curlStatus(daemon, ["-A", "Lab/1 CFNetwork/1 Darwin/1", url])
            #expect(status == "200")
        }
        let records = try daemon.stop(expected: 3 + live).records
        let would = 1 + live
        #expect(records.filter { $0["action"] as? String == "block" && $0["enforced"] as? Bool == false }.count == would)

        #expect(Self.totals(dom) == ["allow": 1, "block": 1, "would-block": would, "upgrade": 0, "error": 0], "\(Self.totals(dom))")
        #expect(dom.contains("<span id=\"mode\" class=\"mode\">report mode"), "the header says report mode")
        let groups = Self.groups(dom)
        let wouldRow = try #require(groups.first { $0.app == DeviceLabTests.other }, "\(groups)")
        #expect(wouldRow.kind == "would-block" && wouldRow.count == would, "\(wouldRow)")
        #expect(wouldRow.cells[5].text == "would block")
        let refused = try #require(groups.first { $0.attributes["data-kind"] == "block" }, "\(groups)")
        // A no-policy record says where the request was going; its reason's title names the User-Agent no bundle matched.
        #expect(refused.cells[6].text == "no-policy" && refused.cells[3].text.hasPrefix("http://legacy.example.com:"), "\(refused)")
        #expect(refused.cells[6].title?.contains("User-Agent product 'Stranger'") == true, "\(refused)")
        // Each list holds its own: the enforced block in "Latest blocks", the rest under "Would block".
        let blocksList = try #require(dom.firstMatch(of: /<ul id="blocks">(.*?)<\/ul>/)?.1)
        let wouldList = try #require(dom.firstMatch(of: /<ul id="wouldBlocks">(.*?)<\/ul>/)?.1)
        #expect(blocksList.contains("no-policy") && !blocksList.contains("cleartext-http"), "\(blocksList)")
        #expect(wouldList.contains("cleartext-http") && wouldList.contains("×\(would) "), "\(wouldList)")
        #expect(dom.contains("<span class=\"tag would-block\">would block</span></td><td class=\"mono\">cleartext-http</td><td class=\"num\">\(would)</td>"),
                "by reason, apart from the blocks")
        #expect(dom.contains("<td class=\"mono\">com.example.other</td><td class=\"num\">0</td><td class=\"num\">0</td><td class=\"num\">\(would)</td>"),
                "by app: allow, block, would block: \(dom.firstMatch(of: /<table id="byApp">.*?<\/table>/)?.0 ?? "")")
    }

    /// `count` requests for a block sent as fast as the daemon takes them: pipelined on
    /// `connections` keep-alive connections at once; the number answered 403.
    static func burst(proxy: Int, port: Int, count: Int, connections: Int) -> Int {
        let request = "GET http://legacy.example.com:\(port)/burst HTTP/1.1\r\nHost: legacy.example.com:\(port)\r\n"
            + "User-Agent: Other/1 CFNetwork/1 Darwin/1\r\n"
        let answered = Mutex(0)
        DispatchQueue.concurrentPerform(iterations: connections) { index in
            let share = count / connections + (index < count % connections ? 1 : 0)
            guard share > 0, let client = try? RawClient(port: proxy) else { return }
            let requests = (0..<share).map { $0 == share - 1 ? request + "Connection: close\r\n\r\n" : request + "\r\n" }
            client.send(requests.joined())
            let refused = client.readAll().matches(of: /HTTP\/1\.1 403\b/).count
            answered.withLock { $0 += refused }
        }
        return answered.withLock { $0 }
    }

    @Test func aBurstEndsWithThePageTotalsEqualToTheDaemons() throws {
        let origin = try Origin()
        let directory = try TemporaryDirectory()
        let other = try DeviceLabTests.ipa("other", in: directory)
        let daemon = try Daemon(DeviceLabTests.pins + ["--policy", other, "--admin", "127.0.0.1:0"])
        let admin = try daemon.adminPort()
        #expect(try DeviceLabTests.curlStatus(daemon, ["-A", "Other/1 CFNetwork/1 Darwin/1",
                                                       "http://legacy.example.com:\(origin.httpPort)/small"]) == "403")
        try daemon.waitForRecords(1)
        // More than the feed keeps (LiveFeed.capacity, 2,048), in waves while the page is open.
        let waves = 6, perWave = 400
        var made = 1
        let dom = try Self.dumpDOM("http://127.0.0.1:\(admin)/", stream: 15) {
            sleep(2)
            for _ in 0..<waves {
                made += Self.burst(proxy: daemon.port, port: origin.httpPort, count: perWave, connections: 4)
                usleep(700_000)
            }
        }
        #expect(made == 1 + waves * perWave, "every request was refused")
        try daemon.waitForRecords(made)

        // A reader that asks for records the feed no longer keeps gets the totals and what it missed;
        // a reconnecting one names its last record in Last-Event-ID, which wins over ?after=.
        let behind = try Subprocess.run("/usr/bin/curl", ["--silent", "--max-time", "1", "http://127.0.0.1:\(admin)/events?after=1"])
        #expect(behind.stdout.contains("event: counts\nid: \(made)\ndata: {\"through\":\(made),\"mode\":\"enforce\","), "\(behind.stdout.prefix(300))")
        #expect(behind.stdout.contains("\"skipped\":\(made - 1)}"))
        #expect(behind.stdout.contains("{\"app\":\"com.example.other\",\"action\":\"block\",\"reason\":\"cleartext-http\",\"enforced\":true,\"count\":\(made)}"))
        let resumed = try Subprocess.run("/usr/bin/curl", ["--silent", "--max-time", "1", "-H", "Last-Event-ID: \(made)",
                                                           "http://127.0.0.1:\(admin)/events?after=1"])
        #expect(!resumed.stdout.contains("event: counts") && !resumed.stdout.contains("id: "), "\(resumed.stdout.prefix(300))")

        let records = try daemon.stop(expected: made).records
        #expect(Self.totals(dom)["block"] == records.count, "the page's totals are the daemon's: \(Self.totals(dom))")
        // One group; its count is what reached the page (a gap's records are in the totals only).
        let groups = Self.groups(dom)
        #expect(groups.count == 1 && (groups.first?.count ?? 0) <= records.count, "\(groups.map(\.attributes))")
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
