import ATSPolicy
import DecisionLog
import EventLoops
import Glibc
import HTTP1
import POSIX
import ProxyAccess

/// Absolute-form requests: block, redirect, or forward with client keep-alive and pooled origins.
extension ProxyConnection {
    // MARK: absolute-form requests

    func forward(_ head: RequestHead) {
        let destination: Destination
        switch head.absoluteFormDestination {
        case .success(let parsed):
            destination = parsed
        case .failure(let error):
            return respond(.answer(status: 400, .badRequest, message: "request target \(error.description)"))
        }
        guard destination.scheme == .http else {
            return respond(.answer(status: 400, .badRequest,
                                   message: "absolute-form https:// requests are not proxied; use CONNECT"))
        }
        if head.cameThroughThisProxy || isSelf(destination) {
            return respond(.answer(status: 508, .loopDetected, message: "the request would loop through this proxy"))
        }
        let loadContext = generation.configuration.context ?? LoadContext.infer(userAgent: head.field(.userAgent))
        let decision = policy.decide(destination, context: loadContext)
        record.decision = decision
        let hasBody = (head.contentLength ?? 0) > 0 || head.chunked
        let answered = Delivery.http(keepAlive: head.keepAlive && !hasBody)
        switch decision.action {
        case .block:
            // A nil message: the decision's own, formatted when the record is written.
            guard enforce(.block(Reason(decision.reason ?? .cleartextHTTP), message: nil), answered) else { return }
        case .upgrade where decision.upgradeVia == .upgrade:
            guard enforce(.upgrade, .upgrade(head, destination, decision)) else { return }
        case .upgrade where decision.upgradeVia == .redirect:
            let location = "https://" + hostForURL(destination) + portSuffix(destination.port, default: 80)
                + head.originForm
            guard enforce(.redirect(location: location), answered) else { return }
        default:
            break
        }
        openUpstream(destination, pooled: true, then: .forward(head))
    }

    // MARK: one forwarded exchange (client keep-alive)

    /// A forwarded request in flight: the body going up, the response coming down. A class, held by
    /// the `exchanging` state: its buffers change in place.
    final class Exchange {
        let request: RequestHead
        let destination: Destination
        var body: MessageBody
        var toUpstream: [UInt8]
        var fromUpstream: [UInt8] = []
        var toClient: [UInt8] = []
        var response: ResponseHead?
        var responseBody = MessageBody.none
        /// The client gets the chunk data only (an HTTP/1.0 client: ResponseHead.removesChunking).
        var dechunk = false
        var keepClient = false
        /// The origin connection can go back to the pool after this response.
        var reusable = false
        var upstreamEnded = false
        /// The origin closed before the body's framing said it would end.
        var truncated = false
        /// Some of the response has reached the client: a failure can no longer become a 502.
        var answered = false
        var upstreamPaused = false
        var bytesUp = 0
        var bytesDown = 0

        init(request: RequestHead, destination: Destination, head: [UInt8]) {
            self.request = request
            self.destination = destination
            body = MessageBody(request)
            toUpstream = head
            bytesUp = head.count
        }
    }

    static let bufferLimit = 256 * 1024

    /// The parent that forwarded requests go to in absolute form (an upgrade's TLS runs inside a
    /// CONNECT through it instead, and speaks to the origin).
    var absoluteFormParent: ParentProxy? { upstreamTLS == nil ? parent : nil }

    func startExchange(_ head: RequestHead, destination: Destination) {
        guard let upstream else { return close() }
        // Through a parent: absolute-form, with the parent's credentials (or none) in place of the client's.
        let rewritten = head.upstreamHead(authority: hostForURL(destination) + portSuffix(destination.port, default: 80),
                                          parentAuthorization: absoluteFormParent.map { $0.authorization ?? "" })
        let exchange = Exchange(request: head, destination: destination, head: rewritten)
        enterExchanging(exchange)
        if !takeRequestBody(from: &inbound, exchange) { return }
        // Read interest stays on even with the whole body here: a client sends nothing more before
        // its response, and anything it does send early is read into `inbound` and turns the
        // interest off (exchangeReadClient). Off and on again would be two epoll_ctl per request.
        client.wantRead(true)
        upstream.wantRead(true)
        lastActivity = clock.now()
        armIdleTimer()
        exchangeWriteUpstream()
    }

    /// Moves the body's share of `bytes` to the upstream buffer; what follows the body stays (a
    /// pipelined next request). False when the body is malformed (the exchange is then over).
    private func takeRequestBody(from bytes: inout [UInt8], _ exchange: Exchange) -> Bool {
        guard !bytes.isEmpty else { return true }
        let taken: Int
        do {
            taken = try bytes.withUnsafeBytes { buffer throws(ChunkedScanner.Malformed) in try exchange.body.take(buffer) }
        } catch {
            // Part of the request may have reached the origin: that connection is never reused,
            // and nothing the client sent after the bad chunk goes anywhere.
            upstreamTLS = nil
            upstream?.close()
            upstream = nil
            let verdict = Verdict.answer(status: 400, .badRequest, message: "malformed chunked request body: \(error)")
            // Once the response has begun to reach the client, it can only be reset.
            if exchange.answered { client.abort() }
            enforce(verdict, exchange.answered ? .cut : .close)
            return false
        }
        exchange.toUpstream += bytes[..<taken]
        exchange.bytesUp += taken
        bytes.removeFirst(taken)
        return true
    }

    func exchangeReadClient() {
        guard case .exchanging(let exchange) = state else { return impossible("a forwarded request's client read") }
        var fresh: [UInt8] = []
        swap(&fresh, &inbound)
        let outcome = readClient()
        swap(&fresh, &inbound)
        // `fresh` holds what was just read; the body's part goes up, the rest waits in `inbound`.
        guard takeRequestBody(from: &fresh, exchange) else { return }
        inbound += fresh
        if exchange.body.isComplete || exchange.toUpstream.count > Self.bufferLimit { client.wantRead(false) }
        if case .ended = outcome, !exchange.body.isComplete { return finish() }
        if case .failed = outcome { return finish() }
        exchangeWriteUpstream()
    }

    func exchangeWriteUpstream() {
        guard case .exchanging(let exchange) = state, let upstream else { return impossible("a forwarded request written") }
        while !exchange.toUpstream.isEmpty {
            let outcome = exchange.toUpstream.withUnsafeBytes { upstreamWrite($0) }
            guard case .done(let n)? = outcome else {
                if outcome == .wouldBlock { return upstream.wantWrite(true) }
                return exchangeFailed("writing to the origin failed")
            }
            exchange.toUpstream.removeFirst(n)
            lastActivity = clock.now()
        }
        upstream.wantWrite(false)
        if !exchange.body.isComplete, exchange.toUpstream.count <= Self.bufferLimit { client.wantRead(true) }
    }

    func exchangeReadUpstream() {
        guard case .exchanging(let exchange) = state, let upstream else { return impossible("a forwarded response read") }
        readLoop: while exchange.toClient.count <= Self.bufferLimit {
            switch upstreamRead(into: loop.scratch) {
            case .done(let n)?:
                exchange.fromUpstream += UnsafeRawBufferPointer(rebasing: loop.scratch[..<n])
                lastActivity = clock.now()
                // As for the client: a short plain read took all there was, and the next would only
                // say EAGAIN (one wasted system call per forwarded response). A TLS read returns one
                // record at a time, and the rest may already sit in OpenSSL's buffer, where the
                // poller cannot see it: TLS reads go on until they would block.
                if upstreamTLS == nil, n < loop.scratch.count { break readLoop }
            case .wouldBlock?:
                break readLoop
            case .endOfFile?:
                exchange.upstreamEnded = true
                upstream.wantRead(false)
                break readLoop
            case nil:
                return exchangeFailed("reading from the origin failed")
            }
        }
        if exchange.toClient.count > Self.bufferLimit {
            upstream.wantRead(false)
            exchange.upstreamPaused = true
        }
        // The response head: parse and rewrite it once; 1xx interim heads pass on rewritten.
        while exchange.response == nil {
            let parsed = exchange.fromUpstream.withUnsafeBytes { bytes in
                Result { () throws(ResponseHead.Malformed) in try ResponseHead.parse(bytes) }
            }
            switch parsed {
            case .failure(let error):
                return exchangeFailed("bad response from the origin: \(error.problem)")
            case .success(nil):
                if exchange.upstreamEnded { return exchangeFailed("the origin closed without a response") }
                return
            case .success(let head?):
                if head.status == 407, let parent = absoluteFormParent {
                    // The parent's own challenge: the client's credentials are never the parent's.
                    let credentials = parent.user.map { "refused the credentials of user '\($0)'" }
                        ?? "wants credentials (give them in --parent http://USER:PASSWORD@HOST:PORT)"
                    return exchangeFailed("the parent proxy \(parent) \(credentials): \(Self.statusLine(head))",
                                          reason: .parentAuth)
                }
                if head.status == 101 {
                    // The proxy never forwards Upgrade, so an origin has nothing to switch to.
                    return exchangeFailed("the origin switched protocols (101) though no upgrade was asked for")
                }
                if (100..<200).contains(head.status) {
                    // Interim responses (several may come) pass on rewritten; an HTTP/1.0 client
                    // gets none (RFC 9110 section 15.2).
                    if exchange.request.minorVersion >= 1 {
                        exchange.toClient += head.rewritten(keepAlive: true, clientMinorVersion: 1)
                    }
                    exchange.fromUpstream.removeFirst(head.length)
                    continue
                }
                exchange.responseBody = MessageBody(response: head, requestMethod: exchange.request.method)
                let framed: Bool
                if case .untilClose = exchange.responseBody { framed = false } else { framed = true }
                exchange.dechunk = head.removesChunking(forClientMinorVersion: exchange.request.minorVersion)
                // Without its chunked coding, the body ends where the client connection does.
                exchange.keepClient = exchange.request.keepAlive && framed && !exchange.dechunk
                exchange.reusable = framed && head.originKeepsConnection
                exchange.toClient += head.rewritten(keepAlive: exchange.keepClient,
                                                    clientMinorVersion: exchange.request.minorVersion)
                exchange.fromUpstream.removeFirst(head.length)
                exchange.response = head
                record.status = head.status
            }
        }
        // The body's share goes down; anything after a complete body is a protocol error of the
        // origin, which then does not go back to the pool.
        let taken: Int
        do {
            taken = try exchange.fromUpstream.withUnsafeBytes { buffer throws(ChunkedScanner.Malformed) in
                guard exchange.dechunk else { return try exchange.responseBody.take(buffer) }
                return try exchange.responseBody.take(buffer) { exchange.toClient += buffer[$0] }
            }
        } catch {
            return exchangeFailed("malformed chunked response from the origin: \(error)")
        }
        if taken < exchange.fromUpstream.count { exchange.reusable = false }
        exchange.bytesDown += taken
        if !exchange.dechunk { exchange.toClient += exchange.fromUpstream[..<taken] }
        exchange.fromUpstream.removeAll(keepingCapacity: true)
        if exchange.upstreamEnded, !exchange.responseBody.isComplete {
            exchange.reusable = false
            if case .untilClose = exchange.responseBody {} else {
                // Cut short: what reached the client is passed on, then its connection is reset so
                // it cannot take the partial body for a whole one.
                exchange.keepClient = false
                exchange.truncated = true
            }
        }
        if !exchange.toClient.isEmpty || exchange.upstreamEnded || exchange.responseBody.isComplete {
            exchangeWriteClient()
        }
    }

    func exchangeWriteClient() {
        guard case .exchanging(let exchange) = state else { return impossible("a forwarded response written") }
        if !exchange.toClient.isEmpty || clientHasUnsent {
            let pending = exchange.toClient.count
            let outcome = writeClient(&exchange.toClient)
            if exchange.toClient.count < pending { exchange.answered = true }
            switch outcome {
            case .done: break
            case .wouldBlock: return client.wantWrite(true)
            case .failed: return finish()
            }
        }
        client.wantWrite(false)
        let responseDone = exchange.response != nil && (exchange.responseBody.isComplete || exchange.upstreamEnded)
        if !responseDone {
            // Reads were paused for backpressure: resume them, and read at once what is waiting.
            if exchange.upstreamPaused {
                exchange.upstreamPaused = false
                upstream?.wantRead(true)
                exchangeReadUpstream()
            }
            return
        }
        // The response is complete: the origin connection goes back to the pool or is closed.
        record.bytesUp = exchange.bytesUp
        record.bytesDown = exchange.bytesDown
        if exchange.truncated {
            record.action = .error
            record.reason = .upstreamTruncated
            record.message = "the origin closed the connection before the end of the response body"
            log()
            client.abort()
            return close()
        }
        log()
        if exchange.reusable, !exchange.upstreamEnded, exchange.body.isComplete, upstreamTLS == nil, let upstream,
           let upstreamAddress {
            pool.park(upstream, address: upstreamAddress, viaParent: parent != nil)
        } else {
            upstreamTLS?.shutdown()
            upstream?.close()
        }
        upstreamTLS = nil
        upstream = nil
        if exchange.keepClient, exchange.body.isComplete {
            record = DecisionRecord(time: wallClock(), client: clientAddress, method: "-")
            nextRequest()
        } else {
            close()
        }
    }

    /// The origin failed mid-exchange: 502 if nothing was sent to the client yet, else the client
    /// is reset (what it has is not a whole response).
    func exchangeFailed(_ message: String, reason: Reason = .upstreamProtocol) {
        guard case .exchanging(let failed) = state else { return impossible("a forwarded exchange failed") }
        let started = failed.answered
        upstreamTLS = nil
        upstream?.close()
        upstream = nil
        // A pooled connection the origin had already closed: retry once on a fresh one, when the
        // request can be sent again (no body, so nothing of it was consumed from the client).
        if !started, upstreamFromPool, case .none = MessageBody(failed.request) {
            return openUpstream(failed.destination, then: .forward(failed.request))
        }
        if started { client.abort() }
        // Through a parent, what comes back is the parent's HTTP (it answers an origin's garbage with
        // an error of its own): garbage here is the parent's.
        if let parent = absoluteFormParent, reason == .upstreamProtocol {
            generation.daemon.parentHealth.markDown(parent)
            enforce(.fail(.parentProtocol, status: 502, message: "the parent proxy \(parent): \(message)"),
                    started ? .cut : .close)
            return
        }
        enforce(.fail(reason, status: 502, message: message), started ? .cut : .close)
    }
}
