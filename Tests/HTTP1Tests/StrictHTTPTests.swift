import Testing
@testable import HTTP1

/// The strict HTTP/1.1 layer as tables: what RFC 9112 and RFC 9110 say a proxy must refuse or repair,
/// and the classes of input that mature proxies' suites send (haproxy's http-messaging reg-tests,
/// Traffic Server's gold tests, varnish's vtc files): framing conflicts, field syntax, chunk lines,
/// trailers, request targets and Host, CONNECT content, and origins' responses.
@Suite struct StrictHTTPTests {
    private func request(_ text: String) throws(RequestHeadError) -> RequestHead? {
        try Array(text.utf8).withUnsafeBytes { bytes in
            Result { () throws(RequestHeadError) in try RequestHeadParser.parse(bytes) }
        }.get()
    }

    private func status(_ text: String) -> Int? {
        do { _ = try request(text); return nil } catch { return error.status }
    }

    // MARK: requests

    @Test(arguments: [
        // Framing (RFC 9112 section 6).
        ("POST http://a/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 0\r\n\r\n", 400),
        ("POST http://a/ HTTP/1.1\r\nTransfer-Encoding: xchunked\r\n\r\n", 400),
        ("POST http://a/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n\r\n", 400),
        ("POST http://a/ HTTP/1.1\r\nTransfer-Encoding: chunked;q=1\r\n\r\n", 400),
        ("POST http://a/ HTTP/1.1\r\nTransfer-Encoding: identity, chunked\r\n\r\n", 501),
        ("POST http://a/ HTTP/1.1\r\nTransfer-Encoding: x-custom, chunked\r\n\r\n", 501),
        ("POST http://a/ HTTP/1.1\r\nTransfer-Encoding : chunked\r\n\r\n", 400),
        ("POST http://a/ HTTP/1.1\r\nTransfer-Encoding:\u{0B}chunked\r\n\r\n", 400),
        ("POST http://a/ HTTP/1.1\r\nContent-Length: +5\r\n\r\n", 400),
        ("POST http://a/ HTTP/1.1\r\nTransfer-Encoding: \r\nContent-Length: 5\r\n\r\nhello", 400),
        ("POST http://a/ HTTP/1.1\r\nContent-Length: 0x5\r\n\r\n", 400),
        ("POST http://a/ HTTP/1.1\r\nContent-Length: 5 5\r\n\r\n", 400),
        ("POST http://a/ HTTP/1.1\r\nContent-Length: 1_0\r\n\r\n", 400),
        ("POST http://a/ HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n", 400),
        ("POST http://a/ HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", 400),
        ("POST http://a/ HTTP/1.1\r\nContent-Length: 5, 6\r\n\r\n", 400),
        // Field syntax (RFC 9112 section 5, RFC 9110 section 5.5).
        ("GET http://a/ HTTP/1.1\r\n\tX-A: 1\r\n\r\n", 400),
        ("GET http://a/ HTTP/1.1\r\nX\u{80}Y: 1\r\n\r\n", 400),
        ("GET http://a/ HTTP/1.1\r\nX(Y): 1\r\n\r\n", 400),
        ("GET http://a/ HTTP/1.1\r\nX-A: \u{01}\r\n\r\n", 400),
        ("GET http://a/ HTTP/1.1\r\nX-A: a\rb\r\n\r\n", 400),
        ("GET http://a/ HTTP/1.1\r\nX-A: a\u{1B}[31m\r\n\r\n", 400),
        ("GET\thttp://a/ HTTP/1.1\r\n\r\n", 400),
        // Line endings (RFC 9112 section 2.2): a bare LF or CR anywhere refuses the head at once,
        // whether or not a CRLFCRLF ever follows (an LF-ended head never has one).
        ("GET http://a/ HTTP/1.1\nHost: a\r\n\r\n", 400),
        ("GET http://a/ HTTP/1.1\r\nHost: a\r\n\n", 400),
        ("GET http://a/ HTTP/1.1\r\nHost: a\n\r\n", 400),
        ("GET http://a/ HTTP/1.1\nHost: a\n\n", 400),
        ("GET http://a/ HTTP/1.1\n\n", 400),
        ("GET http://a/ HTTP/1.1\r\n\n", 400),
        ("GET http://a/ HTTP/1.1\n", 400),
        ("GET http://a/ HTTP/1.1\r\nHost: a\n", 400),
        ("GET http://a/ HTTP/1.1\r\nHost: a\r\r\n\r\n", 400),
        ("GET http://a/ HTTP/1.1\r\nHost: a\r\r", 400),
        ("GET http://a/ HTTP/1.1\rHost: a\r\r", 400),
        ("\nGET http://a/ HTTP/1.1\r\n\r\n", 400),
        ("\r\n\nGET http://a/ HTTP/1.1\r\n\r\n", 400),
        // Request line, target and Host (RFC 9112 sections 2.2, 3).
        ("\r\n\r\nGET http://a/ HTTP/1.1\r\n\r\n", 400),
        ("GET http://a/ HTTP/1.10\r\n\r\n", 400),
        ("GET http://a/ HTTP/3.0\r\n\r\n", 505),
        ("GET http://a/ HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),
        ("GET http://a/ HTTP/1.1\r\nHost: a\r\nhost: a\r\n\r\n", 400),
        ("GET http://user:pw@a/ HTTP/1.1\r\n\r\n", 400),
        ("GET http://a@evil/ HTTP/1.1\r\n\r\n", 400),
        ("GET http://a/#fragment HTTP/1.1\r\n\r\n", 400),
        ("GET http:///x HTTP/1.1\r\n\r\n", 400),
        ("GET http://a/" + String(repeating: "p", count: 9000) + " HTTP/1.1\r\n\r\n", 414),
        // CONNECT (RFC 9110 section 9.3.6): authority form, no content.
        ("CONNECT a.example:443 HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello", 400),
        ("CONNECT a.example:443 HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
        ("CONNECT http://a.example/ HTTP/1.1\r\n\r\n", 400),
        ("CONNECT user@a.example:443 HTTP/1.1\r\n\r\n", 400),
    ])
    func hostileRequestHeadsAreRefused(text: String, expected: Int) {
        #expect(status(text) == expected)
    }

    /// Only a CR that is the last byte so far leaves a head undecided; a CRLF-ended head still
    /// waits for its blank line.
    @Test(arguments: ["GET http://a/ HTTP/1.1\r", "GET http://a/ HTTP/1.1\r\nHost: a\r\n\r",
                      "GET http://a/ HTTP/1.1\r\nHost: a\r\n", "\r\n", "\r"])
    func aHeadWithOnlyCRLFsSoFarIsIncomplete(text: String) throws {
        #expect(try request(text) == nil)
    }

    @Test func oneEmptyLineBeforeTheRequestLineIsSkippedAndCounted() throws {
        let head = try #require(try request("\r\nGET http://a/ HTTP/1.1\r\nHost: a\r\n\r\nNEXT"))
        #expect(head.method == "GET")
        #expect(head.target == "http://a/")
        #expect(head.length == "\r\nGET http://a/ HTTP/1.1\r\nHost: a\r\n\r\n".utf8.count)
    }

    @Test func anOriginFormPathMayHoldASchemeLikeText() throws {
        // Found by the fuzzer: "://" in a path is not an absolute-form target.
        let head = try #require(try request("GET /605.1http:// HTTP/1.1\r\nHost: a\r\n\r\n"))
        #expect(!head.isAbsoluteForm)
        #expect(status("GET http://api.example.comX/605.1http:// HTTP/1.1\r\n\r\n") == nil)
    }

    @Test func legalSpellingsAreAccepted() throws {
        #expect(try request("POST http://a/ HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n")?.chunked == true)
        #expect(try request("CONNECT a.example:443 HTTP/1.1\r\nContent-Length: 0\r\n\r\n")?.method == "CONNECT")
        #expect(try request("GET http://a/ HTTP/1.1\r\nX-Name: caf\u{E9} \t\r\n\r\n") != nil, "obs-text and HTAB in a value")
        #expect(try request("PUT http://a/ HTTP/1.1\r\nContent-Length: 03, 3\r\n\r\n")?.contentLength == 3)
    }

    private func upstream(_ text: String) throws -> String {
        let head = try #require(try request(text))
        return String(decoding: head.upstreamHead(authority: "a"), as: UTF8.self)
    }

    /// A Connection token naming a framing or routing field must not strip it: without its
    /// Content-Length, an origin reads the body as the next request on a pooled connection.
    @Test(arguments: ["content-length", "Content-Length, close", "transfer-encoding", "host"])
    func connectionNeverStripsFramingOrRouting(token: String) throws {
        let chunked = token.lowercased().hasPrefix("transfer")
        let framing = chunked ? "Transfer-Encoding: chunked\r\n" : "Content-Length: 5\r\n"
        let forwarded = try upstream("POST http://a/ HTTP/1.1\r\nHost: a\r\nConnection: \(token)\r\n\(framing)\r\n")
        #expect(forwarded.contains(chunked ? "\r\nTransfer-Encoding: chunked\r\n" : "\r\nContent-Length: 5\r\n"))
        #expect(forwarded.hasPrefix("POST / HTTP/1.1\r\nHost: a\r\n"))
    }

    @Test func aRepeatedContentLengthIsForwardedOnce() throws {
        let forwarded = try upstream("PUT http://a/ HTTP/1.1\r\nContent-Length: 003\r\nX-A: 1\r\nContent-Length: 3, 3\r\n\r\n")
        #expect(forwarded == "PUT / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nX-A: 1\r\nVia: 1.1 atsgate\r\n\r\n")
    }

    // MARK: chunked bodies

    private func scan(_ text: String, split: Int? = nil) -> (taken: Int, done: Bool)? {
        var scanner = ChunkedScanner()
        let bytes = Array(text.utf8)
        let pieces: [ArraySlice<UInt8>] = split.map { [bytes[..<min($0, bytes.count)], bytes[min($0, bytes.count)...]] }
            ?? [bytes[...]]
        var taken = 0
        for piece in pieces {
            let result = Array(piece).withUnsafeBytes { buffer in
                Result { () throws(ChunkedScanner.Malformed) in try scanner.scan(buffer) }
            }
            guard case .success(let count) = result else { return nil }
            taken += count
            if scanner.isDone { break }
        }
        return (taken, scanner.isDone)
    }

    @Test(arguments: [
        "5\r\nhello\r\n0\r\n\r\n",
        "5;name=value\r\nhello\r\n0\r\n\r\n",
        "5 ;name=\"quoted value\"\r\nhello\r\n0;last\r\n\r\n",
        "00000A\r\n0123456789\r\n0\r\n\r\n",
        "0\r\nX-Trailer: value\r\n\r\n",
        "3\r\nabc\r\n0\r\nChecksum: 1\r\nX-Empty:\r\n\r\n",
        "5;a=\"b;c\\\"d\";e\t= f\r\nhello\r\n0\r\n\r\n",
    ])
    func validChunkedBodiesEndWhereTheyEnd(body: String) throws {
        let length = body.utf8.count
        for split in [nil, 1, 3, length / 2, length - 1] as [Int?] {
            let result = try #require(scan(body + "GET /next", split: split), "split at \(split.map(String.init) ?? "-")")
            #expect(result.done)
            #expect(result.taken == length)
        }
    }

    @Test(arguments: [
        "5\nhello\r\n0\r\n\r\n",
        "1 2\r\nx\r\n0\r\n\r\n",
        "5 \r\nhello\r\n0\r\n\r\n",
        "g\r\n",
        "\r\n",
        "-1\r\n",
        "5\r\nhelloX\r\n",
        "5\r\nhello\n0\r\n\r\n",
        "5;\u{0}\r\nhello\r\n",
        "5;a\nb\r\nhello\r\n",
        "fffffffffffffffff\r\n",
        "0\r\n X: y\r\n\r\n",
        "0\r\nX : y\r\n\r\n",
        "0\r\n: y\r\n\r\n",
        "0\r\nX: y\nZ: 1\r\n\r\n",
        "0\r\nX: y\r\r\n\r\n",
        "0\r\nX: a\u{7F}\r\n\r\n",
        "0\r\n\r\r",
        // Found by the fuzzer against RFC 9112's grammar: names are tokens; white space only before ";" or "=".
        "5;quo\u{E0}ted=1\r\nhello\r\n0\r\n\r\n",
        "5;a \r\nhello\r\n0\r\n\r\n",
        "5;a=b \r\nhello\r\n0\r\n\r\n",
        "5;a=\"b\r\nhello\r\n0\r\n\r\n",
        "5;=b\r\nhello\r\n0\r\n\r\n",
    ])
    func malformedChunkedBodiesAreRefused(body: String) {
        #expect(scan(body) == nil)
        #expect(scan(body, split: 2) == nil)
    }

    /// The chunk data alone, however the body is cut: what an HTTP/1.0 client gets.
    @Test func chunkDataIsTheBodyWithoutItsCoding() throws {
        let body = Array("5;name=\"v;x\"\r\nhello\r\n6\r\n world\r\n0;last\r\nX-Checksum: 1\r\nX-Empty:\r\n\r\nGET /next".utf8)
        for cut in 0...body.count {
            var framing = MessageBody.chunked(ChunkedScanner())
            var content: [UInt8] = []
            var taken = 0
            for piece in [body[..<cut], body[cut...]] where !framing.isComplete {
                taken += try Array(piece).withUnsafeBytes { bytes in
                    try framing.take(bytes) { content += bytes[$0] }
                }
            }
            #expect(String(decoding: content, as: UTF8.self) == "hello world", "cut at \(cut)")
            #expect(taken == body.count - "GET /next".utf8.count, "cut at \(cut)")
        }
    }

    /// For an HTTP/1.0 client the chunked coding goes (and the connection closes after the body);
    /// an HTTP/1.1 client gets the head as it came. Another coding before chunked stays as it was.
    @Test func theHeadForAnHTTP10ClientLosesTheChunkedCoding() throws {
        let head = try #require(try response("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-A: 1\r\n\r\n"))
        #expect(head.removesChunking(forClientMinorVersion: 0))
        #expect(!head.removesChunking(forClientMinorVersion: 1))
        let old = String(decoding: head.rewritten(keepAlive: true, clientMinorVersion: 0), as: UTF8.self)
        #expect(old == "HTTP/1.1 200 OK\r\nX-A: 1\r\nVia: 1.1 atsgate\r\nConnection: close\r\n\r\n")
        let new = String(decoding: head.rewritten(keepAlive: true, clientMinorVersion: 1), as: UTF8.self)
        #expect(new == "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-A: 1\r\nVia: 1.1 atsgate\r\n\r\n")
        let gzipped = try #require(try response("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"))
        #expect(!gzipped.removesChunking(forClientMinorVersion: 0))
    }

    @Test func chunkLinesAndTrailersAreBounded() {
        #expect(scan("5;" + String(repeating: "a", count: 5000) + "\r\n") == nil)
        let trailers = (0..<2000).map { "X-\($0): 1234567890\r\n" }.joined()
        #expect(scan("0\r\n" + trailers + "\r\n") == nil)
    }

    // MARK: responses

    private func response(_ text: String) throws(ResponseHead.Malformed) -> ResponseHead? {
        try Array(text.utf8).withUnsafeBytes { bytes in
            Result { () throws(ResponseHead.Malformed) in try ResponseHead.parse(bytes) }
        }.get()
    }

    @Test(arguments: [
        "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
        "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, chunked\r\n\r\n",
        // chunked anywhere but last: a client that stops at the chunked end would desynchronise.
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 5, 6\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 7\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
        "HTTP/1.1 200 OK\r\nX-A: 1\nSet-Cookie: injected=1\r\n\r\n",
        "HTTP/1.1 200 OK\r\nX-A: 1\rSet-Cookie: injected=1\r\n\r\n",
        "HTTP/1.1 200 OK\r\nX-A: a\u{0}b\r\n\r\n",
        "HTTP/1.1 200 OK\r\nX-A: 1\r\n\tcontinued\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length : 5\r\n\r\n",
        "HTTP/1.1 200 O\u{01}K\r\n\r\n",
        "HTTP/1.1 099 Early\r\n\r\n",
        "HTTP/1.1 999 Odd\r\nContent-Length: 0\r\n\r\n",
        // Found by the fuzzer: an empty Transfer-Encoding beside Content-Length reached the client.
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: \r\nContent-Length: 0\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: , \r\n\r\n",
        "HTTP/1.1 600 Internal\r\n\r\n",
        "HTTP/1.1 200 OK\r\nX[1]: a\r\n\r\n",
        // LF-ended lines are refused as they arrive, not waited on until a CRLFCRLF.
        "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\n",
        "HTTP/1.1 200 OK\nContent-Length: 0\n\n",
        "HTTP/1.1 204 No Content\r\n\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 0\r\r",
    ])
    func hostileResponseHeadsAreRefused(text: String) {
        #expect(throws: ResponseHead.Malformed.self) { try response(text) }
    }

    @Test func aRepeatedContentLengthReachesTheClientOnce() throws {
        let head = try #require(try response("HTTP/1.1 200 OK\r\nContent-Length: 5, 5\r\nContent-Length: 05\r\n\r\n"))
        #expect(head.contentLength == 5)
        let text = String(decoding: head.rewritten(keepAlive: true, clientMinorVersion: 1), as: UTF8.self)
        #expect(text == "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nVia: 1.1 atsgate\r\n\r\n")
    }

    @Test func aResponseConnectionTokenNeverStripsItsFraming() throws {
        let head = try #require(try response(
            "HTTP/1.1 200 OK\r\nConnection: transfer-encoding, content-length\r\nTransfer-Encoding: chunked\r\n\r\n"))
        let text = String(decoding: head.rewritten(keepAlive: true, clientMinorVersion: 1), as: UTF8.self)
        #expect(text == "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nVia: 1.1 atsgate\r\n\r\n")
    }

    @Test(arguments: [
        ("HEAD", "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n", "complete"),
        ("GET", "HTTP/1.1 204 No Content\r\nContent-Length: 100\r\n\r\n", "complete"),
        ("GET", "HTTP/1.1 304 Not Modified\r\nContent-Length: 100\r\n\r\n", "complete"),
        ("GET", "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n", "length"),
        ("GET", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", "chunked"),
        // A final coding other than chunked: the body runs until the origin closes (RFC 9112 6.3).
        ("GET", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", "close"),
        ("GET", "HTTP/1.1 200 OK\r\n\r\n", "close"),
    ])
    func responseBodiesAreFramedAsTheRFCSays(method: String, text: String, expected: String) throws {
        let head = try #require(try response(text))
        let framing: String
        switch MessageBody(response: head, requestMethod: method) {
        case .none: framing = "complete"
        case .length: framing = "length"
        case .chunked: framing = "chunked"
        case .untilClose: framing = "close"
        }
        #expect(framing == expected)
    }
}
