import ATSPolicy
import DecisionLog
import ProxyAccess
import Testing
@testable import HTTP1
@testable import ProxyAnswers

/// The forwarded exchange as a value: the client's and the origin's bytes go in as byte strings, and
/// the steps and the bytes for each side come out, with no socket anywhere.
@Suite struct ForwardExchangeTests {
    typealias Step = ForwardExchange.Step

    private func exchange(_ request: String, parent: ParentProxy? = nil) throws -> ForwardExchange {
        let bytes = Array(request.utf8)
        let head = try #require(try bytes.withUnsafeBytes { try RequestHeadParser.parse($0) })
        let destination = try head.absoluteFormDestination.get()
        let up = head.upstreamHead(authority: "origin.test", parentAuthorization: parent.map { $0.authorization ?? "" })
        return ForwardExchange(request: head, destination: destination, head: up, parent: parent)
    }

    private func fromOrigin(_ exchange: inout ForwardExchange, _ text: String, ended: Bool = false) -> ForwardExchange.Steps {
        Array(text.utf8).withUnsafeBytes { exchange.receiveFromOrigin($0, ended: ended) }
    }

    /// Writes everything for the client, as a socket that takes it all would.
    private func toClient(_ exchange: inout ForwardExchange) -> String {
        exchange.writeToClient { bytes in
            defer { bytes.removeAll() }
            return String(decoding: bytes, as: UTF8.self)
        }
    }

    private func toOrigin(_ exchange: inout ForwardExchange) -> String {
        defer { exchange.originWrote(exchange.toOrigin.count) }
        return String(decoding: exchange.toOrigin, as: UTF8.self)
    }

    private static let get11 = "GET http://origin.test/ HTTP/1.1\r\nHost: origin.test\r\n\r\n"
    private static let get10 = "GET http://origin.test/ HTTP/1.0\r\nHost: origin.test\r\n\r\n"

    // MARK: response heads

    @Test func interimResponsesPassOnRewrittenBeforeTheFinalOne() throws {
        var forward = try exchange(Self.get11)
        let steps = fromOrigin(&forward, "HTTP/1.1 100 Continue\r\n\r\n"
            + "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n"
            + "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        #expect(steps == [.responseHead(status: 200), .sendDown], "the record gets the final status, not an interim one")
        #expect(toClient(&forward) == "HTTP/1.1 100 Continue\r\nVia: 1.1 atsgate\r\n\r\n"
            + "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\nVia: 1.1 atsgate\r\n\r\n"
            + "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nVia: 1.1 atsgate\r\n\r\nok")
        #expect(forward.clientCaughtUp() == .complete(reusable: true, keepClient: true, truncated: false))
    }

    @Test func aLone100ContinueGoesToTheClientBeforeTheFinalResponse() throws {
        var forward = try exchange("POST http://origin.test/upload HTTP/1.1\r\nHost: origin.test\r\n"
            + "Content-Length: 5\r\nExpect: 100-continue\r\n\r\n")
        #expect(fromOrigin(&forward, "HTTP/1.1 100 Continue\r\n\r\n") == [.sendDown],
                "the client waits for it before it sends its body")
        #expect(toClient(&forward) == "HTTP/1.1 100 Continue\r\nVia: 1.1 atsgate\r\n\r\n")
        #expect(forward.clientCaughtUp() == nil, "the final response is still to come")
        #expect(fromOrigin(&forward, "HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n")
                == [.responseHead(status: 201), .sendDown])
        #expect(toClient(&forward).hasPrefix("HTTP/1.1 201 Created\r\n"))
    }

    @Test func anHTTP10ClientGetsNoInterimResponse() throws {
        var forward = try exchange(Self.get10)
        let steps = fromOrigin(&forward, "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n")
        #expect(steps == [.responseHead(status: 204), .sendDown])
        #expect(toClient(&forward).hasPrefix("HTTP/1.1 204 No Content\r\n"))
    }

    @Test func aHeadSplitAcrossReadsIsReadWhenWhole() throws {
        var forward = try exchange(Self.get11)
        #expect(fromOrigin(&forward, "HTTP/1.1 200 OK\r\nContent-Le").isEmpty)
        #expect(forward.toClient.isEmpty)
        #expect(fromOrigin(&forward, "ngth: 3\r\n\r\nabc") == [.responseHead(status: 200), .sendDown])
        #expect(toClient(&forward).hasSuffix("\r\n\r\nabc"))
        #expect(forward.clientCaughtUp() == .complete(reusable: true, keepClient: true, truncated: false))
    }

    @Test func aSwitchToAnotherProtocolFailsTheExchange() throws {
        var forward = try exchange(Self.get11)
        #expect(fromOrigin(&forward, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n")
                == [.fail("the origin switched protocols (101) though no upgrade was asked for", .upstreamProtocol)])
        #expect(forward.toClient.isEmpty, "nothing of it reaches the client")
    }

    @Test func aParentsChallengeIsTheParentsNeverTheClients() throws {
        let parent = try ParentProxy(url: "http://alice:secret@127.0.0.1:3128")
        var forward = try exchange(Self.get11, parent: parent)
        #expect(toOrigin(&forward).contains("Proxy-Authorization: Basic YWxpY2U6c2VjcmV0\r\n"))
        #expect(fromOrigin(&forward, "HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n")
                == [.fail("the parent proxy 127.0.0.1:3128 refused the credentials of user 'alice': "
                          + "407 Proxy Authentication Required", .parentAuth)])

        var anonymous = try exchange(Self.get11, parent: ParentProxy(url: "http://127.0.0.1:3128"))
        #expect(fromOrigin(&anonymous, "HTTP/1.1 407 Proxy Authentication Required\r\n\r\n")
                == [.fail("the parent proxy 127.0.0.1:3128 wants credentials (give them in "
                          + "--parent http://USER:PASSWORD@HOST:PORT): 407 Proxy Authentication Required", .parentAuth)])

        // Straight to an origin, a 407 is the origin's answer, passed on.
        var direct = try exchange(Self.get11)
        #expect(fromOrigin(&direct, "HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n")
                == [.responseHead(status: 407), .sendDown])
    }

    @Test func aMalformedHeadOrAnOriginThatClosesWithoutOneFails() throws {
        var garbage = try exchange(Self.get11)
        let steps = fromOrigin(&garbage, "SSH-2.0-OpenSSH_9.2\r\n\r\n")
        #expect(steps == [.fail("bad response from the origin: malformed status line", .upstreamProtocol)])

        var silent = try exchange(Self.get11)
        #expect(fromOrigin(&silent, "HTTP/1.1 200 OK\r\n").isEmpty)
        #expect(fromOrigin(&silent, "", ended: true) == [.fail("the origin closed without a response", .upstreamProtocol)])
    }

    // MARK: response bodies

    @Test func aBodyByContentLengthArrivingInPiecesCompletesAndTheOriginIsReusable() throws {
        var forward = try exchange(Self.get11)
        #expect(fromOrigin(&forward, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n01234") == [.responseHead(status: 200), .sendDown])
        _ = toClient(&forward)
        #expect(forward.clientCaughtUp() == nil, "half the body: wait for the origin")
        #expect(fromOrigin(&forward, "56789") == [.sendDown])
        #expect(toClient(&forward) == "56789")
        #expect(forward.clientCaughtUp() == .complete(reusable: true, keepClient: true, truncated: false))
        #expect(forward.bytesDown == 10)
    }

    @Test(arguments: ["HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
                      "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok"])
    func anOriginThatClosesAfterItsResponseIsNotReusedButTheClientStays(response: String) throws {
        var forward = try exchange(Self.get11)
        _ = fromOrigin(&forward, response)
        let written = toClient(&forward)
        #expect(!written.contains("Connection: close"), "the origin's connection is not the client's: \(written)")
        #expect(forward.clientCaughtUp() == .complete(reusable: false, keepClient: true, truncated: false))
    }

    @Test func bytesAfterACompleteBodyAreDroppedAndTheOriginIsNotReused() throws {
        var forward = try exchange(Self.get11)
        _ = fromOrigin(&forward, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\n")
        #expect(toClient(&forward).hasSuffix("\r\n\r\nok"))
        #expect(forward.clientCaughtUp() == .complete(reusable: false, keepClient: true, truncated: false))
        #expect(forward.bytesDown == 2)
    }

    @Test func anOriginThatClosesBeforeTheEndOfTheBodyIsTruncated() throws {
        var forward = try exchange(Self.get11)
        _ = fromOrigin(&forward, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n01234")
        _ = toClient(&forward)
        #expect(fromOrigin(&forward, "", ended: true) == [.sendDown])
        #expect(forward.clientCaughtUp() == .complete(reusable: false, keepClient: false, truncated: true))
    }

    @Test func aBodyWithoutLengthEndsWhenTheOriginCloses() throws {
        var forward = try exchange(Self.get11)
        #expect(fromOrigin(&forward, "HTTP/1.1 200 OK\r\n\r\nabc") == [.responseHead(status: 200), .sendDown])
        #expect(toClient(&forward) == "HTTP/1.1 200 OK\r\nVia: 1.1 atsgate\r\nConnection: close\r\n\r\nabc",
                "the close is the body's end, so the client connection closes too")
        #expect(forward.clientCaughtUp() == nil)
        #expect(fromOrigin(&forward, "def", ended: true) == [.sendDown])
        #expect(toClient(&forward) == "def")
        #expect(forward.clientCaughtUp() == .complete(reusable: false, keepClient: false, truncated: false))
    }

    /// What the code has always done: the chunk data alone, delimited by the close (the trailer dropped).
    @Test func aChunkedBodyGoesToAnHTTP10ClientWithoutItsChunking() throws {
        var forward = try exchange(Self.get10)
        let chunks = "5\r\nhello\r\n6\r\n, you!\r\n"
        let last = "0\r\nExpires: never\r\n\r\n"
        let steps = fromOrigin(&forward, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks)
        #expect(steps == [.responseHead(status: 200), .sendDown])
        #expect(toClient(&forward) == "HTTP/1.1 200 OK\r\nVia: 1.1 atsgate\r\nConnection: close\r\n\r\nhello, you!")
        #expect(fromOrigin(&forward, last) == [.sendDown])
        #expect(toClient(&forward) == "", "no chunk line, no trailer")
        #expect(forward.clientCaughtUp() == .complete(reusable: true, keepClient: false, truncated: false))
        #expect(forward.bytesDown == chunks.utf8.count + last.utf8.count, "the origin's body bytes, as they came")
    }

    @Test func aChunkedBodyGoesToAnHTTP11ClientAsItCame() throws {
        var forward = try exchange(Self.get11)
        let body = "5\r\nhello\r\n0\r\n\r\n"
        _ = fromOrigin(&forward, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + body)
        #expect(toClient(&forward).hasSuffix("\r\n\r\n" + body))
        #expect(forward.clientCaughtUp() == .complete(reusable: true, keepClient: true, truncated: false))
    }

    @Test func aMalformedChunkFailsTheExchangeAfterTheHead() throws {
        var forward = try exchange(Self.get11)
        let steps = fromOrigin(&forward, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n")
        #expect(steps.first == .responseHead(status: 200))
        guard case .fail(let message, .upstreamProtocol)? = steps.last else {
            Issue.record("no failure: \(steps)")
            return
        }
        #expect(message.hasPrefix("malformed chunked response from the origin"))
    }

    @Test(arguments: [
        ("HEAD", "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n"),
        ("GET", "HTTP/1.1 204 No Content\r\nContent-Length: 100\r\n\r\n"),
        ("GET", "HTTP/1.1 304 Not Modified\r\nContent-Length: 100\r\n\r\n"),
    ])
    func aResponseWithoutABodyIsCompleteWithItsHead(method: String, response: String) throws {
        var forward = try exchange("\(method) http://origin.test/ HTTP/1.1\r\nHost: origin.test\r\n\r\n")
        #expect(fromOrigin(&forward, response).last == .sendDown)
        #expect(toClient(&forward).hasSuffix("\r\n\r\n"), "the head alone")
        #expect(forward.clientCaughtUp() == .complete(reusable: true, keepClient: true, truncated: false))
        #expect(forward.bytesDown == 0)
    }

    // MARK: the request body and what follows it

    @Test func aPipelinedNextRequestStaysWithTheClientsBytes() throws {
        var forward = try exchange("POST http://origin.test/ HTTP/1.1\r\nHost: origin.test\r\nContent-Length: 4\r\n\r\n")
        let next = "GET http://origin.test/next HTTP/1.1\r\nHost: origin.test\r\n\r\n"
        var buffered = Array(("body" + next).utf8)
        #expect(forward.receiveFromClient(&buffered) == .sendUp)
        #expect(String(decoding: buffered, as: UTF8.self) == next, "the next request waits for its turn")
        #expect(toOrigin(&forward).hasSuffix("\r\n\r\nbody"))
        #expect(!forward.wantsClientBytes, "the body is whole")

        var bodiless = try exchange(Self.get11)
        var early = Array(next.utf8)
        #expect(bodiless.receiveFromClient(&early) == .sendUp)
        #expect(early == Array(next.utf8))
        #expect(bodiless.bytesUp == bodiless.toOrigin.count, "only the head went up")
    }

    @Test func aChunkedRequestBodyInManyPiecesGoesUpWhole() throws {
        var forward = try exchange("POST http://origin.test/ HTTP/1.1\r\nHost: origin.test\r\nTransfer-Encoding: chunked\r\n\r\n")
        let head = toOrigin(&forward)
        let body = "4\r\nwiki\r\n5\r\npedia\r\n0\r\n\r\n"
        for byte in body.utf8 {
            #expect(forward.wantsClientBytes)
            var piece = [byte]
            #expect(forward.receiveFromClient(&piece) == .sendUp)
            #expect(piece.isEmpty)
        }
        #expect(!forward.wantsClientBytes)
        #expect(toOrigin(&forward) == body)
        #expect(forward.bytesUp == head.utf8.count + body.utf8.count)
    }

    @Test func aMalformedChunkedRequestBodyIsRejected() throws {
        var forward = try exchange("POST http://origin.test/ HTTP/1.1\r\nHost: origin.test\r\nTransfer-Encoding: chunked\r\n\r\n")
        var bytes = Array("4\r\nwiki\r\nnope\r\n".utf8)
        guard case .rejectRequest(let message) = forward.receiveFromClient(&bytes) else {
            Issue.record("not rejected")
            return
        }
        #expect(message.hasPrefix("malformed chunked request body"))
    }

    @Test func aClientThatEndsBeforeItsBodyDoesHasEnded() throws {
        var forward = try exchange("POST http://origin.test/ HTTP/1.1\r\nHost: origin.test\r\nContent-Length: 10\r\n\r\n")
        var bytes = Array("01234".utf8)
        #expect(forward.receiveFromClient(&bytes, ended: true) == .clientEnded)
        var whole = try exchange("POST http://origin.test/ HTTP/1.1\r\nHost: origin.test\r\nContent-Length: 2\r\n\r\n")
        var all = Array("ok".utf8)
        #expect(whole.receiveFromClient(&all, ended: true) == .sendUp, "a whole body may end with the client's side")
    }

    @Test func aResponseThatCompletesBeforeTheRequestBodyKeepsNeitherConnection() throws {
        var forward = try exchange("POST http://origin.test/ HTTP/1.1\r\nHost: origin.test\r\nContent-Length: 10\r\n\r\n")
        var bytes = Array("01234".utf8)
        _ = forward.receiveFromClient(&bytes)
        _ = fromOrigin(&forward, "HTTP/1.1 413 Content Too Large\r\nContent-Length: 0\r\n\r\n")
        _ = toClient(&forward)
        #expect(forward.clientCaughtUp() == .complete(reusable: false, keepClient: false, truncated: false),
                "half a request body is still on its way: neither connection can carry another request")
    }

    // MARK: the client's pace, and whether the request may go again

    @Test func aClientFarBehindPausesTheOriginUntilItCatchesUp() throws {
        var forward = try exchange(Self.get11)
        let size = ForwardExchange.bufferLimit + 1000
        _ = fromOrigin(&forward, "HTTP/1.1 200 OK\r\nContent-Length: \(size * 2)\r\n\r\n")
        let readyAtFirst = forward.readyForOrigin()
        #expect(readyAtFirst)
        _ = fromOrigin(&forward, String(repeating: "x", count: size))
        let readyWhenBehind = forward.readyForOrigin()
        #expect(!readyWhenBehind, "more than the buffer waits for the client")
        _ = toClient(&forward)
        #expect(forward.clientCaughtUp() == .resumeOrigin)
        #expect(forward.clientCaughtUp() == nil, "resumed once")
        let readyAgain = forward.readyForOrigin()
        #expect(readyAgain)
    }

    @Test func aRequestMayGoAgainOnlyWithoutABodyAndBeforeAnyOfTheResponse() throws {
        var forward = try exchange(Self.get11)
        #expect(forward.canBeSentAgain)
        _ = fromOrigin(&forward, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n01")
        #expect(forward.canBeSentAgain, "nothing has reached the client yet")
        #expect(!forward.answered)
        _ = forward.writeToClient { bytes in bytes.removeFirst(3) }
        #expect(forward.answered, "three bytes of the head went")
        #expect(!forward.canBeSentAgain)

        let post = try exchange("POST http://origin.test/ HTTP/1.1\r\nHost: origin.test\r\nContent-Length: 2\r\n\r\n")
        #expect(!post.canBeSentAgain, "its body was taken from the client")
    }
}
