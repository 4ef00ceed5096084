import Testing
@testable import Admin
@testable import DecisionLog
@testable import ProxyCore

@Suite struct LiveFeedTests {
    static func record(app: String = "lab") -> DecisionRecord {
        var record = DecisionRecord(time: 0, client: SocketAddress(ip: .v4(0x7F00_0001), port: 1), method: "GET")
        record.app = app
        record.action = .block
        record.reason = .ats(.cleartextHTTP)
        return record
    }

    @Test func theLiveFeedKeepsTheNewestRecordsInOrder() throws {
        let feed = LiveFeed()
        for _ in 0..<(LiveFeed.capacity + 7) { feed.observe(Self.record(), policy: "p") }
        let snapshot = feed.snapshot(recent: LiveFeed.capacity + 100)
        #expect(snapshot.through == LiveFeed.capacity + 7)
        #expect(snapshot.entries.map(\.sequence) == Array(8...(LiveFeed.capacity + 7)))
        #expect(feed.snapshot(recent: 2).entries.map(\.sequence) == [LiveFeed.capacity + 6, LiveFeed.capacity + 7])
        guard case .records(let two) = feed.read(after: LiveFeed.capacity + 5) else { Issue.record("a gap"); return }
        #expect(two.map(\.sequence) == [LiveFeed.capacity + 6, LiveFeed.capacity + 7])
        guard case .records(let none) = feed.read(after: LiveFeed.capacity + 7) else { Issue.record("a gap"); return }
        #expect(none.isEmpty)
        // The oldest kept record is number 8: a reader that had 7 misses nothing.
        guard case .records(let all) = feed.read(after: 7) else { Issue.record("a gap"); return }
        #expect(all.count == LiveFeed.capacity)
    }

    /// A reader whose next record is gone gets the totals through the newest record instead, and
    /// the number it will never see; the totals count every record, kept or not.
    @Test func aReaderThatFellBehindTheRingGetsTheTotals() throws {
        let feed = LiveFeed()
        for index in 0..<(LiveFeed.capacity + 10) { feed.observe(Self.record(app: index % 2 == 0 ? "lab" : "other"), policy: "p") }
        guard case .gap(let snapshot, let skipped) = feed.read(after: 5) else { Issue.record("no gap"); return }
        #expect(snapshot.through == LiveFeed.capacity + 10)
        #expect(skipped == LiveFeed.capacity + 5)
        let lab = LoopMetrics.DecisionKey(app: "lab", action: "block", reason: "cleartext-http", enforced: true)
        let other = LoopMetrics.DecisionKey(app: "other", action: "block", reason: "cleartext-http", enforced: true)
        #expect(snapshot.totals.decisions == [lab: LiveFeed.capacity / 2 + 5, other: LiveFeed.capacity / 2 + 5])
    }

    /// A page that followed a daemon since restarted names a record this one has not numbered: it
    /// gets this daemon's totals, nothing skipped, and follows from its newest record.
    @Test func aReaderAheadOfTheFeedGetsItsTotals() throws {
        let feed = LiveFeed()
        for _ in 0..<3 { feed.observe(Self.record(), policy: "p") }
        guard case .gap(let snapshot, let skipped) = feed.read(after: 5000) else { Issue.record("no gap"); return }
        #expect(snapshot.through == 3 && skipped == 0)
        #expect(snapshot.totals.decisions.values.reduce(0, +) == 3)
    }
}
