import Testing
@testable import ProxyCore

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
        #expect(head.field("host") == "a.example")
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
}
