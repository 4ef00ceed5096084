import ATSPolicy
import Glibc

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
        let loadContext = context.configuration.context ?? LoadContext.infer(userAgent: head.field(.userAgent))
        let decision = context.configuration.engine.decide(destination, context: loadContext)
        record.decision = decision
        let hasBody = (head.contentLength ?? 0) > 0 || head.chunked
        let enforced = context.configuration.mode == .enforce
        let answered = Delivery.http(keepAlive: head.keepAlive && !hasBody, then: { [self] in nextRequest() })
        switch decision.action {
        case .block:
            // A nil message: the decision's own, formatted when the record is written.
            guard enforce(.block(Reason(decision.reason ?? .cleartextHTTP), message: nil), answered) else { return }
        case .upgrade where enforced && decision.upgradeVia == .upgrade:
            return upgrade(head, destination: destination, decision: decision)
        case .upgrade where enforced && decision.upgradeVia == .redirect:
            let location = "https://" + hostForURL(destination) + portSuffix(destination.port, default: 80)
                + head.originForm
            return respond(.redirect(location: location), answered)
        default:
            break
        }
        openUpstream(destination, pooled: true) { [self] in
            startExchange(head, destination: destination)
        }
    }

    // MARK: one forwarded exchange (client keep-alive)

    /// A forwarded request in flight: the body going up, the response coming down. The handlers
    /// below take it out of `exchange` (`take()`) while they change it and put it back on every way
    /// out: a copy left behind would make each change of a buffer copy the whole buffer first.
    struct Exchange {
        var request: RequestHead
        var destination: Destination
        var body: MessageBody
        var toUpstream: [UInt8]
        var fromUpstream: [UInt8] = []
        var toClient: [UInt8] = []
        var response: ResponseHead?
        var responseBody = MessageBody.none
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
    }

    static let bufferLimit = 256 * 1024

    func startExchange(_ head: RequestHead, destination: Destination) {
        guard let upstream else { return close() }
        state = .relaying
        let rewritten = head.upstreamHead(authority: hostForURL(destination) + portSuffix(destination.port, default: 80))
        exchange = Exchange(request: head, destination: destination, body: MessageBody(head), toUpstream: rewritten,
                            bytesUp: rewritten.count)
        if !takeRequestBody(from: &inbound) { return }
        client.onReadable { [self] in exchangeReadClient() }
        client.onWritable { [self] in exchangeWriteClient() }
        upstream.onReadable { [self] in exchangeReadUpstream() }
        upstream.onWritable { [self] in exchangeWriteUpstream() }
        // Read interest stays on even with the whole body here: a client sends nothing more before
        // its response, and anything it does send early is read into `inbound` and turns the
        // interest off (exchangeReadClient). Off and on again would be two epoll_ctl per request.
        client.wantRead(true)
        upstream.wantRead(true)
        lastActivity = monotonic()
        armIdleTimer()
        exchangeWriteUpstream()
    }

    /// Moves the body's share of `bytes` to the upstream buffer; what follows the body stays (a
    /// pipelined next request). False when the body is malformed (the exchange is then over).
    func takeRequestBody(from bytes: inout [UInt8]) -> Bool {
        guard !bytes.isEmpty, var current = exchange.take() else { return true }
        let taken: Int
        do {
            taken = try bytes.withUnsafeBytes { buffer throws(ChunkedScanner.Malformed) in try current.body.take(buffer) }
        } catch {
            // Part of the request may have reached the origin: that connection is never reused,
            // and nothing the client sent after the bad chunk goes anywhere.
            exchange = nil
            upstreamTLS = nil
            upstream?.close()
            upstream = nil
            let verdict = Verdict.answer(status: 400, .badRequest, message: "malformed chunked request body: \(error)")
            // Once the response has begun to reach the client, it can only be reset.
            if current.answered { client.abort() }
            enforce(verdict, current.answered ? .cut : .close)
            return false
        }
        current.toUpstream += bytes[..<taken]
        current.bytesUp += taken
        bytes.removeFirst(taken)
        exchange = current
        return true
    }

    func exchangeReadClient() {
        guard exchange != nil else { return }
        var fresh: [UInt8] = []
        swap(&fresh, &inbound)
        let outcome = readClient()
        swap(&fresh, &inbound)
        // `fresh` holds what was just read; the body's part goes up, the rest waits in `inbound`.
        guard takeRequestBody(from: &fresh) else { return }
        inbound += fresh
        guard let current = exchange else { return }
        if current.body.isComplete || current.toUpstream.count > Self.bufferLimit { client.wantRead(false) }
        if case .ended = outcome, !current.body.isComplete { return finish() }
        if case .failed = outcome { return finish() }
        exchangeWriteUpstream()
    }

    func exchangeWriteUpstream() {
        guard let upstream, var current = exchange.take() else { return }
        while !current.toUpstream.isEmpty {
            let outcome = current.toUpstream.withUnsafeBytes { upstreamWrite($0) }
            guard case .done(let n)? = outcome else {
                exchange = current
                if outcome == .wouldBlock { return upstream.wantWrite(true) }
                return exchangeFailed("writing to the origin failed")
            }
            current.toUpstream.removeFirst(n)
            lastActivity = monotonic()
        }
        upstream.wantWrite(false)
        if !current.body.isComplete, current.toUpstream.count <= Self.bufferLimit { client.wantRead(true) }
        exchange = current
    }

    func exchangeReadUpstream() {
        guard let upstream, var current = exchange.take() else { return }
        readLoop: while current.toClient.count <= Self.bufferLimit {
            switch upstreamRead(into: loop.scratch) {
            case .done(let n)?:
                current.fromUpstream += UnsafeRawBufferPointer(rebasing: loop.scratch[..<n])
                lastActivity = monotonic()
            case .wouldBlock?:
                break readLoop
            case .endOfFile?:
                current.upstreamEnded = true
                upstream.wantRead(false)
                break readLoop
            case nil:
                exchange = current
                return exchangeFailed("reading from the origin failed")
            }
        }
        if current.toClient.count > Self.bufferLimit {
            upstream.wantRead(false)
            current.upstreamPaused = true
        }
        // The response head: parse and rewrite it once; 1xx interim heads pass through as they are.
        while current.response == nil {
            let parsed = current.fromUpstream.withUnsafeBytes { bytes in
                Result { () throws(ResponseHead.Malformed) in try ResponseHead.parse(bytes) }
            }
            switch parsed {
            case .failure(let error):
                exchange = current
                return exchangeFailed("bad response from the origin: \(error.problem)")
            case .success(nil):
                if current.upstreamEnded {
                    exchange = current
                    return exchangeFailed("the origin closed without a response")
                }
                exchange = current
                return
            case .success(let head?):
                if head.status == 101 {
                    // The proxy never forwards Upgrade, so an origin has nothing to switch to.
                    exchange = current
                    return exchangeFailed("the origin switched protocols (101) though no upgrade was asked for")
                }
                if (100..<200).contains(head.status) {
                    // Interim responses (several may come) pass on rewritten; an HTTP/1.0 client
                    // gets none (RFC 9110 section 15.2).
                    if current.request.minorVersion >= 1 {
                        current.toClient += head.rewritten(keepAlive: true, clientMinorVersion: 1)
                    }
                    current.fromUpstream.removeFirst(head.length)
                    continue
                }
                current.responseBody = MessageBody(response: head, requestMethod: current.request.method)
                let framed: Bool
                if case .untilClose = current.responseBody { framed = false } else { framed = true }
                current.keepClient = current.request.keepAlive && framed
                current.reusable = framed && head.originKeepsConnection
                current.toClient += head.rewritten(keepAlive: current.keepClient,
                                                   clientMinorVersion: current.request.minorVersion)
                current.fromUpstream.removeFirst(head.length)
                current.response = head
                record.status = head.status
            }
        }
        // The body's share goes down; anything after a complete body is a protocol error of the
        // origin, which then does not go back to the pool.
        let taken: Int
        do {
            taken = try current.fromUpstream.withUnsafeBytes { buffer throws(ChunkedScanner.Malformed) in
                try current.responseBody.take(buffer)
            }
        } catch {
            exchange = current
            return exchangeFailed("malformed chunked response from the origin: \(error)")
        }
        if taken < current.fromUpstream.count { current.reusable = false }
        current.bytesDown += taken
        current.toClient += current.fromUpstream[..<taken]
        current.fromUpstream.removeAll(keepingCapacity: true)
        if current.upstreamEnded, !current.responseBody.isComplete {
            current.reusable = false
            if case .untilClose = current.responseBody {} else {
                // Cut short: what reached the client is passed on, then its connection is reset so
                // it cannot take the partial body for a whole one.
                current.keepClient = false
                current.truncated = true
            }
        }
        exchange = current
        if !current.toClient.isEmpty || current.upstreamEnded || current.responseBody.isComplete { exchangeWriteClient() }
    }

    func exchangeWriteClient() {
        guard var current = exchange.take() else { return }
        while !current.toClient.isEmpty {
            let outcome = current.toClient.withUnsafeBytes { try? SystemCall.write(client.fd, $0) }
            guard case .done(let n)? = outcome else {
                exchange = current
                if outcome == .wouldBlock { return client.wantWrite(true) }
                return finish()
            }
            current.toClient.removeFirst(n)
            current.answered = true
        }
        client.wantWrite(false)
        exchange = current
        let responseDone = current.response != nil && (current.responseBody.isComplete || current.upstreamEnded)
        if !responseDone {
            // Reads were paused for backpressure: resume them, and read at once what is waiting.
            if current.upstreamPaused {
                exchange?.upstreamPaused = false
                upstream?.wantRead(true)
                exchangeReadUpstream()
            }
            return
        }
        // The response is complete: the origin connection goes back to the pool or is closed.
        record.bytesUp = current.bytesUp
        record.bytesDown = current.bytesDown
        exchange = nil
        if current.truncated {
            record.action = .error
            record.reason = .upstreamTruncated
            record.message = "the origin closed the connection before the end of the response body"
            log()
            client.abort()
            return close()
        }
        log()
        if current.reusable, !current.upstreamEnded, current.body.isComplete, upstreamTLS == nil, let upstream,
           let upstreamAddress {
            pool.park(upstream, address: upstreamAddress)
        } else {
            upstreamTLS?.shutdown()
            upstream?.close()
        }
        upstreamTLS = nil
        upstream = nil
        if current.keepClient, current.body.isComplete {
            record = LogRecord(time: wallClock(), client: clientAddress, method: "-",
                               enforced: context.configuration.mode == .enforce)
            client.onWritable { [self] in flushAnswer() }
            nextRequest()
        } else {
            close()
        }
    }

    /// The origin failed mid-exchange: 502 if nothing was sent to the client yet, else the client
    /// is reset (what it has is not a whole response).
    func exchangeFailed(_ message: String) {
        let started = exchange?.answered == true
        let failed = exchange
        exchange = nil
        upstreamTLS = nil
        upstream?.close()
        upstream = nil
        // A pooled connection the origin had already closed: retry once on a fresh one, when the
        // request can be sent again (no body, so nothing of it was consumed from the client).
        if !started, upstreamFromPool, let failed, case .none = MessageBody(failed.request) {
            return openUpstream(failed.destination) { [self] in
                startExchange(failed.request, destination: failed.destination)
            }
        }
        if started { client.abort() }
        enforce(.fail(.upstreamProtocol, status: 502, message: message), started ? .cut : .close)
    }

    func nextRequest() {
        if loop.draining { return close() }
        state = .readingHead
        client.onReadable { [self] in readHead() }
        client.wantRead(true)
        arm(after: context.configuration.headTimeout) { [self] in close() }
        if !inbound.isEmpty { readHead() }
    }

}
