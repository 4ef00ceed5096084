import ATSPolicy
import Dispatch
import EventLoop
import Glibc
import HTTP1
import ProxyAccess
import TLSClient
import TLSWire
import POSIX

/// One client connection, confined to one serial queue of the event loop. The data flow: request
/// head (here) -> destination -> decision -> verdict (`enforce`, here) -> a tunnel
/// (ProxyConnection+Tunnel.swift, its handshake watched by +TLS), a forwarded exchange (+Forward), an
/// upgrade to TLS (+Upgrade) or an answer (here).
///
/// Its phases are `State`, whose cases carry their own data; every change of phase, and every
/// binding of a readiness handler, is in this file (`enter...` and `bindHandlers`). The other files
/// hold what each phase does with the bytes it is handed.
package final class ProxyConnection {
    /// The legal transitions:
    /// - readingHead -> answering (a verdict, an error, a PAC file, a 407) | authenticating
    ///   | connecting (a tunnel, a forward, an upgrade)
    /// - authenticating -> answering (a 407, a verdict) | connecting
    /// - connecting -> answering (a failure, the CONNECT 200) | exchanging (forward) | upgrading
    /// - answering -> readingHead (keep-alive) | awaitingTunnelBytes (after the 200) | closed
    /// - awaitingTunnelBytes -> inspecting (a TLS ClientHello) | relaying (anything else) | closed
    /// - inspecting -> relaying (released) | closed (refused, ended)
    /// - upgrading -> exchanging | answering (a failure)
    /// - exchanging -> readingHead (keep-alive) | connecting (one retry of a stale pooled origin)
    ///   | answering (a failure before any of the response) | closed
    /// - relaying -> closed
    /// Any state -> closed.
    enum State {
        /// Waiting for (the rest of) a request head in `inbound`.
        case readingHead
        /// The request's credentials are being checked on the blocking pool (a slow hash).
        indirect case authenticating(RequestHead)
        /// Resolving and connecting to the origin; then what `next` says.
        indirect case connecting(Destination, next: AfterConnect)
        /// Writing an answer of the proxy's own (`outbound`); then what `next` says.
        indirect case answering(next: AfterAnswer)
        /// A tunnel is open: its first client bytes tell TLS from cleartext.
        indirect case awaitingTunnelBytes(Destination, LoadContext)
        /// Watching the tunnel's TLS handshake.
        case inspecting(InspectionState)
        /// TLS to the origin for `--cleartext upgrade`, before the request goes up.
        case upgrading(UpgradeState)
        /// One forwarded request and its response.
        case exchanging(Exchange)
        /// Bytes move both ways by splice: up (client to origin) and down.
        case relaying(up: Pump, down: Pump)
        case closed
    }

    /// What follows a successful connection to the origin.
    enum AfterConnect {
        case tunnel(LoadContext)
        case forward(RequestHead)
        case upgrade(RequestHead, Decision, original: Destination)
    }

    /// What follows an answer once it is written.
    enum AfterAnswer {
        case close
        case nextRequest
        case tunnel(Destination, LoadContext)
    }

    let context: ProxyContext
    let queue: DispatchQueue
    let client: Channel
    let clientAddress: SocketAddress
    private(set) var state = State.readingHead
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
    /// (In an array: an inline optional record would make every connection carry a second one.)
    var deferredRecord: [LogRecord] = []
    /// The event loop the connection lives on, and the proxy's state kept for that loop.
    let loop: EventLoop
    let proxyLoop: ProxyLoop
    let clock: LoopClock
    let pool: UpstreamPool
    /// The origin address of `upstream`, and whether it came from the pool (a stale pooled
    /// connection earns one retry on a fresh one).
    var upstreamAddress: SocketAddress?
    var upstreamFromPool = false
    /// Last bytes moved, on the monotonic clock (idle timeouts).
    var lastActivity = 0.0
    var record: LogRecord
    /// When the current request began, on the monotonic clock (its duration); `record.time` has the wall time.
    var started = monotonic()
    /// The listening port the client reached (`--route port:N`).
    let localPort: Int
    /// The policy (index into the router's apps) of the current request.
    var app = 0
    /// Credentials verified on this connection: a keep-alive client's next requests skip the check.
    var verifiedCredentials: [UInt8]?
    var proxyUser: String?

    init(fd: Int32, clientAddress: SocketAddress, localPort: Int, context: ProxyContext, loop proxyLoop: ProxyLoop) {
        let loop = proxyLoop.loop
        self.localPort = localPort
        self.context = context
        self.loop = loop
        self.proxyLoop = proxyLoop
        self.queue = loop.queue
        self.clock = loop.clock
        self.pool = proxyLoop.pool
        self.clientAddress = clientAddress
        client = Channel(fd: fd, poller: loop.poller)
        record = LogRecord(time: wallClock(), client: clientAddress, method: "-")
        proxyLoop.connections[ObjectIdentifier(self)] = self
    }

    // MARK: transitions (the only assignments to `state`)

    func enterReadingHead() {
        state = .readingHead
        bindHandlers()
        client.wantRead(true)
    }

    func enterAuthenticating(_ head: RequestHead) {
        state = .authenticating(head)
        bindHandlers()
    }

    func enterConnecting(_ destination: Destination, next: AfterConnect) {
        state = .connecting(destination, next: next)
        bindHandlers()
    }

    func enterAnswering(next: AfterAnswer) {
        state = .answering(next: next)
        bindHandlers()
    }

    func enterAwaitingTunnelBytes(_ destination: Destination, _ loadContext: LoadContext) {
        state = .awaitingTunnelBytes(destination, loadContext)
        bindHandlers()
        client.wantRead(true)
    }

    func enterInspecting(_ inspection: InspectionState) {
        state = .inspecting(inspection)
        bindHandlers()
        upstream?.wantRead(true)
    }

    func enterUpgrading(_ upgrade: UpgradeState) {
        state = .upgrading(upgrade)
        bindHandlers()
    }

    func enterExchanging(_ exchange: Exchange) {
        state = .exchanging(exchange)
        bindHandlers()
    }

    func enterRelaying(up: Pump, down: Pump) {
        state = .relaying(up: up, down: down)
        bindHandlers()
    }

    private func enterClosed() {
        if case .relaying(let up, let down) = state {
            for pump in [up, down] {
                pump.onFinish = {}
                pump.onError = { _ in }
                pump.onProgress = {}
            }
        }
        state = .closed
    }

    /// Every readiness handler, by state: the one place they are bound.
    private func bindHandlers() {
        switch state {
        case .readingHead:
            client.onReadable { [self] in readHead() }
            client.onWritable {}
        case .connecting, .authenticating:
            // The client normally sends nothing until it has an answer, so its read interest stays
            // on (one epoll_ctl less each way); only if bytes do arrive early is it turned off, and
            // the next phase turns it back on.
            client.onReadable { [client] in client.wantRead(false) }
            client.onWritable {}
        case .answering:
            client.onReadable { [client] in client.wantRead(false) }
            client.onWritable { [self] in flushAnswer() }
        case .awaitingTunnelBytes(let destination, let loadContext):
            client.onReadable { [self] in inspectTunnel(destination: destination, context: loadContext) }
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
        case .closed:
            break
        }
    }

    var isClosed: Bool { if case .closed = state { true } else { false } }

    /// Starts reading the first request head. Runs on `queue`.
    func start() {
        enterReadingHead()
        arm(after: context.configuration.headTimeout) { [self] in
            enforce(.answer(status: 408, .requestTimeout, message: "no complete request head in time"))
        }
    }

    /// Refuses a client outside --allow-client before reading anything.
    func refuseClient() {
        enforce(.block(.ats(.clientNotAllowed),
                       message: "client \(clientAddress.ip) is not allowed to use this proxy (see --allow-client)"))
    }

    // MARK: request head

    func readHead() {
        guard case .readingHead = state else { return }
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
        record = LogRecord(time: wallClock(), client: clientAddress, method: head.method)
        disarm()
        route(head)
    }

    enum ReadOutcome { case wouldBlock, ended, failed }

    /// Reads what the client has sent into `inbound`.
    func readClient() -> ReadOutcome {
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
        if let document = servedDocument(head) {
            return respond(document, .http(keepAlive: head.keepAlive && !head.hasBody))
        }
        if let authenticator = context.authenticator {
            return authenticate(head, authenticator)
        }
        dispatch(head)
    }

    /// Chooses the request's policy (AppRouter) and hands the request to its kind's handler.
    func dispatch(_ head: RequestHead) {
        record.proxyUser = proxyUser
        let router = context.router
        let product = AppRouter.product(ofUserAgent: record.userAgent)
        let (selected, kind) = router.select(user: proxyUser, client: clientAddress.ip, port: localPort, product: product)
        record.route = kind
        guard let selected else {
            let agent = product.map { "User-Agent product '\($0)'" } ?? "no User-Agent product"
            return respond(.block(.noPolicy, message: "no policy for this request: no --route matched and no loaded "
                                  + "bundle is named by its \(agent); --unrouted is block"))
        }
        app = selected
        record.app = router.apps[selected].id
        record.policy = router.apps[selected].label
        if head.method == "CONNECT" {
            return connectTunnel(head)
        }
        if head.isAbsoluteForm {
            return forward(head)
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

    // MARK: upstream

    /// Resolves and connects (or takes a pooled connection when `pooled`), then goes on as `next` says.
    func openUpstream(_ destination: Destination, pooled: Bool = false, then next: AfterConnect) {
        enterConnecting(destination, next: next)
        upstreamFromPool = false
        arm(after: context.configuration.connectTimeout) { [self] in
            upstream?.close()
            upstream = nil
            enforce(.fail(.upstreamTimeout, status: 504,
                          message: "connecting to \(destination.host):\(destination.port) timed out"))
        }
        context.resolver.resolve(destination.host, on: loop) { [self] result in
            guard case .connecting = state else { return }
            switch result {
            case .failure(let error):
                enforce(.fail(.upstreamDNS, status: 502, message: error.message))
            case .success(let addresses):
                let candidates = addresses.map { SocketAddress(ip: $0, port: destination.port) }
                if pooled {
                    for address in candidates {
                        guard let channel = pool.take(address) else { continue }
                        upstream = channel
                        upstreamFromPool = true
                        return connected(to: address)
                    }
                }
                connect(candidates[...], lastError: nil)
            }
        }
    }

    /// Tries each address in turn (IPv6 and IPv4 as resolved).
    private func connect(_ addresses: ArraySlice<SocketAddress>, lastError: SystemError?) {
        guard case .connecting = state else { return }
        guard let address = addresses.first else {
            let detail = lastError.map { $0.description } ?? "no address"
            return respond(.fail(.upstreamRefused, status: 502, message: "cannot connect: \(detail)"))
        }
        let fd: Int32
        do {
            fd = try Socket.startConnect(to: address)
        } catch {
            return connect(addresses.dropFirst(), lastError: error)
        }
        let channel = Channel(fd: fd, poller: loop.poller)
        upstream = channel
        let completed: (Int32) -> Void = { [self] code in
            if code != 0 {
                channel.close()
                upstream = nil
                return connect(addresses.dropFirst(), lastError: SystemError(call: "connect \(address)", code: code))
            }
            connected(to: address)
        }
        // Often done already (see connectProgress): check once before waiting for writability.
        switch Socket.connectProgress(fd, to: address) {
        case .connected: return completed(0)
        case .failed(let code): return completed(code)
        case .inProgress: break
        }
        channel.onWritable { [channel] in
            channel.wantWrite(false)
            completed(Socket.connectResult(fd))
        }
        channel.wantWrite(true)
    }

    private func connected(to address: SocketAddress) {
        guard case .connecting(let destination, let next) = state else { return }
        disarm()
        upstreamAddress = address
        record.upstreamIP = address.ip
        switch next {
        case .tunnel(let loadContext):
            send(Array("HTTP/1.1 200 Connection Established\r\n\r\n".utf8), then: .tunnel(destination, loadContext))
        case .forward(let head):
            startExchange(head, destination: destination)
        case .upgrade(let head, let decision, let original):
            startUpgrade(head, destination: original, secure: destination, decision: decision)
        }
    }

    // MARK: verdicts and answers

    /// The one place a verdict is applied. It honours --mode (an ATS block in report mode is only
    /// recorded, enforced=false, and the request proceeds), fills the record, answers the client as
    /// `delivery` says, and logs, which counts the metric. Returns true when the request proceeds.
    @discardableResult
    func enforce(_ verdict: Verdict, _ delivery: Delivery = .close) -> Bool {
        switch verdict {
        case .allow:
            return true
        case .block(let reason, let message, let rule):
            record.action = .block
            record.reason = reason
            if let message { record.message = message }
            if let rule { record.rule = rule }
            if context.configuration.mode == .report, !reason.enforcedInReportMode { return true }
        case .upgrade, .redirect:
            record.action = .upgrade
            // Report mode forwards the request as it came; the record says it would be upgraded.
            if context.configuration.mode == .report { return true }
        case .challenge(let message):
            // Enforced in report mode too: the proxy's access rule, not ATS.
            record.action = .block
            record.reason = .ats(.authRequired)
            record.message = message
        case .serve:
            record.action = .allow
        case .answer(_, let reason, let message, _, _), .fail(let reason, _, let message):
            record.action = .error
            record.reason = reason
            record.message = message
        }
        switch delivery {
        case .http(let keepAlive):
            record.status = verdict.status
            log()
            client.wantRead(false)
            send(ProxyResponse.render(verdict, decisionMessage: record.decision?.message, keepAlive: keepAlive),
                 then: keepAlive ? .nextRequest : .close)
        case .upgrade(let head, let destination, let decision):
            upgrade(head, destination: destination, decision: decision)
        case .alert(let alert, let version):
            let bytes = TLSAlert.fatal(alert, recordVersion: version)
            _ = bytes.withUnsafeBytes { try? SystemCall.write(client.fd, $0) }
            finish()
        case .cut:
            finish()
        }
        return false
    }

    /// `enforce` for a verdict that ends the request whatever the mode (an answer, a failure, an
    /// access rule), where the caller returns right after.
    func respond(_ verdict: Verdict, _ delivery: Delivery = .close) {
        enforce(verdict, delivery)
    }

    /// Queues an answer's bytes and flushes them; then `next`.
    private func send(_ bytes: [UInt8], then next: AfterAnswer) {
        enterAnswering(next: next)
        disarm()
        outbound += bytes
        flushAnswer()
    }

    func flushAnswer() {
        guard case .answering(let next) = state else { return }
        switch client.write(&outbound) {
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
        case .tunnel(let destination, let loadContext): openTunnel(destination, context: loadContext)
        }
    }

    /// Waits for the next request head on a kept-alive client connection.
    func nextRequest() {
        if proxyLoop.draining { return close() }
        enterReadingHead()
        arm(after: context.configuration.headTimeout) { [self] in close() }
        if !inbound.isEmpty { readHead() }
    }

    func log() {
        record.durationMilliseconds = (monotonic() - started) * 1000
        // The proxy's own access rules hold in report mode too; only ATS blocks become report-only.
        record.enforced = context.configuration.mode == .enforce || record.reason?.enforcedInReportMode == true
        if record.message == nil, let decision = record.decision {
            record.message = proxyLoop.decisionMessages.message(for: decision, generation: context.generation, app: app)
        }
        proxyLoop.metrics.count(record)
        context.shared.observer?.observe(record, policy: context.log.policy)
        context.shared.decisions.add(1, ordering: .relaxed)
        context.log.write(record, into: &proxyLoop.logBuffer)
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
        default:
            break
        }
        if judgementPending {
            record.durationMilliseconds = (monotonic() - started) * 1000
            deferredRecord = [record]
        } else {
            log()
        }
        close()
    }

    func close() {
        guard !isClosed else { return }
        enterClosed()
        disarm()
        client.close()
        upstreamTLS = nil
        upstream?.close()
        upstream = nil
        proxyLoop.connections[ObjectIdentifier(self)] = nil
        context.connectionClosed()
    }

    /// The daemon is stopping: a connection waiting for a (next) request head with nothing read yet
    /// is closed now; the others finish what they are doing.
    func closeIfIdle() {
        if case .readingHead = state, inbound.isEmpty { close() }
    }

    /// The stop's grace period is over: ends the connection with a record saying so.
    func endAtShutdown() {
        switch state {
        case .closed:
            return
        case .readingHead where inbound.isEmpty:
            return close()
        case .relaying:
            record.message = (record.message.map { $0 + "; " } ?? "") + "cut: the daemon stopped"
            finish()
        default:
            record.action = record.action ?? .error
            record.reason = record.reason ?? .shutdown
            record.message = "the daemon stopped before the connection finished"
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

    /// The policy of the current request.
    var engine: DecisionEngine { context.router.apps[app].engine }

    func isSelf(_ destination: Destination) -> Bool {
        guard case .address(let ip) = destination.host else { return false }
        return context.configuration.listen.contains { $0.port == destination.port && ($0.ip == ip) }
    }

    func hostForURL(_ destination: Destination) -> String {
        if case .address(let ip) = destination.host, !ip.isIPv4 { return "[\(ip)]" }
        return destination.host.description
    }

    func portSuffix(_ port: Int, default defaultPort: Int) -> String {
        port == defaultPort ? "" : ":\(port)"
    }

}
