import ATSPolicy
import Dispatch
import Glibc

/// One client connection, confined to one serial queue of the event loop. The data flow reads top to
/// bottom: request head -> destination -> decision -> action (tunnel, forward, block, redirect).
final class ProxyConnection {
    private enum State {
        case readingHead
        case connecting
        case inspecting
        case relaying
        case answering
        case closed
    }

    private let context: ProxyContext
    private let queue: DispatchQueue
    private let client: Channel
    private let clientAddress: SocketAddress
    private var state = State.readingHead
    /// Client bytes read but not yet consumed (the head, then any prefix read with it).
    private var inbound: [UInt8] = []
    private var outbound: [UInt8] = []
    private var afterAnswer: (() -> Void)?
    private var upstream: Channel?
    private var pumps: [Pump] = []
    private let loop: EventLoop
    private let clock: LoopClock
    private let pool: UpstreamPool
    /// The origin address of `upstream`, and whether it came from the pool (a stale pooled
    /// connection earns one retry on a fresh one).
    private var upstreamAddress: SocketAddress?
    private var upstreamFromPool = false
    private var lastActivity = 0.0
    private var record: LogRecord
    private var started = now()

    init(fd: Int32, clientAddress: SocketAddress, context: ProxyContext, loop: EventLoop) {
        self.context = context
        self.loop = loop
        self.queue = loop.queue
        self.clock = loop.clock
        self.pool = loop.pool
        self.clientAddress = clientAddress
        client = Channel(fd: fd, poller: loop.poller)
        record = LogRecord(time: started, client: clientAddress, method: "-", enforced: context.configuration.mode == .enforce)
    }

    /// Starts reading the first request head. Runs on `queue`.
    func start() {
        client.onReadable { [self] in readHead() }
        client.onWritable { [self] in flushAnswer() }
        client.wantRead(true)
        arm(after: context.configuration.headTimeout) { [self] in
            answer(status: 408, reason: "request-timeout", message: "no complete request head in time", keepAlive: false)
        }
    }

    /// Refuses a client outside --allow-client before reading anything.
    func refuseClient() {
        client.onWritable { [self] in flushAnswer() }
        answer(status: 403, headers: atsHeaders("block", BlockReason.clientNotAllowed.rawValue),
               reason: BlockReason.clientNotAllowed.rawValue,
               message: "client \(clientAddress.ip) is not allowed to use this proxy (see --allow-client)",
               keepAlive: false, action: "block")
    }

    // MARK: request head

    private func readHead() {
        guard state == .readingHead else { return }
        switch readClient() {
        case .failed, .ended:
            return close()
        case .wouldBlock:
            break
        }
        let result = inbound.withUnsafeBytes { bytes in
            Result { () throws(RequestHeadError) in try RequestHeadParser.parse(bytes) }
        }
        let head: RequestHead
        switch result {
        case .failure(let error):
            return answer(status: error.status, reason: "bad-request", message: error.problem, keepAlive: false)
        case .success(nil):
            return
        case .success(let parsed?):
            head = parsed
        }
        inbound.removeFirst(head.length)
        started = now()
        record = LogRecord(time: started, client: clientAddress, method: head.method,
                           enforced: context.configuration.mode == .enforce)
        disarm()
        route(head)
    }

    private enum ReadOutcome { case wouldBlock, ended, failed }

    /// Reads what the client has sent into `inbound`.
    private func readClient() -> ReadOutcome {
        while true {
            switch try? SystemCall.read(client.fd, into: loop.scratch) {
            case .done(let n)?:
                inbound.append(contentsOf: UnsafeRawBufferPointer(rebasing: loop.scratch[..<n]))
                if inbound.count > RequestHeadParser.maximumHeadLength + 4 { return .wouldBlock }
            case .wouldBlock?: return .wouldBlock
            case .endOfFile?: return .ended
            case nil: return .failed
            }
        }
    }

    private func route(_ head: RequestHead) {
        let target = head.target
        if head.method == "CONNECT" {
            return connectTunnel(head)
        }
        let lower = target.lowercased()
        if lower.hasPrefix("http://") || lower.hasPrefix("https://") {
            return forward(head)
        }
        if target.hasPrefix("/") {
            return answer(status: 400, reason: "not-a-proxy-request",
                          message: "request addressed to the proxy itself", body: ProxyResponse.usagePage,
                          keepAlive: false)
        }
        if (try? Destination.parse(authority: target, scheme: .https, portRequired: true)) != nil {
            return answer(status: 405, headers: [("Allow", "CONNECT")], reason: "method-not-allowed",
                          message: "\(head.method) with an authority-form target; only CONNECT takes one",
                          keepAlive: false)
        }
        answer(status: 400, reason: "bad-request", message: "unsupported request target", keepAlive: false)
    }

    // MARK: CONNECT

    private func connectTunnel(_ head: RequestHead) {
        let destination: Destination
        do {
            destination = try Destination.parse(authority: head.target, scheme: .https, portRequired: true)
        } catch {
            return answer(status: 400, reason: "bad-request", message: "CONNECT target \(error.description)", keepAlive: false)
        }
        let context = self.context.configuration.context ?? LoadContext.infer(userAgent: head.field("user-agent"))
        let decision = self.context.configuration.engine.decide(destination, context: context)
        record.decision = decision
        guard self.context.configuration.connectPorts.contains(destination.port) else {
            return answer(status: 403, headers: atsHeaders("block", BlockReason.portNotAllowed.rawValue),
                          reason: BlockReason.portNotAllowed.rawValue,
                          message: "CONNECT to port \(destination.port) is not allowed (see --connect-port)",
                          keepAlive: false, action: "block")
        }
        openUpstream(destination) { [self] in
            answer(status: 200, reason: nil, message: nil, keepAlive: true) { [self] in
                state = .inspecting
                client.onReadable { [self] in inspectTunnel(destination: destination, context: context) }
                client.wantRead(true)
                arm(after: self.context.configuration.headTimeout) { [self] in
                    record.action = "close"
                    record.message = "no bytes from the client after CONNECT"
                    finish()
                }
                if !inbound.isEmpty { inspectTunnel(destination: destination, context: context) }
            }
        }
    }

    /// The first client bytes of a tunnel: a TLS handshake record proceeds; anything else is cleartext
    /// and obeys the cleartext rule (`cleartext-in-tunnel`).
    private func inspectTunnel(destination: Destination, context loadContext: LoadContext) {
        guard state == .inspecting else { return }
        if case .ended = readClient(), inbound.isEmpty { return close() }
        guard let first = inbound.first else { return }
        disarm()
        let isTLS = first == 0x16 && (inbound.count < 2 || inbound[1] == 0x03)
        if !isTLS {
            var cleartext = destination
            cleartext.scheme = .http
            let decision = self.context.configuration.engine.decide(cleartext, context: loadContext)
            record.decision = decision
            if !decision.requirements.cleartextAllowed {
                record.action = "block"
                record.reason = BlockReason.cleartextInTunnel.rawValue
                record.message = "cleartext in a CONNECT tunnel to \(destination.host): "
                    + decision.message.replacing("cleartext HTTP to \(destination.host) is not allowed: ", with: "")
                if self.context.configuration.mode == .enforce { return finish() }
            }
        }
        startRelay(prefix: inbound)
        inbound = []
    }

    // MARK: absolute-form requests

    private func forward(_ head: RequestHead) {
        let destination: Destination
        do {
            destination = try Destination.parse(url: head.target)
        } catch {
            return answer(status: 400, reason: "bad-request", message: "request target \(error.description)", keepAlive: false)
        }
        guard destination.scheme == .http else {
            return answer(status: 400, reason: "bad-request",
                          message: "absolute-form https:// requests are not proxied; use CONNECT", keepAlive: false)
        }
        if head.tokens("via").contains(where: { $0.hasSuffix(ProxyContext.viaToken) }) || isSelf(destination) {
            return answer(status: 508, reason: "loop-detected", message: "the request would loop through this proxy",
                          keepAlive: false)
        }
        let loadContext = context.configuration.context ?? LoadContext.infer(userAgent: head.field("user-agent"))
        let decision = context.configuration.engine.decide(destination, context: loadContext)
        record.decision = decision
        let hasBody = (head.contentLength ?? 0) > 0 || head.chunked
        let enforced = context.configuration.mode == .enforce
        switch decision.action {
        case .block where enforced:
            return answer(status: 403, headers: atsHeaders("block", decision.reason?.rawValue),
                          reason: nil, message: nil, body: decision.message + "\n",
                          keepAlive: head.keepAlive && !hasBody) { [self] in nextRequest() }
        case .upgrade where enforced && decision.upgradeVia == .redirect:
            let location = "https://" + hostForURL(destination) + portSuffix(destination.port, default: 80)
                + originForm(head.target)
            return answer(status: 308, headers: atsHeaders("upgrade", nil) + [("Location", location)],
                          reason: nil, message: nil, body: "redirected to \(location)\n",
                          keepAlive: head.keepAlive && !hasBody) { [self] in nextRequest() }
        default:
            break
        }
        openUpstream(destination, pooled: true) { [self] in
            startExchange(head, destination: destination)
        }
    }

    // MARK: one forwarded exchange (client keep-alive)

    /// A forwarded request in flight: the body going up, the response coming down.
    private struct Exchange {
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
        var upstreamPaused = false
        var bytesUp = 0
        var bytesDown = 0
    }

    private var exchange: Exchange?
    private static let bufferLimit = 256 * 1024

    private func startExchange(_ head: RequestHead, destination: Destination) {
        guard let upstream else { return close() }
        state = .relaying
        let rewritten = upstreamHead(head, destination: destination)
        exchange = Exchange(request: head, destination: destination, body: MessageBody(head), toUpstream: rewritten,
                            bytesUp: rewritten.count)
        if !takeRequestBody(from: &inbound) { return }
        client.onReadable { [self] in exchangeReadClient() }
        client.onWritable { [self] in exchangeWriteClient() }
        upstream.onReadable { [self] in exchangeReadUpstream() }
        upstream.onWritable { [self] in exchangeWriteUpstream() }
        client.wantRead(!exchange!.body.isComplete)
        upstream.wantRead(true)
        lastActivity = now()
        armIdleTimer()
        exchangeWriteUpstream()
    }

    /// Moves the body's share of `bytes` to the upstream buffer; what follows the body stays (a
    /// pipelined next request). False when the body is malformed (the exchange is then over).
    private func takeRequestBody(from bytes: inout [UInt8]) -> Bool {
        guard var current = exchange, !bytes.isEmpty else { return true }
        let taken: Int
        do {
            taken = try bytes.withUnsafeBytes { buffer throws(ChunkedScanner.Malformed) in try current.body.take(buffer) }
        } catch {
            exchange = nil
            answer(status: 400, reason: "bad-request", message: "malformed chunked request body", keepAlive: false)
            return false
        }
        current.toUpstream += bytes[..<taken]
        current.bytesUp += taken
        bytes.removeFirst(taken)
        exchange = current
        return true
    }

    private func exchangeReadClient() {
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

    private func exchangeWriteUpstream() {
        guard var current = exchange, let upstream else { return }
        while !current.toUpstream.isEmpty {
            let outcome = current.toUpstream.withUnsafeBytes { try? SystemCall.write(upstream.fd, $0) }
            guard case .done(let n)? = outcome else {
                exchange = current
                if outcome == .wouldBlock { return upstream.wantWrite(true) }
                return exchangeFailed("writing to the origin failed")
            }
            current.toUpstream.removeFirst(n)
            lastActivity = now()
        }
        upstream.wantWrite(false)
        if !current.body.isComplete, current.toUpstream.count <= Self.bufferLimit { client.wantRead(true) }
        exchange = current
    }

    private func exchangeReadUpstream() {
        guard var current = exchange, let upstream else { return }
        readLoop: while current.toClient.count <= Self.bufferLimit {
            switch try? SystemCall.read(upstream.fd, into: loop.scratch) {
            case .done(let n)?:
                current.fromUpstream += UnsafeRawBufferPointer(rebasing: loop.scratch[..<n])
                lastActivity = now()
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
                if (100..<200).contains(head.status), head.status != 101 {
                    current.toClient += current.fromUpstream[..<head.length]
                    current.fromUpstream.removeFirst(head.length)
                    continue
                }
                current.responseBody = MessageBody(response: head, requestMethod: current.request.method)
                let framed: Bool
                if case .untilClose = current.responseBody { framed = false } else { framed = true }
                current.keepClient = current.request.keepAlive && framed && head.status != 101
                current.reusable = framed && head.originKeepsConnection && head.status != 101
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
            return exchangeFailed("malformed chunked response from the origin")
        }
        if taken < current.fromUpstream.count { current.reusable = false }
        current.bytesDown += taken
        current.toClient += current.fromUpstream[..<taken]
        current.fromUpstream.removeAll(keepingCapacity: true)
        if current.upstreamEnded, !current.responseBody.isComplete {
            // Cut short, or a body that runs to EOF: the client cannot tell where it ends otherwise.
            if case .untilClose = current.responseBody {} else { current.keepClient = false }
            current.reusable = false
        }
        exchange = current
        if !current.toClient.isEmpty || current.upstreamEnded || current.responseBody.isComplete { exchangeWriteClient() }
    }

    private func exchangeWriteClient() {
        guard var current = exchange else { return }
        while !current.toClient.isEmpty {
            let outcome = current.toClient.withUnsafeBytes { try? SystemCall.write(client.fd, $0) }
            guard case .done(let n)? = outcome else {
                exchange = current
                if outcome == .wouldBlock { return client.wantWrite(true) }
                return finish()
            }
            current.toClient.removeFirst(n)
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
        log()
        if current.reusable, !current.upstreamEnded, current.body.isComplete, let upstream, let upstreamAddress {
            pool.park(upstream, address: upstreamAddress)
        } else {
            upstream?.close()
        }
        upstream = nil
        if current.keepClient, current.body.isComplete {
            record = LogRecord(time: now(), client: clientAddress, method: "-",
                               enforced: context.configuration.mode == .enforce)
            client.onWritable { [self] in flushAnswer() }
            nextRequest()
        } else {
            close()
        }
    }

    /// The origin failed mid-exchange: 502 if nothing was sent to the client yet, else cut.
    private func exchangeFailed(_ message: String) {
        let started = exchange?.response != nil
        let failed = exchange
        exchange = nil
        upstream?.close()
        upstream = nil
        // A pooled connection the origin had already closed: retry once on a fresh one, when the
        // request can be sent again (no body, so nothing of it was consumed from the client).
        if !started, upstreamFromPool, let failed, case .none = MessageBody(failed.request) {
            return openUpstream(failed.destination) { [self] in
                startExchange(failed.request, destination: failed.destination)
            }
        }
        if started {
            record.message = message
            return finish()
        }
        answer(status: 502, headers: [("X-ATS-Reason", "upstream-protocol")], reason: "upstream-protocol",
               message: message, keepAlive: false, action: "error")
    }

    /// The request as the origin gets it: origin-form target, hop-by-hop and Proxy-* fields removed,
    /// Via added.
    private func upstreamHead(_ head: RequestHead, destination: Destination) -> [UInt8] {
        var text = "\(head.method) \(originForm(head.target)) HTTP/1.1\r\n"
        var hasHost = false
        for (name, value) in HeaderFields.forwardable(head.fields, dropProxyFields: true) {
            if name.lowercased() == "host" { hasHost = true }
            text += "\(name): \(value)\r\n"
        }
        if !hasHost { text += "Host: \(hostForURL(destination))\(portSuffix(destination.port, default: 80))\r\n" }
        // No Connection field: HTTP/1.1 keeps the origin connection for the pool.
        text += "Via: 1.\(head.minorVersion) \(ProxyContext.viaToken)\r\n\r\n"
        return Array(text.utf8)
    }

    private func nextRequest() {
        state = .readingHead
        client.onReadable { [self] in readHead() }
        client.wantRead(true)
        arm(after: context.configuration.headTimeout) { [self] in close() }
        if !inbound.isEmpty { readHead() }
    }

    // MARK: upstream

    private func openUpstream(_ destination: Destination, pooled: Bool = false,
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
            answer(status: 504, headers: [("X-ATS-Reason", "upstream-timeout")], reason: "upstream-timeout",
                   message: "connecting to \(destination.host):\(destination.port) timed out", keepAlive: false,
                   action: "error")
        }
        context.resolver.resolve(destination.host, on: queue) { [self] result in
            guard state == .connecting else { return }
            switch result {
            case .failure(let error):
                answer(status: 502, headers: [("X-ATS-Reason", "upstream-dns")], reason: "upstream-dns",
                       message: error.message, keepAlive: false, action: "error")
            case .success(let addresses):
                let candidates = addresses.map { SocketAddress(ip: $0, port: destination.port) }
                if pooled {
                    for address in candidates {
                        guard let channel = pool.take(address) else { continue }
                        disarm()
                        upstream = channel
                        upstreamAddress = address
                        upstreamFromPool = true
                        record.upstreamIP = address.ip.description
                        return connected()
                    }
                }
                connect(candidates[...], lastError: nil, then: connected)
            }
        }
    }

    /// Tries each address in turn (IPv6 and IPv4 as resolved).
    private func connect(_ addresses: ArraySlice<SocketAddress>, lastError: SystemError?,
                         then connected: @escaping () -> Void) {
        guard state == .connecting else { return }
        guard let address = addresses.first else {
            let detail = lastError.map { $0.description } ?? "no address"
            return answer(status: 502, headers: [("X-ATS-Reason", "upstream-refused")], reason: "upstream-refused",
                          message: "cannot connect: \(detail)", keepAlive: false, action: "error")
        }
        let fd: Int32
        do {
            fd = try Socket.startConnect(to: address)
        } catch {
            return connect(addresses.dropFirst(), lastError: error, then: connected)
        }
        let channel = Channel(fd: fd, poller: loop.poller)
        upstream = channel
        let completed: () -> Void = { [self] in
            let code = Socket.connectResult(fd)
            if code != 0 {
                channel.close()
                upstream = nil
                return connect(addresses.dropFirst(), lastError: SystemError(call: "connect \(address)", code: code),
                               then: connected)
            }
            disarm()
            upstreamAddress = address
            record.upstreamIP = address.ip.description
            connected()
        }
        // On loopback and fast LANs the handshake is usually done by the time connect(2) returns:
        // check once before paying for a write source.
        if Socket.isWritable(fd) { return completed() }
        channel.onWritable { [channel] in
            channel.wantWrite(false)
            completed()
        }
        channel.wantWrite(true)
    }

    // MARK: relay

    private func startRelay(prefix: [UInt8]) {
        guard let upstream else { return close() }
        state = .relaying
        let up = Pump(from: client, to: upstream, loop: loop, pending: prefix)
        let down = Pump(from: upstream, to: client, loop: loop)
        pumps = [up, down]
        client.onReadable { up.run() }
        upstream.onWritable { up.run() }
        upstream.onReadable { down.run() }
        client.onWritable { down.run() }
        lastActivity = now()
        for pump in pumps {
            pump.onProgress = { [unowned self] in lastActivity = now() }
            pump.onFinish = { [unowned self] in
                if pumps.allSatisfy(\.finished) { finish() }
            }
            pump.onError = { [unowned self] _ in finish() }
        }
        armIdleTimer()
        down.run()
        up.run()
    }

    /// Ends a relay or exchange that has moved no byte for the idle timeout.
    private func armIdleTimer() {
        let idle = context.configuration.idleTimeout
        arm(after: max(LoopClock.resolution, idle / 2), repeating: true) { [self] in
            if now() - lastActivity > idle {
                record.message = record.message ?? "idle for \(Int(idle)) s"
                finish()
            }
        }
    }

    // MARK: answers and the end

    private func atsHeaders(_ action: String, _ reason: String?) -> [(String, String)] {
        [("X-ATS-Action", action)] + (reason.map { [("X-ATS-Reason", $0)] } ?? [])
    }

    /// Sends a response of the proxy's own; logs it unless it is the 200 of a CONNECT.
    private func answer(status: Int, headers: [(String, String)] = [], reason: String?, message: String?,
                        body: String? = nil, keepAlive: Bool, action: String? = nil,
                        then next: (() -> Void)? = nil) {
        state = .answering
        disarm()
        if status != 200 { client.wantRead(false) }
        if status != 200 || body != nil {
            let text = body ?? (message.map { $0 + "\n" } ?? "")
            outbound += ProxyResponse.render(status: status, headers: headers, body: text, keepAlive: keepAlive)
        } else {
            outbound += Array("HTTP/1.1 200 Connection Established\r\n\r\n".utf8)
        }
        if status != 200 {
            record.status = status
            if let action { record.action = action }
            if let reason { record.reason = reason }
            if let message { record.message = message }
            log()
        }
        afterAnswer = keepAlive ? (next ?? { [self] in close() }) : { [self] in close() }
        flushAnswer()
    }

    private func flushAnswer() {
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

    private func log() {
        record.durationMilliseconds = (now() - started) * 1000
        // The proxy's own access rules hold in report mode too; only ATS blocks become report-only.
        let accessRules: Set<String?> = [BlockReason.clientNotAllowed.rawValue, BlockReason.portNotAllowed.rawValue]
        record.enforced = context.configuration.mode == .enforce || accessRules.contains(record.reason)
        context.log.write(record, into: &loop.logBuffer)
        context.counters.decisions.add(1, ordering: .relaxed)
    }

    /// Ends a tunnel or forwarded exchange: logs it with its byte counts and closes.
    private func finish() {
        guard state != .closed else { return }
        if let current = exchange {
            record.bytesUp = current.bytesUp
            record.bytesDown = current.bytesDown
        } else {
            record.bytesUp = pumps.first?.bytes ?? 0
            record.bytesDown = pumps.last?.bytes ?? 0
        }
        log()
        close()
    }

    private func close() {
        guard state != .closed else { return }
        state = .closed
        disarm()
        client.close()
        upstream?.close()
        upstream = nil
        for pump in pumps {
            pump.onFinish = {}
            pump.onError = { _ in }
            pump.onProgress = {}
        }
        context.connectionClosed()
    }

    // MARK: timers

    private func arm(after seconds: Double, repeating: Bool = false, _ handler: @escaping () -> Void) {
        clock.schedule(self, after: seconds, repeating: repeating, handler)
    }

    private func disarm() {
        clock.cancel(self)
    }

    // MARK: helpers

    private func isSelf(_ destination: Destination) -> Bool {
        guard case .address(let ip) = destination.host else { return false }
        return context.configuration.listen.contains { $0.port == destination.port && ($0.ip == ip) }
    }

    private func hostForURL(_ destination: Destination) -> String {
        if case .address(let ip) = destination.host, !ip.isIPv4 { return "[\(ip)]" }
        return destination.host.description
    }

    private func portSuffix(_ port: Int, default defaultPort: Int) -> String {
        port == defaultPort ? "" : ":\(port)"
    }

    /// `/path?query` of an absolute-form target.
    private func originForm(_ target: String) -> String {
        guard let schemeEnd = target.firstRange(of: "://") else { return "/" }
        let rest = target[schemeEnd.upperBound...]
        guard let slash = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) else { return "/" }
        let path = String(rest[slash...])
        return path.hasPrefix("?") ? "/" + path : path
    }
}
