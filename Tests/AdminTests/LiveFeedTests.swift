import Testing
@testable import Admin
@testable import ProxyCore

@Suite struct LiveFeedTests {
    @Test func theLiveFeedKeepsTheNewestRecordsInOrder() {
        let feed = LiveFeed()
        let record = LogRecord(time: 0, client: SocketAddress(ip: .v4(0x7F00_0001), port: 1), method: "GET")
        for _ in 0..<(LiveFeed.capacity + 7) { feed.observe(record, policy: "p") }
        #expect(feed.lastSequence == LiveFeed.capacity + 7)
        let all = feed.entries(after: 0).map(\.sequence)
        #expect(all == Array(8...(LiveFeed.capacity + 7)))
        #expect(feed.entries(after: LiveFeed.capacity + 5).map(\.sequence) == [LiveFeed.capacity + 6, LiveFeed.capacity + 7])
        #expect(feed.entries(after: LiveFeed.capacity + 7).isEmpty)
    }
}
