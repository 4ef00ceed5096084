import ATSPolicy
import DecisionLog
import Dispatch
import EventLoops
import Glibc
import HTTP1
import Inspection
import ProxyAccess
import ProxyAnswers
import TLSClient
import TLSWire
import POSIX

/// One client connection, confined to one serial queue of the event loop. The data flow: request
/// head (here) -> destination -> decision -> verdict (`enforce`, here) -> the origin connected
/// (ProxyConnection+Upstream.swift hands the way there to UpstreamConnector) -> a tunnel (+Tunnel, its
/// handshake watched by +TLS), a forwarded exchange (+Forward), an upgrade to TLS (+Upgrade) or an
/// answer (here).
///
/// Its phases are `State` (ProxyConnection+State.swift), whose cases carry their own data; every
/// change of phase goes through `enter`, which checks it against the transition table, and every
/// binding of a readiness handler is in `bindHandlers`, both in this file. The other files hold what
/// each phase does with the bytes it is handed.
package final class ProxyConnection {
    let generation: Generation
    let queue: DispatchQueue
    let client: Channel
    let clientAddress: SocketAddress
    /// TLS with the client (a TLS listener's connection, once accepted); nil for a plain client, whose
    /// bytes go straight to and from the socket.
    var clientTLS: ClientTLS?
    /// Accepted on a TLS listener (the records' `client_tls`), whether or not the handshake succeeded.
    let onTLSListener: Bool
    /// Accepted on a transparent listener: where it was going (+Transparent); nil on the proxy path.
    let transparent: TransparentArrival?
    /// How a transparent client that does not speak HTTP hears a refusal (a TLS alert, or the close).
    var rawAnswer: RawAnswer?
    private(set) var state = State.accepted
    /// Client bytes read but not yet consumed (the head, then any prefix read with it).
    var inbound: [UInt8] = []
    /// An answer of the proxy's own, being written.
    var outbound: [UInt8] = []
    /// The origin connection, from `connecting` on; in a tunnel, `upstreamTLS` is nil.
    var upstream: Channel?
    /// TLS to the origin (`--cleartext upgrade`); nil for plain TCP.
    var upstreamTLS: TLSConnection?
    /// A certificate verdict is being computed; a record finished meanwhile waits for it.
    var judgementPending = false
    var deferredRecord: DeferredRecord?
    /// The event loop the connection lives on, and the proxy's state kept for that loop.
    let loop: EventLoop
    let proxyLoop: ProxyLoop
    let clock: LoopClock
    let pool: UpstreamPool
    /// The origin address of `upstream`, and whether it came from the pool (a stale pooled
    /// connection earns one retry on a fresh one).
    var upstreamAddress: SocketAddress?
    var upstreamFromPool = false
    /// The parent proxy `upstream` goes through (nil: straight to the origin).
    var parent: ParentProxy?
    /// Last bytes moved, on the monotonic clock (idle timeouts).
    var lastActivity = 0.0
    var record: DecisionRecord
    /// When the current request began, on the monotonic clock (its duration); `record.time` has the wall time.
    var started = monotonic()
    /// The listening port the client reached (`--route port:N`).
    let localPort: Int
    /// The policy (index into the router's apps) of the current request.
    var appIndex = 0
    /// The current request is the device's own traffic (app `system`), decided outside every app's ATS.
    var systemTraffic: SystemTraffic?
    /// The destination ACL of the current request (index into the generation's: 0 global, 1+ a route's).
    var aclIndex = 0
    /// Credentials verified on this connection: a keep-alive client's next requests skip the check.
    var verifiedCredentials: [UInt8]?
    var proxyUser: String?
    /// On its way to an upgrade's new process (ProxyConnection+HandOver.swift): quiesced, waiting
    /// for the answer.
    var handingOver = false

    init(fd: Int32, clientAddress: SocketAddress, localPort: Int, tls: Bool = false, transparent: TransparentArrival? = nil,
         generation: Generation, loop proxyLoop: ProxyLoop) {
        let loop = proxyLoop.loop
        self.localPort = localPort
        onTLSListener = tls
        self.transparent = transparent
        self.generation = generation
        self.loop = loop
        self.proxyLoop = proxyLoop
        self.queue = loop.queue
        self.clock = loop.clock
        self.pool = proxyLoop.pool
        self.clientAddress = clientAddress
        // A connection is made on the loop that owns it (ProxyServer.begin) and never leaves it.
        loop.assertOnLoop()
        client = Channel(fd: fd, poller: loop.poller)
        record = .begin(client: clientAddress, method: "-")
        if transparent != nil { beginRecord("-") }
        proxyLoop.connections[ObjectIdentifier(self)] = self
    }

    // MARK: transitions (the only assignments to `state`)

    /// The one assignment to `state`: a move the transition table does not allow stops a debug build
    /// here, naming both states; then the new state's readiness handlers are bound.
    private func enter(_ next: State) {
        assert(State.allows(from: state.kind, to: next.kind), "illegal transition \(state.kind) -> \(next.kind)")
        state = next
        bindHandlers()
    }

    func enterHandshaking() {
        enter(.handshaking)
        client.wantRead(true)
    }

    func enterReadingHead() {
        enter(.readingHead)
        client.wantRead(true)
    }

    func enterAuthenticating(_ head: RequestHead) { enter(.authenticating(head)) }

    func enterConnecting(_ connector: UpstreamConnector) { enter(.connecting(connector)) }

    func enterParentHandshake(_ handshake: ParentHandshake) { enter(.parentHandshake(handshake)) }

    func enterClassifying() {
        enter(.classifying)
        client.wantRead(true)
    }

    func enterAwaitingTunnelBytes(_ destination: Destination, _ loadContext: LoadContext) {
        enter(.awaitingTunnelBytes(destination, loadContext))
        client.wantRead(true)
    }

    func enterInspecting(_ inspection: InspectionBox) {
        enter(.inspecting(inspection))
        upstream?.wantRead(true)
    }

    func enterUpgrading(_ upgrade: UpgradeState) { enter(.upgrading(upgrade)) }

    func enterExchanging(_ exchange: Exchange) { enter(.exchanging(exchange)) }

    func enterRelaying(up: Pump, down: Pump) { enter(.relaying(up: up, down: down)) }

    func enterRelayingTLS(_ relay: ClientTLSRelay) { enter(.relayingTLS(relay)) }

    /// A relay's callbacks are cut, and a connector's attempts stopped, first: nothing reaches a
    /// closed connection.
    private func enterClosed() {
        if case .connecting(let connector) = state { connector.cancel() }
        if case .relaying(let up, let down) = state {
            for pump in [up, down] {
                pump.onFinish = {}
                pump.onError = { _ in }
                pump.onProgress = {}
            }
        }
        if case .relayingTLS(let relay) = state { relay.detach() }
        enter(.closed)
    }

    /// An event the state machine rules out: a handler called in a state that does not bind it, or
    /// a step of a phase that has already ended. A bug: a debug build stops here; a release build
    /// drops the event, as it always did.
    func impossible(_ event: @autoclosure () -> String, file: StaticString = #fileID, line: UInt = #line) {
        assertionFailure("\(event()) in state \(state.kind)", file: file, line: line)
    }

    /// Every readiness handler, by state: the one place they are bound.
    private func bindHandlers() {
        switch state {
        case .handshaking:
            client.onReadable { [self] in handshakeRead() }
            client.onWritable { [self] in handshakeFlush() }
        case .readingHead:
            client.onReadable { [self] in readHead() }
            client.onWritable {}
        case .classifying:
            client.onReadable { [self] in classifyFirstBytes() }
            client.onWritable {}
        case .connecting, .authenticating:
            // The client normally sends nothing until it has an answer, so its read interest stays
            // on (one epoll_ctl less each way); only if bytes do arrive early is it turned off, and
            // the next phase turns it back on.
            client.onReadable { [client] in client.wantRead(false) }
            client.onWritable {}
        case .parentHandshake:
            client.onReadable { [client] in client.wantRead(false) }
            client.onWritable {}
            upstream?.onReadable { [self] in parentHandshakeRead() }
            upstream?.onWritable { [self] in parentHandshakeWrite() }
        case .answering:
            client.onReadable { [client] in client.wantRead(false) }
            client.onWritable { [self] in flushAnswer() }
        case .awaitingTunnelBytes(let destination, let loadContext):
            client.onReadable { [self] in inspectTunnel(destination: destination, loadContext: loadContext) }
            client.onWritable {}
        case .inspecting:
            client.onReadable { [self] in inspectionReadClient() }
            client.onWritable { [self] in inspectionFlush() }
            upstream?.onReadable { [self] in inspectionReadUpstream() }
            upstream?.onWritable { [self] in inspectionFlush() }
        case .upgrading:
            client.onReadable { [client] in client.wantRead(false) }
            client.onWritable {}
            upstream?.onReadable { [self] in upgradeHandshake() }
            upstream?.onWritable { [self] in upgradeHandshake() }
        case .exchanging:
            client.onReadable { [self] in exchangeReadClient() }
            client.onWritable { [self] in exchangeWriteClient() }
            upstream?.onReadable { [self] in exchangeReadUpstream() }
            upstream?.onWritable { [self] in exchangeWriteUpstream() }
        case .relaying(let up, let down):
            client.onReadable { up.readable() }
            upstream?.onWritable { up.run() }
            upstream?.onReadable { down.readable() }
            client.onWritable { down.run() }
        case .relayingTLS(let relay):
            client.onReadable { relay.clientReadable() }
            upstream?.onWritable { relay.writeUp() }
            upstream?.onReadable { relay.originReadable() }
            client.onWritable { relay.writeDown() }
        case .accepted, .closed:
            break
        }
    }

    var isClosed: Bool { if case .closed = state { true } else { false } }

    /// Starts reading the first request head. Runs on `queue`.
    func start() {
        enterReadingHead()
        arm(after: generation.configuration.timeouts.head) { [self] in headTimedOut() }
    }

    /// The first request head (after the TLS handshake, for a TLS listener's client) took longer
    /// than the head timeout.
    func headTimedOut() {
        if case .handshaking = state {
            let timeout = Int(generation.configuration.timeouts.head)
            return respond(.answer(status: 408, .clientTimeout,
                                   message: "the TLS handshake with the proxy did not complete in \(timeout) s"), .cut)
        }
        enforce(.answer(status: 408, .requestTimeout, message: "no complete request head in time"))
    }

    /// Refuses a client outside --allow-client before reading anything.
    func refuseClient() {
        // A TLS listener's client waits for a ServerHello: a TLS alert is what it can read, and no
        // handshake is spent on it. A transparent client speaks to its origin: it is only closed.
        enforce(.block(.ats(.clientNotAllowed),
                       message: "client \(clientAddress.ip) is not allowed to use this proxy (see --allow-client)"),
                onTLSListener ? .alert(.accessDenied, recordVersion: 0x0303) : transparent != nil ? .cut : .close)
    }

    // MARK: request head

    func readHead() {
        guard case .readingHead = state else { return impossible("a request head read") }
        if proxyLoop.logPaused || generation.daemon.sink.isPaused { return waitForLog() }
        // A client may send its (last) request and its end together: a complete head is still
        // answered; the end is seen again by whatever reads next.
        let outcome = readClient()
        if outcome == .failed || (outcome == .ended && inbound.isEmpty) { return close() }
        let result = inbound.withUnsafeBytes { bytes in
            Result { () throws(RequestHeadError) in try RequestHeadParser.parse(bytes) }
        }
        let head: RequestHead
        switch result {
        case .failure(let error):
            return respond(.answer(status: error.status, .badRequest, message: error.problem))
        case .success(nil):
            if outcome == .ended { return close() } // half a head, and no more coming
            return
        case .success(let parsed?):
            head = parsed
        }
        inbound.removeFirst(head.length)
        started = monotonic()
        beginRecord(head.method)
        disarm()
        route(head)
    }

    /// `--log-overflow pause` and the log is full: no request is read until it drains. The head
    /// timeout waits too (the client is not the slow one).
    private func waitForLog() {
        client.wantRead(false)
        disarm()
        proxyLoop.waitingForLog.append(ObjectIdentifier(self))
    }

    /// The log has drained (ProxyServer): the request head is read again, under a fresh timeout.
    func logDrained() {
        // Only a connection reading a head waits for the log, and one that closes leaves the list.
        guard case .readingHead = state else { return impossible("the log drained") }
        if inbound.isEmpty {
            arm(after: generation.configuration.timeouts.head) { [self] in close() }
        } else {
            arm(after: generation.configuration.timeouts.head) { [self] in
                enforce(.answer(status: 408, .requestTimeout, message: "no complete request head in time"))
            }
        }
        client.wantRead(true)
        if !inbound.isEmpty { readHead() }
    }

    enum ReadOutcome { case wouldBlock, ended, failed }

    /// Reads what the client has sent into `inbound`.
    func readClient() -> ReadOutcome {
        if let clientTLS {
            return clientTLS.read(from: client, scratch: loop.scratch, into: &inbound,
                                  limit: RequestHeadParser.maximumHeadLength + 4)
        }
        while true {
            switch try? SystemCall.read(client.fd, into: loop.scratch) {
            case .done(let n)?:
                inbound.append(contentsOf: UnsafeRawBufferPointer(rebasing: loop.scratch[..<n]))
                if inbound.count > RequestHeadParser.maximumHeadLength + 4 { return .wouldBlock }
                // A short read took all there was: the next read would only say EAGAIN, and the
                // level-triggered poller reports the socket again if more (or its end) arrives.
                if n < loop.scratch.count { return .wouldBlock }
            case .wouldBlock?: return .wouldBlock
            case .endOfFile?: return .ended
            case nil: return .failed
            }
        }
    }

    /// The proxy's own documents first (the PAC file needs no credentials), then the credentials
    /// (--auth-file), then the policy for the request, then what kind of request it is.
    func route(_ head: RequestHead) {
        record.userAgent = head.field(.userAgent)
        // A transparent client speaks to its origin: the proxy's documents and login are not for it.
        if transparent == nil, let document = servedDocument(head) {
            return respond(document, .http(keepAlive: head.keepAlive && !head.hasBody))
        }
        if transparent == nil, let authenticator = generation.authenticator {
            return authenticate(head, authenticator)
        }
        dispatch(head)
    }

    /// Chooses the request's policy (AppRouter) and hands the request to its kind's handler.
    func dispatch(_ head: RequestHead) {
        record.proxyUser = proxyUser
        let named = transparent != nil ? transparentTarget(head) : head.namedDestination
        let system = transparent != nil || head.isAbsoluteForm || head.method == "CONNECT"
            ? generation.configuration.systemTraffic.classify(head, userAgent: record.userAgent, destination: named) : nil
        guard choosePolicy(product: AppRouter.product(ofUserAgent: record.userAgent), target: named, system: system) else { return }
        if transparent != nil {
            return forwardTransparent(head, named: named)
        }
        if head.method == "CONNECT" {
            return connectTunnel(head, named: named)
        }
        if head.isAbsoluteForm {
            return forward(head, named: named)
        }
        let target = head.target
        if target.hasPrefix("/") {
            return respond(.answer(status: 400, .notAProxyRequest, message: "request addressed to the proxy itself",
                                   body: ProxyResponse.usagePage))
        }
        if (try? Destination.parse(authority: target, scheme: .https, portRequired: true)) != nil {
            return respond(.answer(status: 405, .methodNotAllowed,
                                   message: "\(head.method) with an authority-form target; only CONNECT takes one",
                                   headers: [("Allow", "CONNECT")]))
        }
        respond(.answer(status: 400, .badRequest, message: "unsupported request target"))
    }

    /// Chooses the request's policy by the proxy user, the client, the port and the User-Agent's
    /// product; false when none was chosen (answered `no-policy`, the record naming `target`). The
    /// device's own traffic (`system`) is no app's: whatever the routes say, it gets no app's policy.
    func choosePolicy(product: String?, target: Destination?, system: SystemTraffic? = nil) -> Bool {
        systemTraffic = system
        let router = generation.router
        let (selected, kind, route) = router.choose(user: proxyUser, client: clientAddress.ip, port: localPort, product: product)
        // A route's destination ACL holds for all of its clients' traffic, the device's own included.
        aclIndex = route.map { $0 + 1 } ?? 0
        if system != nil {
            record.app = SystemTraffic.app
            record.policy = SystemTraffic.app
            return true
        }
        record.route = kind
        guard let selected else {
            record.target = target
            record.unrouted = true
            let agent = product.map { "User-Agent product '\($0)'" } ?? "no User-Agent product"
            respond(.block(.noPolicy, message: "no policy for this request: no --route matched and no loaded "
                           + "bundle is named by its \(agent); --unrouted is block"))
            return false
        }
        appIndex = selected
        record.app = router.apps[selected].id
        record.policy = router.apps[selected].label
        return true
    }

    // MARK: verdicts and answers

    /// The one place a verdict is applied. It honours --mode (an ATS block in report mode is only
    /// recorded, enforced=false, and the request proceeds), fills the record, answers the client as
    /// `delivery` says, and logs, which counts the metric. Returns true when the request proceeds.
    @discardableResult
    func enforce(_ verdict: Verdict, _ delivery: Delivery = .close) -> Bool {
        let mode = generation.configuration.mode
        // An origin's failure after report mode let an ATS block through is noted after the decision's
        // message (the static enforce), so that message is written first.
        switch verdict {
        case .answer, .fail:
            if mode == .report, record.action == .block, record.reason?.isATSRule == true { fillDecisionMessage() }
        default:
            break
        }
        if ProxyConnection.enforce(verdict, on: &record, mode: mode) { return true }
        var delivery = delivery
        if case .http = delivery, let rawAnswer { delivery = rawAnswer.delivery }
        switch delivery {
        case .http(let keepAlive):
            record.status = verdict.status
            log()
            client.wantRead(false)
            let proxyStatus = ProxyStatus(verdict, record: record).value(name: generation.configuration.proxyName)
            send(ProxyResponse.render(verdict, decisionMessage: record.decision?.message, keepAlive: keepAlive,
                                      proxyStatus: proxyStatus),
                 then: keepAlive ? .nextRequest : .close)
        case .upgrade(let head, let destination, let decision):
            upgrade(head, destination: destination, decision: decision)
        case .alert(let alert, let version):
            var bytes = TLSAlert.fatal(alert, recordVersion: version)
            _ = writeClient(&bytes)
            finish()
        case .cut:
            finish()
        }
        return false
    }

    /// The record's side of `enforce`, also for a QUIC attempt, which has no connection to answer:
    /// the outcome written (honouring --mode); true when the request proceeds.
    static func enforce(_ verdict: Verdict, on record: inout DecisionRecord, mode: ProxyMode) -> Bool {
        switch verdict {
        case .allow:
            return true
        case .note(let reason, let message), .exempt(let reason, let message):
            record.action = .allow
            record.reason = reason
            record.message = message
            return true
        case .block(let reason, let message, let rule):
            // A watched handshake's probe that could not reach or judge the server refuses the tunnel
            // as a block does, but what happened is the origin's failure, not a refusal.
            record.action = reason.isFailure ? .error : .block
            record.reason = reason
            if let message { record.message = message }
            if let rule { record.rule = rule }
            if mode == .report, !reason.enforcedInReportMode { return true }
        case .upgrade, .redirect:
            record.action = .upgrade
            // Report mode forwards the request as it came; the record says it would be upgraded.
            if mode == .report { return true }
        case .challenge(let message):
            // Enforced in report mode too: the proxy's access rule, not ATS.
            record.action = .block
            record.reason = .ats(.authRequired)
            record.message = message
        case .throttle(let message, _):
            record.action = .block
            record.reason = .authThrottled
            record.message = message
        case .serve:
            record.action = .allow
        case .answer(_, let reason, let message, _, _), .fail(let reason, _, let message, _):
            if record.action == .block, record.reason?.isATSRule == true, mode == .report {
                // Report mode let an ATS block through and then the origin failed: the record keeps
                // what the gate is for (it would have been blocked) and says what followed.
                record.appendNote("then \(reason.rawValue): \(message)")
            } else {
                record.action = .error
                record.reason = reason
                record.message = message
            }
        }
        return false
    }

    /// `enforce` for a verdict that ends the request whatever the mode (an answer, a failure, an
    /// access rule), where the caller returns right after.
    func respond(_ verdict: Verdict, _ delivery: Delivery = .close) {
        let proceeds = enforce(verdict, delivery)
        // A verdict that lets the request proceed would leave the connection with nothing to do.
        assert(!proceeds, "respond(\(verdict.action)) let the request proceed")
    }

    /// Queues an answer's bytes and flushes them; then `next`.
    func send(_ bytes: [UInt8], then next: AfterAnswer) {
        enter(.answering(next: next))
        disarm()
        outbound += bytes
        flushAnswer()
    }

    func flushAnswer() {
        guard case .answering(let next) = state else { return impossible("an answer flushed") }
        switch writeClient(&outbound) {
        case .done: break
        case .wouldBlock: return client.wantWrite(true)
        case .failed:
            // A tunnel's record is written when it ends: one whose 200 could not be sent ends here.
            if case .tunnel = next { return finish() }
            return close()
        }
        client.wantWrite(false)
        switch next {
        case .close: close()
        case .nextRequest: nextRequest()
        case .tunnel(let destination, let loadContext): openTunnel(destination, loadContext: loadContext)
        }
    }

    /// Waits for the next request head on a kept-alive client connection.
    func nextRequest() {
        enterReadingHead()
        arm(after: generation.configuration.timeouts.head) { [self] in close() }
        // During an upgrade a plain keep-alive client goes to the new process (even while this one drains).
        if handOverIfUpgrading() { return }
        if proxyLoop.draining { return close() }
        if !inbound.isEmpty { readHead() }
    }

    func log() {
        record.durationMilliseconds = (monotonic() - started) * 1000
        // A record another process froze (an upgrade's) keeps what that process made of it.
        if record.frozen == nil { completeRecord() }
        proxyLoop.write(record, generation)
    }

    /// What a record gets when it is written (or frozen for an upgrade's hand-over).
    func completeRecord() {
        record.clientTLS = onTLSListener
        // Per record, not per connection: a login on a kept-alive connection can change the device.
        let devices = generation.configuration.devices
        if !devices.isEmpty { record.device = devices.name(client: clientAddress.ip, user: proxyUser) }
        // The proxy's own access rules hold in report mode too; only ATS blocks become report-only.
        record.enforced = generation.configuration.mode == .enforce || record.reason?.enforcedInReportMode == true
        fillDecisionMessage()
    }

    /// A record without a message of its own gets its decision's, formatted once per loop and
    /// destination (DecisionMessages).
    private func fillDecisionMessage() {
        if record.message == nil, let decision = record.decision {
            record.message = proxyLoop.decisionMessages.message(for: decision, generation: generation.number, app: appIndex)
        }
    }

    /// Ends a tunnel or forwarded exchange: logs it with its byte counts and closes.
    func finish() {
        switch state {
        case .closed:
            return
        case .exchanging(let exchange):
            record.bytesUp = exchange.bytesUp
            record.bytesDown = exchange.bytesDown
        case .relaying(let up, let down):
            // Plus what a watched handshake wrote itself before the relay took over.
            record.bytesUp += up.bytes
            record.bytesDown += down.bytes
        case .relayingTLS(let relay):
            record.bytesUp += relay.bytesUp
            record.bytesDown += relay.bytesDown
        default:
            break
        }
        if judgementPending {
            record.durationMilliseconds = (monotonic() - started) * 1000
            deferredRecord = DeferredRecord(record)
        } else {
            log()
        }
        close()
    }

    func close() {
        guard !isClosed else { return }
        enterClosed()
        disarm()
        clientTLS?.closeNotify(client)
        client.close()
        upstreamTLS = nil
        upstream?.close()
        upstream = nil
        proxyLoop.connections[ObjectIdentifier(self)] = nil
        proxyLoop.load.subtract(1, ordering: .relaxed)
        generation.connectionClosed()
    }

    /// The daemon is stopping: a connection waiting for a (next) request head with nothing read yet
    /// is closed now; the others finish what they are doing.
    func closeIfIdle() {
        guard !handingOver else { return }
        switch state {
        case .readingHead where inbound.isEmpty, .classifying where inbound.isEmpty, .handshaking: close()
        default: break
        }
    }

    /// The stop's grace period is over: ends the connection with a record saying so (`upgrade`: the
    /// grace period of a process that handed its service to a new binary).
    func endAtShutdown(upgrade: Bool = false) {
        switch state {
        case _ where handingOver:
            return
        case .closed:
            return
        case .readingHead where inbound.isEmpty, .classifying where inbound.isEmpty, .handshaking:
            return close()
        case .relaying, .relayingTLS:
            record.appendNote(upgrade ? "cut: the upgrade's grace period ended" : "cut: the daemon stopped")
            finish()
        default:
            noteUpstreamSoFar()
            let why = upgrade ? "the upgrade's grace period ended" : "the daemon stopped"
            record.recordFailure(.shutdown, message: "\(why) before the connection finished", keepingOutcome: true)
            log()
            close()
        }
    }

    // MARK: timers

    func arm(after seconds: Double, repeating: Bool = false, _ handler: @escaping () -> Void) {
        clock.schedule(self, after: seconds, repeating: repeating, handler)
    }

    func disarm() {
        clock.cancel(self)
    }

    // MARK: helpers

    /// Writes to the client: sealed first for a TLS client, straight to the socket otherwise.
    func writeClient(_ bytes: inout [UInt8]) -> Channel.WriteOutcome {
        guard let clientTLS else { return client.write(&bytes) }
        return clientTLS.write(&bytes, to: client)
    }

    /// Sealed bytes the client's socket has not taken yet (a TLS client only).
    var clientHasUnsent: Bool { clientTLS?.hasUnsent == true }

    /// The policy of the current request.
    /// The device's own traffic proceeds outside the app's policy, its record saying why.
    func exemptSystemTraffic() {
        guard let system = systemTraffic else { return }
        enforce(.exempt(system.isCertificateFetch ? .systemFetch : .systemTraffic, message: system.message))
    }

    var policy: DecisionEngine { systemTraffic == nil ? generation.router.apps[appIndex].engine : generation.systemTraffic }

    func isSelf(_ destination: Destination) -> Bool {
        guard case .address(let ip) = destination.host else { return false }
        let configuration = generation.configuration
        return configuration.listeners.proxy.contains { $0.port == destination.port && ($0.ip == ip) }
            || configuration.listeners.tls.contains { $0.port == destination.port && ($0.ip == ip) }
    }

    func hostForURL(_ destination: Destination) -> String {
        if case .address(let ip) = destination.host, !ip.isIPv4 { return "[\(ip)]" }
        return destination.host.description
    }

    func portSuffix(_ port: Int, default defaultPort: Int) -> String {
        port == defaultPort ? "" : ":\(port)"
    }

}
