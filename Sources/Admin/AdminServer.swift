import ATSPolicy
import Dispatch
import EventLoops
import Glibc
import HTTP1
import POSIX
import ProxyAccess
import ProxyCore

/// The admin listener: `/metrics` (Prometheus text), `/healthz` (every event loop is running; a
/// decision log in trouble is said), `/readyz` (accepting; 503 once a stop began, and while a full
/// log holds requests back), the live page `/` and its event stream `/events`. None of them waits on
/// the decision log: its writes happen on its own thread.
/// It lives on the proxy's first loop; each request is answered and the connection closed, which is
/// all a scraper or a probe needs, except the event stream, which stays open until the page goes.
/// With `--admin-auth` everything but the probes asks for Basic credentials (401), checked off the
/// loop and slowed per client address as proxy logins are.
public final class AdminServer: @unchecked Sendable {
    private let fd: Int32
    private let loop: EventLoop
    private weak var server: ProxyServer?
    private let feed: LiveFeed
    private var listener: Channel?

    /// Binds `address`; throws a one-line error (e.g. port in use) before anything runs.
    public convenience init(listeningOn address: SocketAddress, server: ProxyServer, feed: LiveFeed) throws(SystemError) {
        self.init(fd: try Socket.listen(on: address, backlog: 64), server: server, feed: feed)
    }

    /// Serves on a socket a supervisor bound (systemd's socket activation).
    public convenience init(inherited fd: Int32, server: ProxyServer, feed: LiveFeed) throws(SystemError) {
        try Socket.setNonBlocking(fd)
        self.init(fd: fd, server: server, feed: feed)
    }

    private init(fd: Int32, server: ProxyServer, feed: LiveFeed) {
        self.fd = fd
        self.loop = server.firstLoop
        self.server = server
        self.feed = feed
    }

    /// The address it listens on.
    public var address: SocketAddress? { Socket.localAddress(fd) }

    /// The listening socket (an upgrade hands it to the new process).
    public var listeningSocket: Int32 { fd }

    /// An upgrade's new process accepts now: nothing is accepted here, and the live page's event
    /// streams end (an EventSource reconnects, to the new process).
    public func stopAccepting() {
        feed.streamsEnded.store(true, ordering: .relaxed)
        loop.execute { [self] in
            listener?.detach()
            listener = nil
        }
    }

    /// The upgrade failed: accepting again.
    public func resumeAccepting() {
        feed.streamsEnded.store(false, ordering: .relaxed)
        loop.execute { [self] in
            if listener == nil { attach() }
        }
    }

    public func start() {
        loop.execute { [self] in attach() }
    }

    private func attach() {
        let channel = Channel(fd: fd, poller: loop.poller)
        channel.onReadable { [unowned self] in accept() }
        channel.wantRead(true)
        listener = channel
    }

    private func accept() {
        for _ in 0..<16 {
            guard let client = try? SystemCall.accept(fd) else { return }
            guard let peer = client.peer else {
                SystemCall.close(client.fd)
                continue
            }
            AdminExchange(fd: client.fd, peer: peer.ip, loop: loop, server: server, feed: feed).start()
        }
    }
}

/// One admin request and its answer.
private final class AdminExchange {
    private let channel: Channel
    /// The client's address: failed logins are counted per address.
    private let peer: IPAddress
    private let loop: EventLoop
    private weak var server: ProxyServer?
    private let feed: LiveFeed
    private var request: [UInt8] = []
    private var response: [UInt8] = []
    private var done = false
    /// `/events`: the number of the last record sent, and when something was last written.
    private var streaming = false
    private var cursor = 0
    private var lastWrite = 0.0
    /// When the reader last took some of what was written.
    private var lastDrained = 0.0
    /// When the stream ends (the client reconnects with the last id it had): a bounded life keeps
    /// a stream that a load balancer silently dropped from being fed for ever.
    private var streamEnd = 0.0
    static let streamSeconds = 1...3600
    /// Keeps the exchange alive while it waits for the socket (channels hold handlers, not owners).
    private var retainSelf: AdminExchange?

    /// What probes ask for: open even with --admin-auth, so a kubelet or `atsgate health` needs no secret.
    static let openPaths: Set<Substring> = ["/healthz", "/readyz"]
    static let realm = "Basic realm=\"atsgate admin\""

    init(fd: Int32, peer: IPAddress, loop: EventLoop, server: ProxyServer?, feed: LiveFeed) {
        channel = Channel(fd: fd, poller: loop.poller)
        self.peer = peer
        self.loop = loop
        self.server = server
        self.feed = feed
    }

    func start() {
        retainSelf = self
        channel.onReadable { [unowned self] in readRequest() }
        channel.onWritable { [unowned self] in writeResponse() }
        channel.wantRead(true)
        loop.clock.schedule(self, after: 5, repeating: false) { [unowned self] in finish() }
    }

    private func readRequest() {
        while true {
            switch try? SystemCall.read(channel.fd, into: loop.scratch) {
            case .done(let n)?:
                request += UnsafeRawBufferPointer(rebasing: loop.scratch[..<n])
                if request.count > 8192 { return respond(431, "request too large\n") }
            case .wouldBlock?:
                return route()
            default:
                return finish()
            }
        }
    }

    private func route() {
        // The proxy's own strict reading of a head: a bare LF or CR ends the wait with a 400 at once
        // (a client ending its lines with LF would never send the CRLFCRLF waited for).
        let bounds = request.withUnsafeBytes { bytes in
            Result { () throws(MessageSyntax.Violation) in try MessageSyntax.headBounds(bytes, maximumLength: 8192) }
        }
        switch bounds {
        case .failure(let violation):
            channel.wantRead(false)
            return respond(400, "bad request: \(violation.problem)\n")
        case .success(nil):
            return
        case .success:
            channel.wantRead(false)
        }
        let line = request.prefix { $0 != 0x0D && $0 != 0x0A }
        let parts = String(decoding: line, as: UTF8.self).split(separator: " ")
        guard parts.count == 3, parts[2].hasPrefix("HTTP/1.") else { return respond(400, "bad request\n") }
        let method = parts[0]
        let path = parts[1].prefix { $0 != "?" }
        let query = parts[1].drop { $0 != "?" }.dropFirst()
        guard method == "GET" || method == "HEAD" else { return respond(405, "GET only\n", headers: [("Allow", "GET, HEAD")]) }
        let head = method == "HEAD"
        guard let server else { return respond(503, "stopping\n", head: head) }
        if !Self.openPaths.contains(path), let authenticator = server.adminAuthenticator {
            return authorize(authenticator, server.loginThrottle, head: head) { [self] in
                serve(path: path, query: query, head: head, server: server)
            }
        }
        serve(path: path, query: query, head: head, server: server)
    }

    // MARK: credentials (--admin-auth)

    /// Calls `proceed` once the request's `Authorization: Basic` names a user of the admin file
    /// (remembered credentials at once, others hashed on the blocking pool); answers 401 or 429
    /// otherwise.
    private func authorize(_ authenticator: ProxyAuthenticator, _ throttle: LoginThrottle, head: Bool,
                           proceed: @escaping () -> Void) {
        let field = self.field("authorization")
        if let token = ProxyAuthenticator.basicToken(field) {
            if let retryAfter = throttle.refusal(peer, now: monotonic()) { return throttled(retryAfter, head: head) }
            if authenticator.knownUser(token) != nil { return proceed() }
        }
        guard let credentials = ProxyAuthenticator.basicCredentials(field) else {
            return respond(401, "credentials required (Authorization: Basic)\n", head: head,
                           headers: [("WWW-Authenticate", Self.realm)])
        }
        let delay: Double
        switch throttle.admit(peer, now: monotonic()) {
        case .refuse(let retryAfter): return throttled(retryAfter, head: head)
        case .proceed(let wait): delay = wait
        }
        let loop = self.loop, peer = self.peer
        let check = { [self] in
            BlockingPools.passwords.submit {
                let valid = authenticator.file.verify(user: credentials.user, password: credentials.password)
                loop.execute { [self] in
                    guard valid else {
                        return respond(401, "wrong user or password\n", head: head, headers: [("WWW-Authenticate", Self.realm)])
                    }
                    authenticator.remember(credentials.token, user: credentials.user)
                    throttle.succeeded(peer, now: monotonic())
                    proceed()
                }
            }
        }
        // The exchange's own 5 s limit gives way to the delay; the answer ends the exchange.
        if delay > 0 { loop.clock.schedule(self, after: delay, repeating: false, check) } else { check() }
    }

    private func throttled(_ retryAfter: Int, head: Bool) {
        respond(429, "too many failed logins from \(peer); retry after \(retryAfter) s\n", head: head,
                headers: [("Retry-After", String(retryAfter))])
    }

    private func serve(path: Substring, query: Substring, head: Bool, server: ProxyServer) {
        switch path {
        case "/metrics":
            server.collectMetrics(on: loop.queue) { [self] metrics in
                respond(200, PrometheusText.render(metrics, server.gauges), head: head,
                        type: "text/plain; version=0.0.4; charset=utf-8")
            }
        case "/healthz":
            let health = server.health
            respond(health.healthy ? 200 : 503, health.detail + "\n", head: head)
        case "/readyz":
            let readiness = server.readiness
            respond(readiness.ready ? 200 : 503, readiness.detail + "\n", head: head)
        case "/":
            let snapshot = LivePage.snapshot(feed.snapshot(recent: LivePage.embedded), mode: server.mode)
            respond(200, LivePage.html(snapshot: snapshot), head: head, headers: LivePage.headers,
                    type: "text/html; charset=utf-8")
        case "/events":
            func parameter(_ name: String) -> Int? {
                query.split(separator: "&").first { $0.hasPrefix(name + "=") }.flatMap { Int($0.dropFirst(name.count + 1)) }
            }
            let seconds = parameter("max").map { min(max($0, Self.streamSeconds.lowerBound), Self.streamSeconds.upperBound) }
            streamEnd = monotonic() + Double(seconds ?? 300)
            // A reconnecting EventSource repeats its first URL: the last record it had comes first.
            startStream(server, after: lastEventID() ?? parameter("after"), head: head)
        default:
            respond(404, "not found: try /, /events, /metrics, /healthz or /readyz\n", head: head)
        }
    }

    private func respond(_ status: Int, _ body: String, head: Bool = false, headers: [(String, String)] = [],
                         type: String = "text/plain; charset=utf-8") {
        guard !done else { return }
        response = PlainResponse.render(status: status, headers: headers, body: body, keepAlive: false,
                                        contentType: type, includeBody: !head)
        writeResponse()
    }

    private func writeResponse() {
        let waiting = response.count
        defer { if response.count < waiting { lastDrained = monotonic() } }
        switch channel.write(&response) {
        case .done: break
        case .wouldBlock: return channel.wantWrite(true)
        case .failed: return finish()
        }
        guard streaming else { return finish() }
        channel.wantWrite(false)
    }

    // MARK: the event stream

    /// An EventSource that reconnects names the last record it had.
    private func lastEventID() -> Int? {
        field("last-event-id").flatMap { Int($0) }
    }

    /// The value of the request's first field named `name` (lowercase), trimmed; nil without one.
    private func field(_ name: String) -> String? {
        let text = String(decoding: request, as: UTF8.self)
        guard let line = text.split(separator: "\r\n").dropFirst().first(where: { $0.lowercased().hasPrefix(name + ":") })
        else { return nil }
        return line.dropFirst(name.count + 1).trimmingCharacters(in: .whitespaces)
    }

    /// Server-sent events, one decision record per event: the kept records after `after` (all of
    /// them when nil, preceded by a `counts` event of the totals), then each new one as it is logged.
    private func startStream(_ server: ProxyServer, after: Int?, head: Bool) {
        guard !head else {
            return respond(200, "", head: true, type: "text/event-stream")
        }
        streaming = true
        loop.clock.cancel(self)
        response = Array(("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\n"
            + "X-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\nretry: 2000\n\n").utf8)
        // The page going away is the only thing the client sends: its end finishes the stream.
        channel.onReadable { [unowned self] in watchForEnd() }
        channel.wantRead(true)
        if let after {
            cursor = after
        } else {
            let snapshot = feed.snapshot(recent: 0)
            response += Array("event: counts\ndata: \(LivePage.snapshot(snapshot, mode: server.mode))\n\n".utf8)
            cursor = max(0, snapshot.through - LiveFeed.capacity)
        }
        lastDrained = monotonic()
        pump()
        loop.clock.schedule(self, after: Self.pumpInterval, repeating: true) { [unowned self] in pump() }
    }

    /// How often the stream reads the feed: at 1,000 decisions/s, 250 records a read, in one write.
    static let pumpInterval = 0.25
    /// Bytes written but not yet taken by the reader above which the stream reads nothing new: a
    /// page that cannot keep up (a busy tab, a slow link) holds back the feed rather than this
    /// buffer, and the feed answers its next read with the totals (a `counts` event) once the
    /// records it missed are gone. So the page is never more than the ring and the sockets' buffers
    /// behind, and this side holds at most this much plus one read for it.
    static let backlog = 256 << 10
    /// A reader that takes nothing for this long while bytes wait is let go.
    static let stalledSeconds = 60.0

    private func pump() {
        guard !done, let server, monotonic() < streamEnd, !feed.streamsEnded.load(ordering: .relaxed) else { return finish() }
        let now = monotonic()
        if response.count < Self.backlog {
            switch feed.read(after: cursor) {
            case .records(let entries):
                for entry in entries {
                    cursor = entry.sequence
                    let json = entry.record.json(policy: entry.policy).compact
                    response += Array("id: \(entry.sequence)\ndata: \(json)\n\n".utf8)
                }
            case .gap(let snapshot, let skipped):
                // The id moves the reader's Last-Event-ID past the records it will never get.
                cursor = snapshot.through
                let counts = LivePage.snapshot(snapshot, mode: server.mode, skipped: skipped)
                response += Array("event: counts\nid: \(cursor)\ndata: \(counts)\n\n".utf8)
            }
        } else if now - lastDrained > Self.stalledSeconds {
            return finish()
        }
        if response.isEmpty, now - lastWrite > 15 {
            response += Array(": keep-alive\n\n".utf8) // proxies in between close silent streams
        }
        if !response.isEmpty { lastWrite = now }
        writeResponse()
    }

    private func watchForEnd() {
        while true {
            switch try? SystemCall.read(channel.fd, into: loop.scratch) {
            case .done?: continue
            case .wouldBlock?: return
            default: return finish()
            }
        }
    }

    private func finish() {
        guard !done else { return }
        done = true
        loop.clock.cancel(self)
        channel.close()
        retainSelf = nil
    }
}
