import Foundation
import Glibc
import Testing
import TestSupport

/// The strict HTTP/1.1 layer through the running daemon: a raw-socket client sends what a hostile
/// client would, a raw-socket origin answers what a hostile origin would, and the tests assert the
/// bytes each side gets, the decision record, and that the daemon keeps serving.
@Suite(.serialized) struct HostileHTTPTests {
    static let ok = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"

    /// The daemon still forwards an ordinary request after what a test sent it.
    private func stillServes(_ daemon: Daemon, _ origin: RawOrigin) throws {
        let client = try RawClient(port: daemon.port)
        client.send("GET http://127.0.0.1:\(origin.port)/after HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        let reply = client.readAll()
        #expect(reply.hasPrefix("HTTP/1.1 200 OK\r\n"), "after: \(reply)")
    }

    // MARK: hostile clients

    /// Each is refused with its status and the connection closed; nothing of it, nor the request
    /// pipelined behind it, reaches the origin.
    @Test(arguments: [
        ("POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400),
        ("POST /p HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, identity\r\n\r\n", 400),
        ("POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello", 400),
        ("POST /p HTTP/1.1\r\nHost: x\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n", 400),
        ("GET /p HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n folded: 2\r\n\r\n", 400),
        ("GET /p HTTP/1.1\r\nHost: x\r\nX-A: 1\nX-B: 2\r\n\r\n", 400),
        ("GET /p HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n", 400),
        ("GET /p#frag HTTP/1.1\r\nHost: x\r\n\r\n", 400),
        ("GET /p HTTP/2.0\r\nHost: x\r\n\r\n", 505),
    ])
    func hostileRequestsAreRefusedAndNothingReachesTheOrigin(request: String, status: Int) throws {
        let origin = try RawOrigin(always: Self.ok)
        let daemon = try Daemon([])
        let client = try RawClient(port: daemon.port)
        let target = "http://127.0.0.1:\(origin.port)"
        let smuggled = "GET \(target)/smuggled HTTP/1.1\r\nHost: x\r\n\r\n"
        client.send(request.replacingOccurrences(of: " /p", with: " \(target)/p") + smuggled)
        let reply = client.readAll()
        #expect(reply.hasPrefix("HTTP/1.1 \(status) "), "reply: \(reply)")
        #expect(reply.contains("\r\nConnection: close\r\n"))
        #expect(!reply.contains("HTTP/1.1 200"), "the pipelined request was not served: \(reply)")
        try stillServes(daemon, origin)
        #expect(origin.received.count == 1, "only the follow-up request reached the origin: \(origin.received)")
        #expect(origin.received.allSatisfy { !$0.contains("/smuggled") && !$0.contains("/p ") })
        let (_, records) = try daemon.stop(expected: 2)
        let refused = try #require(records.first { $0["status"] as? Int == status })
        #expect(refused["action"] as? String == "error")
        #expect(refused["reason"] as? String == "bad-request")
    }

    /// Heads whose lines end in a bare LF (or a bare CR) never hold a CRLFCRLF, so a parser that
    /// waits for one left the client waiting until the head timeout (RFC 9112 section 2.2: the head
    /// was complete when its empty line arrived). Each is refused at once, with the head timeout far
    /// away (a wait shows as no reply within the client's 10 s), and nothing reaches the origin.
    @Test(arguments: [
        "GET /p HTTP/1.1\r\nHost: x\r\n\n",
        "GET /p HTTP/1.1\nHost: x\n\n",
        "GET /p HTTP/1.1\r\nHost: x\n\r\n",
        "GET /p HTTP/1.1\n\n",
        "GET /p HTTP/1.1\r\n\n",
        "GET /p HTTP/1.1\r\nHost: x\r\r",
    ])
    func lineEndingsWithoutCRLFAreRefusedWithoutWaiting(request: String) throws {
        let origin = try RawOrigin(always: Self.ok)
        let daemon = try Daemon(["--head-timeout", "60"])
        let client = try RawClient(port: daemon.port)
        client.send(request.replacingOccurrences(of: " /p", with: " http://127.0.0.1:\(origin.port)/p"))
        let reply = client.readAll()
        #expect(reply.hasPrefix("HTTP/1.1 400 "), "reply: \(reply)")
        #expect(reply.contains("\r\nConnection: close\r\n"))
        try stillServes(daemon, origin)
        #expect(origin.received.count == 1, "only the follow-up request reached the origin: \(origin.received)")
        let (_, records) = try daemon.stop(expected: 2)
        let refused = try #require(records.first { $0["status"] as? Int == 400 })
        #expect(refused["reason"] as? String == "bad-request")
        #expect((refused["message"] as? String)?.contains("bare") == true, "\(refused)")
    }

    /// `Connection: Content-Length` once stripped the framing on the way to the origin, which then
    /// read the body as the next request on a pooled connection: request smuggling.
    @Test func aConnectionTokenNamingContentLengthKeepsTheFraming() throws {
        let origin = try RawOrigin(always: Self.ok)
        let daemon = try Daemon([])
        let client = try RawClient(port: daemon.port)
        let body = "GET /smuggled HTTP/1.1\r\nX: y"
        client.send("POST http://127.0.0.1:\(origin.port)/p HTTP/1.1\r\nHost: evil.example\r\n"
                    + "Connection: Content-Length, close\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
        let reply = client.readAll()
        #expect(reply.hasPrefix("HTTP/1.1 200 OK\r\n"), "reply: \(reply)")
        let received = try #require(origin.received.first)
        // The client's Host is replaced by the target's authority (RFC 9112 section 3.2.2).
        #expect(received.hasPrefix("POST /p HTTP/1.1\r\nHost: 127.0.0.1:\(origin.port)\r\n"), "origin got: \(received)")
        #expect(received.contains("\r\nContent-Length: \(body.utf8.count)\r\n"), "origin got: \(received)")
        #expect(received.hasSuffix("\r\n\r\n" + body))
        _ = try daemon.stop()
    }

    /// A malformed chunk line mid-body: the client gets 400, the origin connection that had the start
    /// of the body is closed, never pooled, and the rest of the client's bytes go nowhere.
    @Test func aMalformedChunkMidBodyEndsTheExchange() throws {
        let origin = try RawOrigin(always: Self.ok)
        let daemon = try Daemon([])
        let client = try RawClient(port: daemon.port)
        client.send("POST http://127.0.0.1:\(origin.port)/p HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                    + "5\r\nhello\r\n1 2\r\nx\r\n0\r\n\r\nGET http://127.0.0.1:\(origin.port)/smuggled HTTP/1.1\r\n\r\n")
        let reply = client.readAll()
        #expect(reply.hasPrefix("HTTP/1.1 400 "), "reply: \(reply)")
        try stillServes(daemon, origin)
        #expect(origin.connections == 2, "the first origin connection was not reused")
        #expect(!origin.received.joined().contains("/smuggled"))
        #expect(!origin.received.joined().contains("1 2\r\n"))
        _ = try daemon.stop(expected: 2)
    }

    /// A chunked request with a trailer field and chunk extensions completes, and one empty line
    /// before a request line is ignored (RFC 9112 section 2.2).
    @Test func trailersExtensionsAndALeadingEmptyLineWork() throws {
        let origin = try Origin()
        let daemon = try Daemon([])
        let client = try RawClient(port: daemon.port)
        client.send("\r\nPOST http://127.0.0.1:\(origin.httpPort)/echo HTTP/1.1\r\nHost: x\r\n"
                    + "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                    + "5;name=value\r\nhello\r\n0\r\nX-Checksum: 1\r\n\r\n")
        let reply = client.readAll()
        #expect(reply.hasPrefix("HTTP/1.1 200 "), "reply: \(reply)")
        #expect(reply.hasSuffix("\r\n\r\nhello"))
        _ = try daemon.stop()
    }

    /// A tunnel answered 200 whose client goes before sending a byte is logged all the same: the
    /// decision was made and acted on (the soak's descriptor burst found such CONNECTs unlogged).
    @Test func aTunnelClosedBeforeItsFirstByteIsLogged() throws {
        let origin = try RawOrigin(always: Self.ok)
        let daemon = try Daemon(["--connect-port", "\(origin.port)", "--head-timeout", "30"])
        let client = try daemon.openTunnel(to: origin.port)
        client.shutdownWrite()
        #expect(client.readAll().isEmpty, "the tunnel ends without bytes")
        let (_, records) = try daemon.stop()
        let record = try #require(records.first)
        #expect(records.count == 1)
        #expect(record["method"] as? String == "CONNECT")
        #expect(record["action"] as? String == "allow")
        #expect(record["bytes_up"] as? Int == 0)
        #expect((record["message"] as? String)?.contains("before sending a byte") == true, "\(record)")
    }

    @Test func connectWithContentIsRefused() throws {
        let daemon = try Daemon([])
        let client = try RawClient(port: daemon.port)
        client.send("CONNECT 127.0.0.1:443 HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello")
        #expect(client.readAll().hasPrefix("HTTP/1.1 400 "))
        let (_, records) = try daemon.stop()
        #expect(records.first?["action"] as? String == "error")
    }

    // MARK: hostile origins

    /// Responses whose framing or fields are broken never reach the client as they came: 502.
    @Test(arguments: [
        "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok",
        "HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\nok",
        "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
        "HTTP/1.1 200 OK\r\nX-A: 1\nSet-Cookie: injected=1\r\nContent-Length: 2\r\n\r\nok",
        "HTTP/1.1 200 OK\r\nX-A: 1\r\n folded\r\nContent-Length: 2\r\n\r\nok",
        "HTTP/1.1 200 OK\r\nX-A: a\u{1}b\r\nContent-Length: 2\r\n\r\nok",
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\nzz\r\n",
        // LF-ended lines: refused as they arrive, not waited on until the idle timeout.
        "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\nok",
        "HTTP/1.1 200 OK\nContent-Length: 2\n\nok",
    ])
    func brokenResponsesBecome502(response: String) throws {
        let origin = try RawOrigin(always: response)
        let daemon = try Daemon([])
        let client = try RawClient(port: daemon.port)
        client.send("GET http://127.0.0.1:\(origin.port)/ HTTP/1.1\r\nHost: x\r\n\r\n")
        let reply = client.readAll()
        if response.hasSuffix("zz\r\n"), reply.hasPrefix("HTTP/1.1 200 OK\r\n") {
            // The head went out before the bad chunk line arrived: the client is reset mid-body.
            #expect(!reply.contains("zz"))
        } else {
            #expect(reply.hasPrefix("HTTP/1.1 502 "), "reply: \(reply)")
            #expect(reply.contains("X-ATS-Reason: upstream-protocol\r\n"))
            #expect(!reply.contains("injected"))
        }
        let (_, records) = try daemon.stop()
        #expect(records.first?["action"] as? String == "error")
        #expect(records.first?["reason"] as? String == "upstream-protocol")
    }

    /// Several 1xx in a row pass on, then the final response; bytes after a complete response are
    /// discarded and that origin connection is not used again.
    @Test func interimResponsesPassAndTrailingBytesAreDiscarded() throws {
        let origin = try RawOrigin(always: "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 102 Processing\r\n\r\n"
                                   + "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nevil")
        let daemon = try Daemon([])
        let client = try RawClient(port: daemon.port)
        let request = "GET http://127.0.0.1:\(origin.port)/ HTTP/1.1\r\nHost: x\r\n\r\n"
        client.send(request)
        let first = client.read(until: "\r\n\r\nok")
        #expect(first.hasPrefix("HTTP/1.1 100 Continue\r\nVia: 1.1 atsgate\r\n\r\nHTTP/1.1 102 Processing\r\n"), "\(first)")
        #expect(first.hasSuffix("\r\n\r\nok"))
        client.send(request.replacingOccurrences(of: "\r\n\r\n", with: "\r\nConnection: close\r\n\r\n"))
        let second = client.readAll()
        #expect(!second.contains("evil"), "the stray response was not served: \(second)")
        #expect(second.hasPrefix("HTTP/1.1 100 Continue\r\n"))
        #expect(origin.connections == 2)
        _ = try daemon.stop(expected: 2)
    }

    /// HEAD, 204 and 304 have no body whatever their Content-Length says; the client connection goes on.
    @Test func responsesWithoutBodiesKeepTheConnection() throws {
        let origin = try RawOrigin { n in
            ["HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n", "HTTP/1.1 204 No Content\r\n\r\n",
             "HTTP/1.1 304 Not Modified\r\nContent-Length: 50\r\n\r\n", Self.ok][min(n, 3)]
        }
        let daemon = try Daemon([])
        let client = try RawClient(port: daemon.port)
        let target = "http://127.0.0.1:\(origin.port)/"
        client.send("HEAD \(target) HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(client.read(until: "\r\n\r\n").contains("Content-Length: 100\r\n"))
        client.send("GET \(target) HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(client.read(until: "\r\n\r\n").hasPrefix("HTTP/1.1 204 "))
        client.send("GET \(target) HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(client.read(until: "\r\n\r\n").hasPrefix("HTTP/1.1 304 "))
        client.send("GET \(target) HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        #expect(client.readAll().hasSuffix("\r\n\r\nok"))
        let (_, records) = try daemon.stop(expected: 4)
        #expect(records.map { $0["status"] as? Int } == [200, 204, 304, 200])
    }

    /// A body that runs until the origin closes reaches the client whole, with Connection: close.
    @Test func aCloseDelimitedBodyIsPassedOnAndTheClientClosed() throws {
        let origin = try RawOrigin(closeAfterReply: true, always: "HTTP/1.1 200 OK\r\n\r\nuntil the end")
        let daemon = try Daemon([])
        let client = try RawClient(port: daemon.port)
        client.send("GET http://127.0.0.1:\(origin.port)/ HTTP/1.1\r\nHost: x\r\n\r\n")
        let reply = client.readAll()
        #expect(reply.contains("\r\nConnection: close\r\n"))
        #expect(reply.hasSuffix("\r\n\r\nuntil the end"))
        let (_, records) = try daemon.stop()
        #expect(records.first?["action"] as? String == "allow")
    }

    /// A body cut short by the origin: the client gets what came, then a reset (never a clean end it
    /// could take for the whole body), and the record says so.
    @Test func aTruncatedBodyResetsTheClient() throws {
        let origin = try RawOrigin(closeAfterReply: true, always: "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort")
        let daemon = try Daemon([])
        let client = try RawClient(port: daemon.port)
        client.send("GET http://127.0.0.1:\(origin.port)/ HTTP/1.1\r\nHost: x\r\n\r\n")
        var data = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        var lastResult = 0
        var lastErrno: Int32 = 0
        while true {
            lastResult = recv(client.fd, &buffer, buffer.count, 0)
            if lastResult <= 0 { lastErrno = errno; break }
            data += buffer[..<lastResult]
        }
        #expect(String(decoding: data, as: UTF8.self).hasSuffix("\r\n\r\nshort"))
        #expect(lastResult < 0 && lastErrno == ECONNRESET, "the connection was reset, not ended")
        let (_, records) = try daemon.stop()
        #expect(records.first?["action"] as? String == "error")
        #expect(records.first?["reason"] as? String == "upstream-truncated")
    }

    /// A chunked response whose trailer section carries a field, to an HTTP/1.0 client: it cannot
    /// read the chunked coding (RFC 9112 section 6.1), so it gets the chunk data alone, delimited by
    /// the close, and the trailer field is dropped (section 7.1.2), never part of the body. Sent as
    /// it came, a kept-alive HTTP/1.0 client waited for an end it could not find. HTTP/1.1 clients
    /// still get the body as it came, trailer and all.
    @Test(arguments: ["", "Connection: keep-alive\r\n"])
    func anHTTP10ClientGetsAChunkedBodyWithoutItsCodingOrTrailer(connection: String) throws {
        let chunked = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Checksum\r\n\r\n"
            + "5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Checksum: 42\r\n\r\n"
        let origin = try RawOrigin(always: chunked)
        let daemon = try Daemon(["--head-timeout", "60"])
        let client = try RawClient(port: daemon.port)
        client.send("GET http://127.0.0.1:\(origin.port)/ HTTP/1.0\r\nHost: x\r\n\(connection)\r\n")
        // A wait shows as no end within the client's 10 s: readAll returns only at the close.
        let reply = client.readAll()
        #expect(reply.hasPrefix("HTTP/1.1 200 OK\r\n"), "reply: \(reply)")
        #expect(!reply.lowercased().contains("transfer-encoding"), "reply: \(reply)")
        #expect(reply.contains("\r\nConnection: close\r\n"), "reply: \(reply)")
        #expect(reply.hasSuffix("\r\n\r\nhello world"), "the chunk data alone: \(reply)")
        #expect(!reply.contains("X-Checksum: 42"))

        let modern = try RawClient(port: daemon.port)
        modern.send("GET http://127.0.0.1:\(origin.port)/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        let passed = modern.readAll()
        #expect(passed.contains("\r\nTransfer-Encoding: chunked\r\n"), "\(passed)")
        #expect(passed.hasSuffix("\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Checksum: 42\r\n\r\n"), "\(passed)")
        let (_, records) = try daemon.stop(expected: 2)
        #expect(records.allSatisfy { $0["action"] as? String == "allow" && $0["status"] as? Int == 200 }, "\(records)")
    }

    /// A request-head timeout is an error with its reason, not an allow.
    @Test func aHeadTimeoutIsLoggedAsAnError() throws {
        let daemon = try Daemon(["--head-timeout", "0.3"])
        let client = try RawClient(port: daemon.port)
        client.send("GET http://127.0.0.1:1/ HTTP/1.1\r\n")
        #expect(client.readAll().hasPrefix("HTTP/1.1 408 "))
        let (_, records) = try daemon.stop()
        #expect(records.first?["action"] as? String == "error")
        #expect(records.first?["reason"] as? String == "request-timeout")
    }
}
