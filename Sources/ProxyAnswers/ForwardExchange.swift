import ATSPolicy
import DecisionLog
import HTTP1
import ProxyAccess

/// One forwarded request and its response, as a value with no sockets: the client's and the
/// origin's bytes go in, and what to do comes out as steps, in the shape of TLSInspection. The
/// connection (ProxyConnection+Forward.swift) only executes the steps: it writes `toOrigin` and
/// `toClient`, fills the record, and parks or closes the origin connection.
///
/// The framing it applies: the request body goes up by its own framing and what follows it (a
/// pipelined next request) stays with the client's bytes; the response head is rewritten once, and
/// interim 1xx heads pass on rewritten (none to an HTTP/1.0 client); the body goes down by its framing,
/// its chunked coding removed for an HTTP/1.0 client (whose connection then ends the body); the
/// origin connection is reusable only after a framed body with nothing after it, and a body the origin
/// cut short is reported truncated so the client is reset, never handed a partial body as whole.
package struct ForwardExchange {
    /// What the connection does next.
    package enum Step: Equatable {
        /// Write `toOrigin` to the origin (the request head, then the body as it comes).
        case sendUp
        /// Write `toClient` to the client.
        case sendDown
        /// The final response head arrived: its status is the record's.
        case responseHead(status: Int)
        /// The origin (or the parent in between) broke the exchange: a 502 if nothing has reached the
        /// client yet (`answered`), else the client is reset.
        case fail(String, Reason)
        /// The client's chunked request body is malformed: 400, and the origin connection, which may
        /// have part of the request, is closed.
        case rejectRequest(String)
        /// The client closed before the end of its request body.
        case clientEnded
        /// The client has caught up with an origin paused for it: read the origin again.
        case resumeOrigin
        /// The response has been written whole (or as far as the origin sent it, when `truncated`):
        /// the origin connection can go back to the pool when `reusable`, and the client stays for a
        /// next request when `keepClient`.
        case complete(reusable: Bool, keepClient: Bool, truncated: Bool)
    }

    /// The steps of one origin read: at most two (the final head's status, then what to do with the
    /// bytes), held inline. An array of them was a heap allocation per read of every forwarded
    /// response (about 4% of the proxy's CPU per forwarded request).
    package struct Steps: Equatable, Sequence, ExpressibleByArrayLiteral {
        private var one: Step?
        private var two: Step?

        package init() {}

        package init(_ step: Step) { one = step }

        /// For the tests' literals; the exchange itself builds its steps with `init` and `append`.
        package init(arrayLiteral steps: Step...) {
            for step in steps { append(step) }
        }

        package mutating func append(_ step: Step) {
            if one == nil { one = step } else {
                precondition(two == nil, "an origin read gives at most two steps")
                two = step
            }
        }

        package var isEmpty: Bool { one == nil }
        package var first: Step? { one }
        package var last: Step? { two ?? one }

        package struct Iterator: IteratorProtocol {
            fileprivate var rest: Steps

            package mutating func next() -> Step? {
                defer { (rest.one, rest.two) = (rest.two, nil) }
                return rest.one
            }
        }

        package func makeIterator() -> Iterator { Iterator(rest: self) }
    }

    /// Bytes held for one side above which the other side's reading pauses.
    package static let bufferLimit = 256 * 1024

    package let request: RequestHead
    package let destination: Destination
    /// The parent proxy the request goes to in absolute form: a 407 is that parent's own challenge.
    package let parent: ParentProxy?
    private var requestBody: MessageBody
    /// Bytes for the origin not yet written: the rewritten request head, then the body.
    package private(set) var toOrigin: [UInt8]
    /// Bytes for the client not yet written: rewritten heads and the body.
    package private(set) var toClient: [UInt8] = []
    /// The start of a response head that is not whole yet.
    private var heldHead: [UInt8] = []
    package private(set) var response: ResponseHead?
    private var responseBody = MessageBody.none
    /// The client gets the chunk data only (an HTTP/1.0 client: ResponseHead.removesChunking).
    private var dechunk = false
    private var keepClient = false
    /// The origin connection can go back to the pool after this response.
    private var reusable = false
    package private(set) var originEnded = false
    /// The origin closed before the body's framing said it would end.
    private var truncated = false
    /// Some of the response has reached the client: a failure can no longer become a 502.
    package private(set) var answered = false
    private var originPaused = false
    package private(set) var bytesUp: Int
    package private(set) var bytesDown = 0

    /// `head`: the request head as it goes up (rewritten for the origin or the parent).
    package init(request: RequestHead, destination: Destination, head: [UInt8], parent: ParentProxy?) {
        self.request = request
        self.destination = destination
        self.parent = parent
        requestBody = MessageBody(request)
        toOrigin = head
        bytesUp = head.count
    }

    // MARK: the client's side

    /// Moves the request body's share of `bytes` to `toOrigin`; what follows the body stays in
    /// `bytes` (a pipelined next request). `ended`: the client has closed its side.
    package mutating func receiveFromClient(_ bytes: inout [UInt8], ended: Bool = false) -> Step {
        if !bytes.isEmpty {
            let taken: Int
            do {
                taken = try bytes.withUnsafeBytes { buffer throws(ChunkedScanner.Malformed) in try requestBody.take(buffer) }
            } catch {
                return .rejectRequest("malformed chunked request body: \(error)")
            }
            toOrigin += bytes[..<taken]
            bytesUp += taken
            bytes.removeFirst(taken)
        }
        if ended, !requestBody.isComplete { return .clientEnded }
        return .sendUp
    }

    /// More of the request body is wanted, and the origin is not too far behind to take it.
    package var wantsClientBytes: Bool { !requestBody.isComplete && toOrigin.count <= Self.bufferLimit }

    /// The first `count` bytes of `toOrigin` were written.
    package mutating func originWrote(_ count: Int) {
        toOrigin.removeFirst(count)
    }

    // MARK: the origin's side

    /// False while more than the buffer limit waits for the client: the origin is then paused until
    /// the client catches up (`clientCaughtUp` says `resumeOrigin`).
    package mutating func readyForOrigin() -> Bool {
        guard toClient.count > Self.bufferLimit else { return true }
        originPaused = true
        return false
    }

    /// Takes what the origin sent (`ended`: and that it closed): the response head, then the body's
    /// share. Anything after a complete body is the origin's protocol error, dropped, and its
    /// connection then does not go back to the pool.
    package mutating func receiveFromOrigin(_ bytes: UnsafeRawBufferPointer, ended: Bool) -> Steps {
        if ended { originEnded = true }
        guard response == nil, !heldHead.isEmpty else { return receive(bytes) }
        var held: [UInt8] = []
        swap(&held, &heldHead)
        held.append(contentsOf: bytes)
        return held.withUnsafeBytes { receive($0) }
    }

    private mutating func receive(_ bytes: UnsafeRawBufferPointer) -> Steps {
        var steps = Steps()
        var offset = 0
        while response == nil {
            let rest = UnsafeRawBufferPointer(rebasing: bytes[offset...])
            let parsed = Result { () throws(ResponseHead.Malformed) in try ResponseHead.parse(rest) }
            switch parsed {
            case .failure(let error):
                return Steps(.fail("bad response from the origin: \(error.problem)", .upstreamProtocol))
            case .success(nil):
                if originEnded { return Steps(.fail("the origin closed without a response", .upstreamProtocol)) }
                heldHead = Array(rest)
                // Interim heads read so far go to the client now: one that sent Expect: 100-continue
                // waits for its 100 before it sends the body.
                return toClient.isEmpty ? Steps() : Steps(.sendDown)
            case .success(let head?):
                offset += head.length
                if let refusal = refusal(head) { return Steps(refusal) }
                if (100..<200).contains(head.status) {
                    // Interim responses (several may come) pass on rewritten; an HTTP/1.0 client gets
                    // none (RFC 9110 section 15.2).
                    if request.minorVersion >= 1 { toClient += head.rewritten(keepAlive: true, clientMinorVersion: 1) }
                    continue
                }
                begin(head)
                steps.append(.responseHead(status: head.status))
            }
        }
        let body = UnsafeRawBufferPointer(rebasing: bytes[offset...])
        var framing = responseBody
        let taken: Int
        do {
            defer { responseBody = framing }
            if dechunk {
                taken = try framing.take(body) { toClient.append(contentsOf: UnsafeRawBufferPointer(rebasing: body[$0])) }
            } else {
                taken = try framing.take(body)
                toClient.append(contentsOf: UnsafeRawBufferPointer(rebasing: body[..<taken]))
            }
        } catch {
            steps.append(.fail("malformed chunked response from the origin: \(error)", .upstreamProtocol))
            return steps
        }
        if taken < body.count { reusable = false }
        bytesDown += taken
        if originEnded, !responseBody.isComplete {
            reusable = false
            if case .untilClose = responseBody {} else {
                // Cut short: what reached the client is passed on, then its connection is reset so
                // it cannot take the partial body for a whole one.
                keepClient = false
                truncated = true
            }
        }
        if !toClient.isEmpty || originEnded || responseBody.isComplete { steps.append(.sendDown) }
        return steps
    }

    /// A head that ends the exchange: the parent's own challenge, or a switch nobody asked for.
    private func refusal(_ head: ResponseHead) -> Step? {
        if head.status == 407, let parent {
            // The parent's own challenge: the client's credentials are never the parent's.
            let credentials = parent.user.map { "refused the credentials of user '\($0)'" }
                ?? "wants credentials (give them in --parent http://USER:PASSWORD@HOST:PORT)"
            return .fail("the parent proxy \(parent) \(credentials): \(head.statusLine)", .parentAuth)
        }
        if head.status == 101 {
            // The proxy never forwards Upgrade, so an origin has nothing to switch to.
            return .fail("the origin switched protocols (101) though no upgrade was asked for", .upstreamProtocol)
        }
        return nil
    }

    /// The final head: how its body is framed, and what becomes of both connections after it.
    private mutating func begin(_ head: ResponseHead) {
        responseBody = MessageBody(response: head, requestMethod: request.method)
        let framed: Bool
        if case .untilClose = responseBody { framed = false } else { framed = true }
        dechunk = head.removesChunking(forClientMinorVersion: request.minorVersion)
        // Without its chunked coding, the body ends where the client connection does.
        keepClient = request.keepAlive && framed && !dechunk
        reusable = framed && head.originKeepsConnection
        toClient += head.rewritten(keepAlive: keepClient, clientMinorVersion: request.minorVersion)
        response = head
    }

    // MARK: writing to the client

    /// Hands `toClient` to `write`, which removes what it wrote; once any of it is written, the
    /// client has begun to get the response.
    package mutating func writeToClient<Outcome>(_ write: (inout [UInt8]) -> Outcome) -> Outcome {
        let pending = toClient.count
        let outcome = write(&toClient)
        if toClient.count < pending { answered = true }
        return outcome
    }

    /// Everything for the client so far is written: the exchange is complete once the response is,
    /// else an origin paused for the client resumes (nil: wait for the origin).
    package mutating func clientCaughtUp() -> Step? {
        guard response != nil, responseBody.isComplete || originEnded else {
            guard originPaused else { return nil }
            originPaused = false
            return .resumeOrigin
        }
        return .complete(reusable: reusable && !originEnded && requestBody.isComplete,
                         keepClient: keepClient && requestBody.isComplete, truncated: truncated)
    }

    /// Nothing of the request beyond its head was taken from the client (it has no body), and nothing
    /// of the response has reached it: the request can be sent again on a fresh connection.
    package var canBeSentAgain: Bool {
        guard !answered, case .none = MessageBody(request) else { return false }
        return true
    }
}

extension ResponseHead {
    /// "407 Proxy Authentication Required", as the next hop wrote it.
    package var statusLine: String {
        let text = String(decoding: bytes[reason], as: UTF8.self)
        return text.isEmpty ? "\(status)" : "\(status) \(text)"
    }
}
