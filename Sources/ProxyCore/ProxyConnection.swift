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
    private var timer: DispatchSourceTimer?
    private var lastActivity = 0.0
    private var record: LogRecord
    private var started = now()

    init(fd: Int32, clientAddress: SocketAddress, context: ProxyContext, queue: DispatchQueue) {
        self.context = context
        self.queue = queue
        self.clientAddress = clientAddress
        client = Channel(fd: fd, queue: queue)
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
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let outcome = chunk.withUnsafeMutableBytes { buffer in
                try? SystemCall.read(client.fd, into: buffer)
            }
            switch outcome {
            case .done(let n)?:
                inbound.append(contentsOf: chunk[..<n])
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
        let context = LoadContext.infer(userAgent: head.field("user-agent"))
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
        let decision = context.configuration.engine.decide(destination,
                                                           context: LoadContext.infer(userAgent: head.field("user-agent")))
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
        openUpstream(destination) { [self] in
            startRelay(prefix: upstreamHead(head, destination: destination) + inbound, closeWithUpstream: true)
            inbound = []
        }
    }

    /// The request as the origin gets it: origin-form target, hop-by-hop and Proxy-* fields removed,
    /// Via added, and one exchange per upstream connection.
    private func upstreamHead(_ head: RequestHead, destination: Destination) -> [UInt8] {
        let connectionTokens = Set(head.tokens("connection"))
        let hopByHop: Set<String> = ["connection", "keep-alive", "proxy-connection", "te", "trailer", "upgrade",
                                     "proxy-authorization", "proxy-authenticate"]
        var text = "\(head.method) \(originForm(head.target)) HTTP/1.1\r\n"
        var hasHost = false
        for (name, value) in head.fields {
            let lower = name.lowercased()
            if hopByHop.contains(lower) || connectionTokens.contains(lower) || lower.hasPrefix("proxy-") { continue }
            if lower == "host" { hasHost = true }
            text += "\(name): \(value)\r\n"
        }
        if !hasHost { text += "Host: \(hostForURL(destination))\(portSuffix(destination.port, default: 80))\r\n" }
        text += "Via: 1.\(head.minorVersion) \(ProxyContext.viaToken)\r\nConnection: close\r\n\r\n"
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

    private func openUpstream(_ destination: Destination, then connected: @escaping () -> Void) {
        state = .connecting
        client.wantRead(false)
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
                connect(addresses.map { SocketAddress(ip: $0, port: destination.port) }[...], lastError: nil,
                        then: connected)
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
        let channel = Channel(fd: fd, queue: queue)
        upstream = channel
        channel.onWritable { [self] in
            channel.wantWrite(false)
            let code = Socket.connectResult(fd)
            if code != 0 {
                channel.close()
                upstream = nil
                return connect(addresses.dropFirst(), lastError: SystemError(call: "connect \(address)", code: code),
                               then: connected)
            }
            disarm()
            record.upstreamIP = address.ip.description
            connected()
        }
        channel.wantWrite(true)
    }

    // MARK: relay

    private func startRelay(prefix: [UInt8], closeWithUpstream: Bool = false) {
        guard let upstream else { return close() }
        state = .relaying
        let up = Pump(from: client, to: upstream, pending: prefix)
        let down = Pump(from: upstream, to: client)
        pumps = [up, down]
        client.onReadable { up.run() }
        upstream.onWritable { up.run() }
        upstream.onReadable { down.run() }
        client.onWritable { down.run() }
        lastActivity = now()
        for pump in pumps {
            pump.onProgress = { [unowned self] in lastActivity = now() }
            pump.onFinish = { [unowned self] in
                if pumps.allSatisfy(\.finished) || (closeWithUpstream && pump === down) {
                    finish()
                } else {
                    armRelayTimer(halfClosed: true)
                }
            }
            pump.onError = { [unowned self] _ in finish() }
        }
        armRelayTimer(halfClosed: false)
        // Down first: its read source on the upstream is armed before the up pump can half-close the
        // upstream, so the peer's FIN finds an armed source (see armRelayTimer).
        down.run()
        up.run()
    }

    /// Idle timeout for the relay, and, once one direction is half-closed, a short tick that re-runs
    /// the open direction. After our shutdown(SHUT_WR) the peer's FIN makes the socket report EPOLLHUP;
    /// when that arrives while none of its sources is armed, libdispatch deletes the epoll registration
    /// and a later resume of the read source fails (EPOLL_CTL_MOD = ENOENT), so the wakeup never comes.
    /// A pump only does non-blocking work, so running it on a tick is harmless and bounds that stall.
    private func armRelayTimer(halfClosed: Bool) {
        let idle = context.configuration.idleTimeout
        arm(after: halfClosed ? 0.05 : max(0.05, idle / 2), repeating: true) { [self] in
            if now() - lastActivity > idle {
                record.message = record.message ?? "idle for \(Int(idle)) s"
                return finish()
            }
            if halfClosed { for pump in pumps where !pump.finished { pump.run() } }
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
        client.wantRead(false)
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
        context.log.write(record)
        context.counters.decisions.add(1, ordering: .relaxed)
    }

    /// Ends a tunnel or forwarded exchange: logs it with its byte counts and closes.
    private func finish() {
        guard state != .closed else { return }
        record.bytesUp = pumps.first?.bytes ?? 0
        record.bytesDown = pumps.last?.bytes ?? 0
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
        disarm()
        let source = DispatchSource.makeTimerSource(queue: queue)
        let interval = DispatchTimeInterval.milliseconds(Int(seconds * 1000))
        source.schedule(deadline: .now() + interval, repeating: repeating ? interval : .never)
        source.setEventHandler(handler: handler)
        source.resume()
        timer = source
    }

    private func disarm() {
        timer?.setEventHandler(handler: nil)
        timer?.cancel()
        timer = nil
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
