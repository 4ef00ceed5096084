import ATSPolicy
import Dispatch
import Glibc
import TLSClient
import TLSWire

/// One client connection, confined to one serial queue of the event loop. The data flow: request
/// head (here) -> destination -> decision -> action: a tunnel (ProxyConnection+Tunnel.swift), a
/// forwarded exchange, a block or a redirect (ProxyConnection+Forward.swift), or an answer (here).
final class ProxyConnection {
    enum State {
        case readingHead
        case connecting
        case inspecting
        case relaying
        case answering
        case closed
    }

    let context: ProxyContext
    let queue: DispatchQueue
    let client: Channel
    let clientAddress: SocketAddress
    var state = State.readingHead
    /// Client bytes read but not yet consumed (the head, then any prefix read with it).
    var inbound: [UInt8] = []
    var outbound: [UInt8] = []
    var afterAnswer: (() -> Void)?
    var upstream: Channel?
    /// TLS to the origin (`--cleartext upgrade`); nil for plain TCP.
    var upstreamTLS: TLSConnection?
    var pumps: [Pump] = []
    /// The forwarded exchange in flight (ProxyConnection+Forward.swift).
    var exchange: Exchange?
    /// The TLS handshake being watched in a CONNECT tunnel (ProxyConnection+TLS.swift).
    var inspection: TLSInspection?
    /// Bytes the inspection wrote itself, before the relay took over.
    var inspectedUp = 0
    var inspectedDown = 0
    /// A certificate verdict is being computed; a record finished meanwhile waits for it.
    var judgementPending = false
    /// (In an array: an inline optional record would make every connection carry a second one.)
    var deferredRecord: [LogRecord] = []
    let loop: EventLoop
    let clock: LoopClock
    let pool: UpstreamPool
    /// The origin address of `upstream`, and whether it came from the pool (a stale pooled
    /// connection earns one retry on a fresh one).
    var upstreamAddress: SocketAddress?
    var upstreamFromPool = false
    var lastActivity = 0.0
    var record: LogRecord
    /// When the current request began, on the monotonic clock (its duration); `record.time` has the wall time.
    var started = monotonic()

    init(fd: Int32, clientAddress: SocketAddress, context: ProxyContext, loop: EventLoop) {
        self.context = context
        self.loop = loop
        self.queue = loop.queue
        self.clock = loop.clock
        self.pool = loop.pool
        self.clientAddress = clientAddress
        client = Channel(fd: fd, poller: loop.poller)
        record = LogRecord(time: wallClock(), client: clientAddress, method: "-", enforced: context.configuration.mode == .enforce)
        loop.connections[ObjectIdentifier(self)] = self
    }

    /// Starts reading the first request head. Runs on `queue`.
    func start() {
        client.onReadable { [self] in readHead() }
        client.onWritable { [self] in flushAnswer() }
        client.wantRead(true)
        arm(after: context.configuration.headTimeout) { [self] in
            enforce(.answer(status: 408, .requestTimeout, message: "no complete request head in time"))
        }
    }

    /// Refuses a client outside --allow-client before reading anything.
    func refuseClient() {
        client.onWritable { [self] in flushAnswer() }
        enforce(.block(.clientNotAllowed,
                       message: "client \(clientAddress.ip) is not allowed to use this proxy (see --allow-client)"))
    }

    // MARK: request head

    func readHead() {
        guard state == .readingHead else { return }
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
        record = LogRecord(time: wallClock(), client: clientAddress, method: head.method,
                           enforced: context.configuration.mode == .enforce)
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

    func route(_ head: RequestHead) {
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
        enforce(.answer(status: 400, .badRequest, message: "unsupported request target"))
    }

    // MARK: upstream

    func openUpstream(_ destination: Destination, pooled: Bool = false,
                              then connected: @escaping () -> Void) {
        state = .connecting
        upstreamFromPool = false
        // The client normally sends nothing until it has an answer, so its read interest stays on
        // (one epoll_ctl less each way); only if bytes do arrive early is it turned off, and the
        // answer's continuation turns it back on.
        client.onReadable { [client] in client.wantRead(false) }
        arm(after: context.configuration.connectTimeout) { [self] in
            upstream?.close()
            upstream = nil
            enforce(.fail(.upstreamTimeout, status: 504,
                          message: "connecting to \(destination.host):\(destination.port) timed out"))
        }
        context.resolver.resolve(destination.host, on: loop) { [self] result in
            guard state == .connecting else { return }
            switch result {
            case .failure(let error):
                enforce(.fail(.upstreamDNS, status: 502, message: error.message))
            case .success(let addresses):
                let candidates = addresses.map { SocketAddress(ip: $0, port: destination.port) }
                if pooled {
                    for address in candidates {
                        guard let channel = pool.take(address) else { continue }
                        disarm()
                        upstream = channel
                        upstreamAddress = address
                        upstreamFromPool = true
                        record.upstreamIP = address.ip
                        return connected()
                    }
                }
                connect(candidates[...], lastError: nil, then: connected)
            }
        }
    }

    /// Tries each address in turn (IPv6 and IPv4 as resolved).
    func connect(_ addresses: ArraySlice<SocketAddress>, lastError: SystemError?,
                         then connected: @escaping () -> Void) {
        guard state == .connecting else { return }
        guard let address = addresses.first else {
            let detail = lastError.map { $0.description } ?? "no address"
            return respond(.fail(.upstreamRefused, status: 502, message: "cannot connect: \(detail)"))
        }
        let fd: Int32
        do {
            fd = try Socket.startConnect(to: address)
        } catch {
            return connect(addresses.dropFirst(), lastError: error, then: connected)
        }
        let channel = Channel(fd: fd, poller: loop.poller)
        upstream = channel
        let completed: (Int32) -> Void = { [self] code in
            if code != 0 {
                channel.close()
                upstream = nil
                return connect(addresses.dropFirst(), lastError: SystemError(call: "connect \(address)", code: code),
                               then: connected)
            }
            disarm()
            upstreamAddress = address
            record.upstreamIP = address.ip
            connected()
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

    // MARK: answers and the end

    /// The one place a verdict is applied. It honours --mode (an ATS block in report mode is only
    /// recorded, enforced=false, and the request proceeds), fills the record, answers the client as
    /// `delivery` says, and logs, which counts the metric. Returns true when the request proceeds.
    @discardableResult
    func enforce(_ verdict: Verdict, _ delivery: Delivery = .close) -> Bool {
        switch verdict {
        case .allow:
            return true
        case .block(let reason, let message):
            record.action = .block
            record.reason = reason
            if let message { record.message = message }
            if context.configuration.mode == .report, !reason.enforcedInReportMode { return true }
        case .redirect:
            record.action = .upgrade
        case .answer(_, let reason, let message, _, _), .fail(let reason, _, let message):
            record.action = .error
            record.reason = reason
            record.message = message
        }
        switch delivery {
        case .http(let keepAlive, let next):
            record.status = verdict.status
            log()
            client.wantRead(false)
            send(ProxyResponse.render(verdict, decisionMessage: record.decision?.message, keepAlive: keepAlive),
                 keepAlive: keepAlive, then: next)
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

    /// The 200 that opens a CONNECT tunnel (not a record of its own: the tunnel's record follows).
    func establishTunnel(then next: @escaping () -> Void) {
        send(Array("HTTP/1.1 200 Connection Established\r\n\r\n".utf8), keepAlive: true, then: next)
    }

    /// Queues an answer's bytes and flushes them; then `next` (keep-alive) or close.
    private func send(_ bytes: [UInt8], keepAlive: Bool, then next: (() -> Void)?) {
        state = .answering
        disarm()
        outbound += bytes
        afterAnswer = keepAlive ? (next ?? { [self] in close() }) : { [self] in close() }
        flushAnswer()
    }

    func flushAnswer() {
        guard state == .answering else { return }
        while !outbound.isEmpty {
            let outcome = outbound.withUnsafeBytes { try? SystemCall.write(client.fd, $0) }
            switch outcome {
            case .done(let n)?: outbound.removeFirst(n)
            case .wouldBlock?: return client.wantWrite(true)
            default: return close()
            }
        }
        client.wantWrite(false)
        let next = afterAnswer
        afterAnswer = nil
        next?()
    }

    func log() {
        record.durationMilliseconds = (monotonic() - started) * 1000
        // The proxy's own access rules hold in report mode too; only ATS blocks become report-only.
        record.enforced = context.configuration.mode == .enforce || record.reason?.enforcedInReportMode == true
        if record.message == nil, let decision = record.decision {
            record.message = loop.decisionMessages.message(for: decision, generation: context.generation)
        }
        loop.metrics.count(record)
        context.shared.decisions.add(1, ordering: .relaxed)
        context.log.write(record, into: &loop.logBuffer)
    }

    /// Ends a tunnel or forwarded exchange: logs it with its byte counts and closes.
    func finish() {
        guard state != .closed else { return }
        if let current = exchange {
            record.bytesUp = current.bytesUp
            record.bytesDown = current.bytesDown
        } else {
            record.bytesUp = (pumps.first?.bytes ?? 0) + inspectedUp
            record.bytesDown = (pumps.last?.bytes ?? 0) + inspectedDown
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
        guard state != .closed else { return }
        state = .closed
        disarm()
        client.close()
        upstreamTLS = nil
        upstream?.close()
        upstream = nil
        for pump in pumps {
            pump.onFinish = {}
            pump.onError = { _ in }
            pump.onProgress = {}
        }
        loop.connections[ObjectIdentifier(self)] = nil
        context.connectionClosed()
    }

    /// The daemon is stopping: a connection waiting for a (next) request head with nothing read yet
    /// is closed now; the others finish what they are doing.
    func closeIfIdle() {
        if state == .readingHead, inbound.isEmpty { close() }
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
