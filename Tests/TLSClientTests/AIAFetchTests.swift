import ATSPolicy
import Foundation
import Testing
import TestSupport
import TLSClient

/// A chain sent without its intermediate, completed from the leaf's caIssuers URL as the device
/// completes it (R15), against Tests/Fixtures/aia_server.py on loopback; and the fetch's limits.
@Suite struct AIAFetchTests {
    static func server() throws -> AIAServer { try AIAServer.shared.get() }

    static func verdict(_ leaf: String, aia: AIAFetcher?) throws -> CertificateVerdict {
        CertificateEvaluator.evaluate(chain: try server().leaf(leaf), host: "localhost", requirements: .full, pin: nil,
                                      store: try TestTrustStore.store(), aia: aia)
    }

    @Test("an incomplete chain is completed from the caIssuers URL", arguments: [
        ("aia-der", "int-a.cer"), ("aia-p7c", "int-a.p7c"), ("aia-redirect", "redirect/int-a.cer"),
    ])
    func completed(leaf: String, path: String) throws {
        let base = try Self.server().base
        let verdict = try Self.verdict(leaf, aia: AIAFetcher())
        #expect(verdict.findings == [], "\(verdict.findings.map(\.message))")
        #expect(verdict.trusted)
        #expect(verdict.facts.chain.count == 3)
        #expect(verdict.aiaFetched == "\(base)/\(path)")
        #expect(verdict.aiaFetches.map(\.outcome) == [.certificates(1)])
    }

    @Test func withoutFetchingTheChainIsUntrustedAndSaysWhereItsIssuerIs() throws {
        let verdict = try Self.verdict("aia-der", aia: nil)
        #expect(verdict.findings.map(\.reason) == [.certificateUntrusted])
        #expect(verdict.blockingFinding?.message.contains("unable to get local issuer certificate") == true)
        #expect(verdict.aiaFetched == nil)
        #expect(verdict.aiaFetches.isEmpty)
        #expect(verdict.missingIssuerURLs == ["\(try Self.server().base)/int-a.cer"])
        // A complete chain, or one refused for another reason, names none.
        #expect(try Self.verdict("aia-der", aia: AIAFetcher()).missingIssuerURLs.isEmpty)
        #expect(try ChainJudgementTests.verdict("leaf-smime").missingIssuerURLs.isEmpty)
    }

    @Test func aFailingURLIsPassedOverForTheNextOne() throws {
        let base = try Self.server().base
        let verdict = try Self.verdict("aia-two", aia: AIAFetcher())
        #expect(verdict.findings == [])
        #expect(verdict.aiaFetches.map(\.url) == ["\(base)/missing", "\(base)/int-a.cer"])
        #expect(verdict.aiaFetches.first?.outcome == .failed("answered HTTP/1.1 404 Not Found"))
        #expect(verdict.aiaFetched == "\(base)/int-a.cer")
    }

    @Test("a bad caIssuers answer leaves the chain untrusted, and the finding says why", arguments: [
        ("aia-slow", "/slow: timed out after 1 s"),
        ("aia-huge", "/huge: answered with 10485760 bytes, more than the 262144-byte limit"),
        ("aia-garbage", "/garbage: answered with 26 bytes that are neither a DER certificate nor a PKCS#7 certs-only bundle"),
        ("aia-loop", "/loop: redirected more than 3 times"),
        ("aia-missing", "/missing: answered HTTP/1.1 404 Not Found"),
    ])
    func badAnswer(leaf: String, words: String) throws {
        let started = ContinuousClock.now
        let verdict = try Self.verdict(leaf, aia: AIAFetcher(timeout: 1))
        #expect(verdict.findings.map(\.reason) == [.certificateUntrusted])
        let message = try #require(verdict.blockingFinding?.message)
        #expect(message.contains("fetching the missing issuer from its caIssuers URL failed (\(try Self.server().base)\(words)"),
                "\(message)")
        #expect(verdict.aiaFetched == nil)
        // Bounded: the slow server answers after 10 s, the fetch gives up at its timeout.
        #expect(started.duration(to: .now) < .seconds(8))
    }

    @Test func aLeafWithoutCaIssuersSaysSo() throws {
        let verdict = try Self.verdict("aia-none", aia: AIAFetcher())
        #expect(verdict.blockingFinding?.message.contains("names no caIssuers URL to fetch its issuer from") == true,
                "\(verdict.findings.map(\.message))")
        #expect(verdict.aiaFetches.isEmpty)
    }

    @Test func aStreamedBodyIsCutAtTheLimitAndAChunkedOneIsRead() throws {
        let base = try Self.server().base
        let fetcher = AIAFetcher(cache: AIACache())
        #expect(fetcher.fetch("\(base)/huge-stream").outcome == .failed("answered with more than the 262144-byte limit"))
        #expect(fetcher.fetch("\(base)/chunked/int-a.cer").outcome == .certificates(1))
        #expect(AIAFetcher(maximumBytes: 100).fetch("\(base)/chunked/int-a.cer?small").outcome
            == .failed("answered with more than the 100-byte limit"))
    }

    @Test func answersAreCachedByURLAndFailuresToo() throws {
        let server = try Self.server()
        let fetcher = AIAFetcher(cache: AIACache())
        let good = "\(server.base)/int-a.cer?cache-test"
        #expect(fetcher.fetch(good).fromCache == false)
        let again = fetcher.fetch(good)
        #expect(again.fromCache)
        #expect(again.outcome == .certificates(1))
        #expect(server.requests(containing: "?cache-test").count == 1)
        let bad = "\(server.base)/missing?cache-test-failure"
        #expect(fetcher.fetch(bad).fromCache == false)
        #expect(fetcher.fetch(bad).fromCache)
        #expect(server.requests(containing: "?cache-test-failure").count == 1)
        // A failure expires sooner than a success.
        #expect(fetcher.fetch(bad, now: .now + .seconds(61)).fromCache == false)
        #expect(fetcher.fetch(good, now: .now + .seconds(61)).fromCache)
        #expect(server.requests(containing: "?cache-test-failure", atLeast: 2).count == 2)
    }

    @Test func theCacheIsBounded() throws {
        let base = try Self.server().base
        let cache = AIACache(capacity: 2)
        let fetcher = AIAFetcher(cache: cache)
        for index in 1...3 { _ = fetcher.fetch("\(base)/int-a.cer?bounded-\(index)") }
        #expect(cache.count == 2)
        // The oldest went.
        #expect(fetcher.fetch("\(base)/int-a.cer?bounded-3").fromCache)
        #expect(fetcher.fetch("\(base)/int-a.cer?bounded-1").fromCache == false)
    }

    @Test func throughAParentTheFetchIsAnAbsoluteFormGET() throws {
        let server = try Self.server()
        // The parent is the test server itself; aia.invalid resolves nowhere, so only the parent can answer.
        let fetcher = AIAFetcher(cache: AIACache(), parent: AIAFetcher.Parent(host: "127.0.0.1", port: server.port,
                                                                                authorization: "Basic dGVzdDp0ZXN0"))
        #expect(fetcher.fetch("http://aia.invalid/int-a.cer?via-parent").outcome == .certificates(1))
        #expect(server.requests(containing: "via-parent")
            == ["GET http://aia.invalid/int-a.cer?via-parent Proxy-Authorization: Basic dGVzdDp0ZXN0"])
    }

    @Test("what cannot be fetched fails at once, with a reason", arguments: [
        ("https://example.com/ca.cer", "is not an http:// URL the device fetches"),
        ("ldap://example.com/cn=ca", "is not an http:// URL the device fetches"),
        ("http://user@example.com/ca.cer", "is not an http:// URL the device fetches"),
    ])
    func unfetchable(url: String, problem: String) {
        #expect(AIAFetcher(cache: AIACache()).fetch(url).outcome == .failed(problem))
    }

    @Test func aRefusedConnectionIsNamed() throws {
        let port = try closedPort()
        #expect(AIAFetcher(cache: AIACache()).fetch("http://127.0.0.1:\(port)/ca.cer").outcome
            == .failed("cannot connect to 127.0.0.1:\(port): Connection refused"))
    }
}
