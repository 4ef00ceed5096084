import Testing
@testable import HTTP1

/// Request heads as a proxy must read them: strictly, because loose reading is how requests get smuggled.
@Suite struct RequestHeadParserTests {
    private func parse(_ text: String) throws(RequestHeadError) -> RequestHead? {
        try Array(text.utf8).withUnsafeBytes { bytes in
            Result { () throws(RequestHeadError) in try RequestHeadParser.parse(bytes) }
        }.get()
    }

    private func status(_ text: String) -> Int? {
        do { _ = try parse(text); return nil } catch { return error.status }
    }

    @Test func connectWithoutHostIsFine() throws {
        let text = "CONNECT example.com:443 HTTP/1.1\r\n\r\n"
        let head = try #require(try parse(text + "\u{16}\u{03}"))
        #expect(head.method == "CONNECT")
        #expect(head.target == "example.com:443")
        #expect(head.fields.isEmpty)
        // The head ends at the blank line; the TLS bytes after it stay for the tunnel.
        #expect(head.length == text.utf8.count)
    }

    @Test func absoluteFormWithBodyFraming() throws {
        let head = try #require(try parse(
            "POST http://a.example/x HTTP/1.1\r\nHost: a.example\r\nContent-Length: 5\r\nProxy-Connection: keep-alive\r\n\r\nhello"))
        #expect(head.contentLength == 5)
        #expect(!head.chunked)
        #expect(head.keepAlive)
        #expect(head.field(.host) == "a.example")
        #expect(head.field(.userAgent) == nil)
    }

    @Test func incompleteHeadWaits() throws {
        #expect(try parse("GET http://a.example/ HTTP/1.1\r\nHost: a") == nil)
    }

    @Test(arguments: [
        ("GET http://a/ HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
        ("GET http://a/ HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n", 400),
        ("GET http://a/ HTTP/1.1\r\nContent-Length: 3, 4\r\n\r\n", 400),
        ("GET http://a/ HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400),
        ("GET http://a/ HTTP/1.1\r\nX-A: 1\r\n folded\r\n\r\n", 400),
        ("GET http://a/ HTTP/1.1\r\nX-A: 1\nX-B: 2\r\n\r\n", 400),
        ("GET http://a/ HTTP/1.1\r\nX-A: 1\rX-B: 2\r\n\r\n", 400),
        ("GET http://a/ HTTP/1.1\r\nHost : a\r\n\r\n", 400),
        ("GET http://a/ HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", 400),
        ("GET http://a/ HTTP/1.1\r\nTransfer-Encoding: chunked, chunked\r\n\r\n", 400),
        ("GET  http://a/ HTTP/1.1\r\n\r\n", 400),
        ("GET http://a/ HTTP/2.0\r\n\r\n", 505),
        ("G(T http://a/ HTTP/1.1\r\n\r\n", 400),
        ("GET http://a/ HTTP/1.1\r\nNoColon\r\n\r\n", 400),
        ("GET http://a/ HTTP/1.1\r\nContent-Length: 3,\r\n\r\n", 400),
        ("GET http://a/ HTTP/1.1\r\nContent-Length:\r\n\r\n", 400),
        ("GET http://a/ HTTP/1.1\r\ncontent-length: 3\r\ntransfer-encoding: CHUNKED\r\n\r\n", 400),
        // A coding of white space only is a coding that is not chunked, never "no coding".
        ("GET http://a/ HTTP/1.1\r\nTransfer-Encoding: , ,\r\n\r\n", 400),
        ("GET http://a/ HTTP/1.1\r\nTransfer-Encoding: chunked, ,\r\n\r\n", 400),
        ("POST http://a/ HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
        ("GET http://a/ HTTP/1.1\r\nX-A: a\u{7F}b\r\n\r\n", 400),
        ("GET http://a/ HTTP/1.1\r\nX-A: a\u{0}b\r\n\r\n", 400),
        ("GET http://a/ HTTP/1.1\r\n: empty\r\n\r\n", 400),
        ("GET http://a/ HTTP/1.1 \r\n\r\n", 400),
        ("GET http://a/ HTTP/1.2\r\n\r\n", 505),
        ("GET http://a/ http/1.1\r\n\r\n", 400),
        ("\r\n\r\n", 400),
    ])
    func ambiguousOrMalformedHeadsAreRefused(text: String, expected: Int) {
        #expect(status(text) == expected)
    }

    @Test func sameContentLengthTwiceIsAccepted() throws {
        let head = try #require(try parse("PUT http://a/ HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n"))
        #expect(head.contentLength == 3)
    }

    @Test func oversizedHeadsAndTooManyFieldsAre431() {
        let big = "GET http://a/ HTTP/1.1\r\nX-Big: " + String(repeating: "a", count: 17_000) + "\r\n\r\n"
        #expect(status(big) == 431)
        let unterminated = "GET http://a/ HTTP/1.1\r\nX-Big: " + String(repeating: "a", count: 17_000)
        #expect(status(unterminated) == 431)
        let many = "GET http://a/ HTTP/1.1\r\n" + (0..<101).map { "X-\($0): v\r\n" }.joined() + "\r\n"
        #expect(status(many) == 431)
    }

    @Test func keepAliveFollowsVersionAndConnection() throws {
        #expect(try parse("GET http://a/ HTTP/1.0\r\n\r\n")?.keepAlive == false)
        #expect(try parse("GET http://a/ HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")?.keepAlive == true)
        #expect(try parse("GET http://a/ HTTP/1.1\r\nConnection: close\r\n\r\n")?.keepAlive == false)
    }

    @Test func chunkedFramingAcceptsItsSpellings() throws {
        let head = try #require(try parse(
            "POST http://a/ HTTP/1.1\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: Chunked,\r\n\r\n"))
        #expect(head.chunked)
        #expect(head.contentLength == nil)
        #expect(try parse("PUT http://a/ HTTP/1.1\r\nContent-Length: 012, 012\r\n\r\n")?.contentLength == 12)
    }

    @Test func onlyConnectionDecidesKeepAlive() throws {
        #expect(try parse("GET http://a/ HTTP/1.0\r\nProxy-Connection: keep-alive\r\n\r\n")?.keepAlive == false)
        #expect(try parse("GET http://a/ HTTP/1.0\r\nConnection: TE, Keep-Alive\r\n\r\n")?.keepAlive == true)
        #expect(try parse("GET http://a/ HTTP/1.1\r\nConnection: x\r\nconnection: CLOSE \r\n\r\n")?.keepAlive == false)
    }

    @Test func fieldNamesTheProxyActsOnAreRecognisedInAnyCase() throws {
        let head = try #require(try parse("GET http://a/ HTTP/1.1\r\nHOST: a\r\nproxy-AUTHORIZATION: x\r\nProxy-Foo: 1"
            + "\r\nProxyish: 1\r\nTe: trailers\r\nUser-Agent: AppleCoreMedia/1\r\nX-Via: 1\r\n\r\n"))
        #expect(head.fields.map(\.kind) == [.host, .proxyAuthorization, .proxyOther, .other, .te, .userAgent, .other])
        #expect(head.field(.userAgent) == "AppleCoreMedia/1")
    }

    @Test(arguments: [
        ("GET http://a/ HTTP/1.1\r\n\r\n", true), ("GET HTTPS://a/ HTTP/1.1\r\n\r\n", true),
        ("GET /index.html HTTP/1.1\r\n\r\n", false), ("GET ws://a/ HTTP/1.1\r\n\r\n", false),
        ("CONNECT http:443 HTTP/1.1\r\n\r\n", false), ("GET http:/a HTTP/1.1\r\n\r\n", false),
    ])
    func absoluteFormIsHTTPOrHTTPSInAnyCase(text: String, absolute: Bool) throws {
        #expect(try parse(text)?.isAbsoluteForm == absolute)
    }

    @Test func aViaNamingThisProxyIsALoop() throws {
        let looped = try parse("GET http://a/ HTTP/1.1\r\nVia: 1.1 squid\r\nVia: 1.0 a, 1.1 ATSGATE\r\n\r\n")
        #expect(looped?.cameThroughThisProxy == true)
        let elsewhere = try parse("GET http://a/ HTTP/1.1\r\nVia: 1.1 atsgate-x, 1.1 b (atsgate)\r\n\r\n")
        #expect(elsewhere?.cameThroughThisProxy == false)
        #expect(try parse("GET http://a/ HTTP/1.1\r\nX-Via: 1.1 atsgate\r\n\r\n")?.cameThroughThisProxy == false)
    }

    private func upstream(_ text: String, authority: String = "a.example") throws -> String {
        let head = try #require(try parse(text))
        return String(decoding: head.upstreamHead(authority: authority), as: UTF8.self)
    }

    @Test func theUpstreamHeadDropsHopByHopConnectionNamedAndProxyFields() throws {
        let text = "POST http://a.example:8080/p/q?x=1 HTTP/1.1\r\nHost: a.example:8080\r\n"
            + "Connection: keep-alive, X-Secret,, Upgrade\r\nKeep-Alive: timeout=5\r\nX-Secret: s\r\nx-SECRET: t\r\n"
            + "Proxy-Authorization: Basic eA==\r\nProxy-Connection: keep-alive\r\nProxy-Foo: 1\r\nTE: trailers\r\n"
            + "Trailer: X-T\r\nUpgrade: h2c\r\nVia: 1.0 other\r\nAccept:  */* \t\r\nX-Secrets: kept\r\n"
            + "Content-Length: 4\r\n\r\nbody"
        #expect(try upstream(text, authority: "a.example:8080") == "POST /p/q?x=1 HTTP/1.1\r\nHost: a.example:8080\r\n"
            + "Via: 1.0 other\r\nAccept: */*\r\nX-Secrets: kept\r\nContent-Length: 4\r\nVia: 1.1 atsgate\r\n\r\n")
    }

    @Test func theUpstreamHeadHasAnOriginFormTargetAndTheTargetsAuthorityAsHost() throws {
        #expect(try upstream("GET http://[::1]:81?q HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", authority: "[::1]:81")
            == "GET /?q HTTP/1.1\r\nHost: [::1]:81\r\nVia: 1.0 atsgate\r\n\r\n")
        // RFC 9112 section 3.2.2: the client's Host is replaced by the target's authority, the one
        // the decision was made for; Connection naming Host changes nothing.
        #expect(try upstream("GET http://a.example HTTP/1.1\r\nhost: other.example\r\n\r\n")
            == "GET / HTTP/1.1\r\nHost: a.example\r\nVia: 1.1 atsgate\r\n\r\n")
        #expect(try upstream("GET http://a.example/ HTTP/1.1\r\nHost: evil\r\nConnection: host\r\n\r\n")
            == "GET / HTTP/1.1\r\nHost: a.example\r\nVia: 1.1 atsgate\r\n\r\n")
    }

    @Test func theRedirectKeepsThePathAndQuery() throws {
        #expect(try parse("GET http://a.example:80/x?y HTTP/1.1\r\n\r\n")?.originForm == "/x?y")
        #expect(try parse("GET http://a.example?y HTTP/1.1\r\n\r\n")?.originForm == "/?y")
    }

    @Test func anOriginFormTargetIsItsOwnOriginForm() throws {
        // What the transparent gate reads: a request sent to the origin itself, redirected to the proxy.
        #expect(try parse("GET /x?y HTTP/1.1\r\nHost: a.example\r\n\r\n")?.originForm == "/x?y")
        #expect(try upstream("GET /x/y?z=1 HTTP/1.1\r\nHost: a.example\r\n\r\n", authority: "a.example")
            == "GET /x/y?z=1 HTTP/1.1\r\nHost: a.example\r\nVia: 1.1 atsgate\r\n\r\n")
    }
}
