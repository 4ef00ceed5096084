import Testing
@testable import HTTP1

/// Origins' response heads, read as bytes.
@Suite struct ResponseHeadTests {
    private func parse(_ text: String) throws(ResponseHead.Malformed) -> ResponseHead? {
        try Array(text.utf8).withUnsafeBytes { bytes in
            Result { () throws(ResponseHead.Malformed) in try ResponseHead.parse(bytes) }
        }.get()
    }

    private func text(_ head: ResponseHead, _ range: Range<Int>) -> String {
        String(decoding: head.bytes[range], as: UTF8.self)
    }

    @Test func fieldsStatusAndReasonAreReadAndTheBodyIsLeft() throws {
        let text = "HTTP/1.1 404 Not Found here\r\nContent-Length:  12 \r\nX-Empty:\r\nConnection: keep-alive, Upgrade\r\n\r\n"
        let head = try #require(try parse(text + "body follows"))
        #expect(head.minorVersion == 1)
        #expect(head.status == 404)
        #expect(self.text(head, head.reason) == "Not Found here")
        #expect(head.fields.map { self.text(head, $0.name) } == ["Content-Length", "X-Empty", "Connection"])
        #expect(head.fields.map { self.text(head, $0.value) } == ["12", "", "keep-alive, Upgrade"],
                "optional whitespace is trimmed")
        #expect(head.fields.map(\.kind) == [.contentLength, .other, .connection])
        #expect(head.length == text.utf8.count)
        #expect(head.bytes.count == text.utf8.count, "the body is not copied with the head")
        #expect(head.contentLength == 12)
        #expect(!head.isChunked)
        #expect(head.originKeepsConnection)
    }

    @Test func aStatusLineWithoutReasonAndHTTP10() throws {
        let head = try #require(try parse("HTTP/1.0 204\r\n\r\n"))
        #expect(head.minorVersion == 0)
        #expect(head.status == 204)
        #expect(head.reason.isEmpty)
        #expect(!head.originKeepsConnection)
    }

    @Test func theLastTransferCodingDecidesChunking() throws {
        #expect(try parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: Chunked\r\n\r\n")?.isChunked == true)
        #expect(try parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n")?.isChunked == false)
        #expect(try parse("HTTP/1.1 200 OK\r\nConnection: Close\r\n\r\n")?.originKeepsConnection == false)
    }

    @Test func anIncompleteHeadWaitsForMore() throws {
        #expect(try parse("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n") == nil)
    }

    @Test(arguments: ["HTTP/2 200 OK\r\n\r\n", "HTTP/1.1 20 OK\r\n\r\n", "HTTP/1.1 2x0 OK\r\n\r\n",
                      "HTTP/1.1 200OK\r\n\r\n", "HTTP/1.1 200 OK\r\nNo colon here\r\n\r\n",
                      "HTTP/1.1 200 OK\r\n: empty name\r\n\r\n", "HTTP/1.1 200 OK\r\nA: b\r\n folded\r\n\r\n"])
    func malformedHeadsAreRefused(text: String) {
        #expect(throws: ResponseHead.Malformed.self) { try parse(text) }
    }

    @Test func theRewrittenHeadDropsHopByHopFieldsAndAddsVia() throws {
        let head = try #require(try parse("HTTP/1.1 200 OK\r\nKeep-Alive: timeout=5\r\nConnection: Keep-Alive\r\nX-A: 1\r\n\r\n"))
        let text = String(decoding: head.rewritten(keepAlive: false, clientMinorVersion: 1), as: UTF8.self)
        #expect(text == "HTTP/1.1 200 OK\r\nX-A: 1\r\nVia: 1.1 atsgate\r\nConnection: close\r\n\r\n")
    }

    @Test func theRewrittenHeadDropsFieldsConnectionNamesButKeepsProxyFields() throws {
        let head = try #require(try parse(
            "HTTP/1.0 401 \r\nConnection: x-hop\r\nX-Hop: 1\r\nProxy-Authenticate: Basic\r\nProxy-Status: a\r\nTE: x\r\n\r\n"))
        let text = String(decoding: head.rewritten(keepAlive: true, clientMinorVersion: 0), as: UTF8.self)
        #expect(text == "HTTP/1.1 401 \r\nProxy-Status: a\r\nVia: 1.0 atsgate\r\nConnection: keep-alive\r\n\r\n")
    }

    /// A head near the 64 KiB limit whose Connection names thousands of fields (what an origin can
    /// send to make a proxy match every field against every token): exactly the unnamed fields stay.
    @Test func aConnectionFieldNamingThousandsOfFieldsDropsExactlyThose() throws {
        let count = 1500
        let named = (0..<count).map { "X-\($0)" }
        var text = "HTTP/1.1 200 OK\r\nConnection: " + named.map { $0.lowercased() }.joined(separator: " ,") + "\r\n"
        for index in 0..<count { text += "X-\(index): 1\r\nY-\(index): 2\r\n" }
        text += "\r\n"
        #expect(text.utf8.count < 64 * 1024)
        let head = try #require(try parse(text))
        let rewritten = String(decoding: head.rewritten(keepAlive: true, clientMinorVersion: 1), as: UTF8.self)
        let kept = (0..<count).map { "Y-\($0): 2\r\n" }.joined()
        #expect(rewritten == "HTTP/1.1 200 OK\r\n" + kept + "Via: 1.1 atsgate\r\n\r\n")
    }
}
