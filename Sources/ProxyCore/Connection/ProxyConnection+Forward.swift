import ATSPolicy
import DecisionLog
import EventLoops
import Glibc
import HTTP1
import POSIX
import ProxyAccess
import ProxyAnswers

/// Absolute-form requests: block, redirect, or forward with client keep-alive and pooled origins.
extension ProxyConnection {
    // MARK: absolute-form requests

    /// The device's own traffic (`systemTraffic`) is decided outside the app's policy and never blocked.
    /// `named`: the target as `dispatch` already read it (nil when it did not parse).
    func forward(_ head: RequestHead, named: Destination?) {
        let destination: Destination
        switch named.map { .success($0) } ?? head.absoluteFormDestination {
        case .success(let parsed):
            destination = parsed
        case .failure(let error):
            return respond(.answer(status: 400, .badRequest, message: "request target \(error.description)"))
        }
        guard destination.scheme == .http else {
            return respond(.answer(status: 400, .badRequest,
                                   message: "absolute-form https:// requests are not proxied; use CONNECT"))
        }
        forward(head, to: destination)
    }

    /// A plain request to `destination` (named by an absolute-form target, or on the transparent path
    /// by `Host`): blocked, upgraded, redirected or forwarded as the policy decides.
    func forward(_ head: RequestHead, to destination: Destination) {
        if head.cameThroughThisProxy || isSelf(destination) {
            return respond(.answer(status: 508, .loopDetected, message: "the request would loop through this proxy"))
        }
        let loadContext = generation.configuration.context ?? LoadContext.infer(userAgent: head.field(.userAgent))
        let decision = policy.decide(destination, context: loadContext)
        record.decision = decision
        if systemTraffic != nil {
            exemptSystemTraffic()
            return openUpstream(destination, pooled: true, then: .forward(head))
        }
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

    /// A forwarded request in flight, held by the `exchanging` state: its framing (ForwardExchange)
    /// changes in place, as the inspection's does in InspectionBox.
    final class Exchange {
        var forward: ForwardExchange

        init(_ forward: ForwardExchange) {
            self.forward = forward
        }

        var bytesUp: Int { forward.bytesUp }
        var bytesDown: Int { forward.bytesDown }
    }

    /// The parent that forwarded requests go to in absolute form (an upgrade's TLS runs inside a
    /// CONNECT through it instead, and speaks to the origin).
    var absoluteFormParent: ParentProxy? { upstreamTLS == nil ? parent : nil }

    func startExchange(_ head: RequestHead, destination: Destination) {
        guard let upstream else { return close() }
        // Through a parent: absolute-form, with the parent's credentials (or none) in place of the client's.
        let rewritten = head.upstreamHead(authority: hostForURL(destination) + portSuffix(destination.port, default: 80),
                                          parentAuthorization: absoluteFormParent.map { $0.authorization ?? "" })
        let exchange = Exchange(ForwardExchange(request: head, destination: destination, head: rewritten,
                                                parent: absoluteFormParent))
        enterExchanging(exchange)
        let step = exchange.forward.receiveFromClient(&inbound)
        if case .rejectRequest = step {
            perform(step, exchange)
            return
        }
        // Read interest stays on even with the whole body here: a client sends nothing more before
        // its response, and anything it does send early is read into `inbound` and turns the
        // interest off (exchangeReadClient). Off and on again would be two epoll_ctl per request.
        client.wantRead(true)
        upstream.wantRead(true)
        lastActivity = clock.now()
        armIdleTimer()
        exchangeWriteUpstream()
    }

    func exchangeReadClient() {
        guard case .exchanging(let exchange) = state else { return impossible("a forwarded request's client read") }
        var fresh: [UInt8] = []
        swap(&fresh, &inbound)
        let outcome = readClient()
        swap(&fresh, &inbound)
        // `fresh` holds what was just read; the body's part goes up, the rest waits in `inbound`.
        let step = exchange.forward.receiveFromClient(&fresh, ended: outcome == .ended)
        if case .rejectRequest = step {
            perform(step, exchange)
            return
        }
        inbound += fresh
        if !exchange.forward.wantsClientBytes { client.wantRead(false) }
        if outcome == .failed { return finish() }
        perform(step, exchange)
    }

    func exchangeWriteUpstream() {
        guard case .exchanging(let exchange) = state, let upstream else { return impossible("a forwarded request written") }
        while !exchange.forward.toOrigin.isEmpty {
            let outcome = exchange.forward.toOrigin.withUnsafeBytes { upstreamWrite($0) }
            guard case .done(let n)? = outcome else {
                if outcome == .wouldBlock { return upstream.wantWrite(true) }
                return exchangeFailed("writing to the origin failed")
            }
            exchange.forward.originWrote(n)
            lastActivity = clock.now()
        }
        upstream.wantWrite(false)
        if exchange.forward.wantsClientBytes { client.wantRead(true) }
    }

    func exchangeReadUpstream() {
        guard case .exchanging(let exchange) = state, let upstream else { return impossible("a forwarded response read") }
        guard exchange.forward.readyForOrigin() else {
            upstream.wantRead(false) // the client is behind by more than the buffer: the origin waits for it
            return exchangeWriteClient()
        }
        // What was read goes in read by read; the client is written to once, after the last read.
        var sendDown = false
        while true {
            let steps: ForwardExchange.Steps
            let more: Bool
            switch upstreamRead(into: loop.scratch) {
            case .done(let n)?:
                lastActivity = clock.now()
                steps = exchange.forward.receiveFromOrigin(UnsafeRawBufferPointer(rebasing: loop.scratch[..<n]), ended: false)
                // As for the client: a short plain read took all there was, and the next would only
                // say EAGAIN (one wasted system call per forwarded response). A TLS read returns one
                // record at a time, and the rest may already sit in OpenSSL's buffer, where the
                // poller cannot see it: TLS reads go on until they would block.
                more = upstreamTLS != nil || n == loop.scratch.count
            case .wouldBlock?:
                steps = ForwardExchange.Steps()
                more = false
            case .endOfFile?:
                upstream.wantRead(false)
                steps = exchange.forward.receiveFromOrigin(UnsafeRawBufferPointer(start: nil, count: 0), ended: true)
                more = false
            case nil:
                return exchangeFailed("reading from the origin failed")
            }
            for step in steps {
                if step == .sendDown { sendDown = true } else if !perform(step, exchange) { return }
            }
            if !more { break }
        }
        if sendDown { exchangeWriteClient() }
    }

    func exchangeWriteClient() {
        guard case .exchanging(let exchange) = state else { return impossible("a forwarded response written") }
        if !exchange.forward.toClient.isEmpty || clientHasUnsent {
            switch exchange.forward.writeToClient({ writeClient(&$0) }) {
            case .done: break
            case .wouldBlock: return client.wantWrite(true)
            case .failed: return finish()
            }
        }
        client.wantWrite(false)
        if let step = exchange.forward.clientCaughtUp() { perform(step, exchange) }
    }

    /// Carries out one step of the exchange; false when it ended the exchange (the connection has
    /// moved on: retried, answered, finished or closed).
    @discardableResult
    private func perform(_ step: ForwardExchange.Step, _ exchange: Exchange) -> Bool {
        switch step {
        case .sendUp:
            exchangeWriteUpstream()
        case .sendDown:
            exchangeWriteClient()
        case .responseHead(let status):
            record.status = status
        case .fail(let message, let reason):
            exchangeFailed(message, reason: reason)
            return false
        case .rejectRequest(let message):
            // Part of the request may have reached the origin: that connection is never reused,
            // and nothing the client sent after the bad chunk goes anywhere.
            upstreamTLS = nil
            upstream?.close()
            upstream = nil
            let answered = exchange.forward.answered
            // Once the response has begun to reach the client, it can only be reset.
            if answered { client.abort() }
            enforce(.answer(status: 400, .badRequest, message: message), answered ? .cut : .close)
            return false
        case .clientEnded:
            finish()
            return false
        case .resumeOrigin:
            upstream?.wantRead(true)
            exchangeReadUpstream()
        case .complete(let reusable, let keepClient, let truncated):
            complete(exchange, reusable: reusable, keepClient: keepClient, truncated: truncated)
            return false
        }
        return true
    }

    /// The response is complete: the record is written, the origin connection goes back to the pool
    /// or is closed, and the client waits for its next request or is closed (reset, when truncated).
    private func complete(_ exchange: Exchange, reusable: Bool, keepClient: Bool, truncated: Bool) {
        record.bytesUp = exchange.bytesUp
        record.bytesDown = exchange.bytesDown
        if truncated {
            record.recordFailure(.upstreamTruncated,
                                 message: "the origin closed the connection before the end of the response body")
            log()
            client.abort()
            return close()
        }
        log()
        if reusable, upstreamTLS == nil, let upstream, let upstreamAddress {
            pool.park(upstream, address: upstreamAddress, viaParent: parent != nil)
        } else {
            upstreamTLS?.shutdown()
            upstream?.close()
        }
        upstreamTLS = nil
        upstream = nil
        if keepClient {
            beginRecord("-")
            nextRequest()
        } else {
            close()
        }
    }

    /// The origin failed mid-exchange: 502 if nothing was sent to the client yet, else the client
    /// is reset (what it has is not a whole response).
    func exchangeFailed(_ message: String, reason: Reason = .upstreamProtocol) {
        guard case .exchanging(let failed) = state else { return impossible("a forwarded exchange failed") }
        let started = failed.forward.answered
        upstreamTLS = nil
        upstream?.close()
        upstream = nil
        // A pooled connection the origin had already closed: retry once on a fresh one, when the
        // request can be sent again (no body, so nothing of it was consumed from the client).
        if upstreamFromPool, failed.forward.canBeSentAgain {
            return openUpstream(failed.forward.destination, then: .forward(failed.forward.request))
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
