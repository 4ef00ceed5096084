import POSIX
import Testing
import TestSupport
import TLSWire
@testable import DecisionLog

/// The record's named changes: each message policy, a failure's outcome, and the facts of the way
/// to the origin, as the connection applies them.
@Suite struct DecisionRecordChangesTests {
    private static let client = SocketAddress(ip: .v4(0x7F00_0001), port: 40000)

    private func record(message: String? = nil) -> DecisionRecord {
        var record = DecisionRecord.begin(client: Self.client, method: "CONNECT", time: 5)
        record.message = message
        return record
    }

    @Test func aBegunRecordHasItsRequestAndNothingElse() {
        let begun = DecisionRecord.begin(client: Self.client, method: "GET", time: 1_795_000_000)
        #expect(begun.time == 1_795_000_000)
        #expect(begun.client == Self.client)
        #expect(begun.method == "GET")
        #expect(begun.action == nil && begun.reason == nil && begun.message == nil && begun.decision == nil)
    }

    @Test(arguments: [
        (nil, "first", "first", "first", "first"),
        ("earlier", "later", "earlier", "earlier; later", "later; earlier"),
    ] as [(String?, String, String, String, String)])
    func theThreeMessagePoliciesKeepAddToOrLeadWithTheNote(before: String?, text: String, note: String,
                                                           append: String, prepend: String) {
        var noted = record(message: before)
        noted.note(text)
        #expect(noted.message == note)
        var appended = record(message: before)
        appended.appendNote(text)
        #expect(appended.message == append)
        var prepended = record(message: before)
        prepended.prependNote(text)
        #expect(prepended.message == prepend)
    }

    @Test func aFailureSetsTheErrorOutcomeAndReplacesTheMessageWhenItHasOne() {
        var failed = record(message: "before")
        failed.recordFailure(.serverAlert, message: "the origin refused")
        #expect(failed.action == .error)
        #expect(failed.reason == .serverAlert)
        #expect(failed.message == "the origin refused")
        var silent = record(message: "before")
        silent.recordFailure(.clientRefusedCertificate, message: nil)
        #expect(silent.loggedReason == "client-refused-certificate")
        #expect(silent.message == "before")
    }

    @Test func aFailureKeepingTheOutcomeOnlyFillsWhatIsMissing() {
        var decided = record()
        decided.action = .block
        decided.reason = .destinationNotAllowed
        decided.recordFailure(.shutdown, message: "stopped", keepingOutcome: true)
        #expect(decided.action == .block)
        #expect(decided.reason == .destinationNotAllowed)
        #expect(decided.message == "stopped")
        var upgraded = record()
        upgraded.action = .upgrade
        upgraded.recordFailure(.shutdown, message: "stopped", keepingOutcome: true)
        #expect(upgraded.action == .upgrade)
        #expect(upgraded.reason == .shutdown)
        var undecided = record()
        undecided.recordFailure(.shutdown, message: "stopped", keepingOutcome: true)
        #expect(undecided.action == .error)
        #expect(undecided.reason == .shutdown)
    }

    @Test func theUpstreamsAddressAndConnectTimeAreNoted() {
        var connected = record()
        let origin = SocketAddress(ip: .v4(0xC612_0001), port: 443)
        connected.noteUpstream(address: origin, connectedAfter: 0.25)
        #expect(connected.upstreamIP == origin.ip)
        #expect(connected.connectedAfter == 0.25)
    }

    /// Answers in any order: one that needed a lookup makes the record's `dns_cached` false and its
    /// wait the longest; only answers without one make it true; a stale answer is remembered.
    @Test(arguments: [
        ([], nil, nil, false),
        ([(nil, false)], nil, true, false),
        ([(nil, false), (12.5, false)], 12.5, false, false),
        ([(30.0, false), (nil, true)], 30.0, false, true),
        ([(8.0, false), (20.0, false)], 20.0, false, false),
    ] as [([(Double?, Bool)], Double?, Bool?, Bool)])
    func dnsFactsSayTheLongestWaitAndWhetherEveryAnswerWasCached(answers: [(Double?, Bool)], waited: Double?,
                                                                 cached: Bool?, stale: Bool) {
        var facts = DNSFacts()
        for (wait, isStale) in answers { facts.add(waited: wait, stale: isStale) }
        var noted = record()
        noted.noteDNS(facts)
        #expect(noted.dnsMilliseconds == waited)
        #expect(noted.dnsCached == cached)
        #expect(noted.dnsStale == stale)
    }

    /// A retry's lookups add to the first attempt's: the longer wait stays, and one lookup anywhere
    /// means the request was not served from the cache.
    @Test func aSecondAttemptsDNSFactsAddToTheFirsts() {
        var noted = record()
        noted.noteDNS(DNSFacts(waitedMilliseconds: 40, cached: false))
        noted.noteDNS(DNSFacts(cached: true))
        #expect(noted.dnsMilliseconds == 40)
        #expect(noted.dnsCached == false)
        noted.noteDNS(DNSFacts(waitedMilliseconds: 10, cached: false, stale: true))
        #expect(noted.dnsMilliseconds == 40)
        #expect(noted.dnsStale)
        var cachedFirst = record()
        cachedFirst.noteDNS(DNSFacts(cached: true))
        cachedFirst.noteDNS(DNSFacts(waitedMilliseconds: 5, cached: false))
        #expect(cachedFirst.dnsCached == false)
    }

    @Test func aWatchedHandshakeNotesTheSNIKeyExchangeVersionAndCipher() throws {
        let captured = CapturedHandshakes.tls13
        var client = TLSHandshakeReader()
        var server = TLSHandshakeReader()
        let hello = try ClientHello(#require(client.feed(captured.clientToServer).first { $0.type == .clientHello }))
        let answer = try ServerHello(#require(server.feed(captured.serverToClient).first { $0.type == .serverHello }))
        var noted = record()
        noted.noteHandshake(clientHello: hello, serverHello: nil, group: nil)
        #expect(noted.sni == "api.example.com")
        #expect(noted.keyExchange == KeyExchangeFacts(group: nil, postQuantumOffered: hello.offersPostQuantum))
        #expect(noted.tlsVersion == nil)
        noted.noteHandshake(clientHello: hello, serverHello: answer, group: NamedGroup(rawValue: 0x001D))
        #expect(noted.tlsVersion == "TLSv1.3")
        #expect(noted.cipher == CipherSuite.name(for: answer.cipherSuite))
        #expect(noted.keyExchange?.group == NamedGroup(rawValue: 0x001D))
    }
}
