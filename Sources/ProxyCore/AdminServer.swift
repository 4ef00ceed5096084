import CAtsgateShims
import Dispatch
import Glibc
import POSIX

/// The admin listener: `/metrics` (Prometheus text), `/healthz` (every event loop is running) and
/// `/readyz` (accepting; 503 once a stop began). It lives on the first loop; each request is answered
/// and the connection closed, which is all a scraper or a probe needs.
final class AdminServer {
    let fd: Int32
    private let loop: EventLoop
    weak var server: ProxyServer?
    private var listener: Channel?

    init(fd: Int32, loop: EventLoop) {
        self.fd = fd
        self.loop = loop
    }

    func start() {
        loop.execute { [self] in
            let channel = Channel(fd: fd, poller: loop.poller)
            channel.onReadable { [unowned self] in accept() }
            channel.wantRead(true)
            listener = channel
        }
    }

    private func accept() {
        for _ in 0..<16 {
            guard let client = try? SystemCall.accept(fd) else { return }
            AdminExchange(fd: client.fd, loop: loop, server: server).start()
        }
    }
}

/// One admin request and its answer.
private final class AdminExchange {
    private let channel: Channel
    private let loop: EventLoop
    private weak var server: ProxyServer?
    private var request: [UInt8] = []
    private var response: [UInt8] = []
    private var done = false
    /// Keeps the exchange alive while it waits for the socket (channels hold handlers, not owners).
    private var retainSelf: AdminExchange?

    init(fd: Int32, loop: EventLoop, server: ProxyServer?) {
        channel = Channel(fd: fd, poller: loop.poller)
        self.loop = loop
        self.server = server
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
        guard request.withUnsafeBytes({ HeaderFields.headEnd($0, maximumLength: 8192) }) != nil else { return }
        channel.wantRead(false)
        let line = request.prefix { $0 != 0x0D && $0 != 0x0A }
        let parts = String(decoding: line, as: UTF8.self).split(separator: " ")
        guard parts.count == 3, parts[2].hasPrefix("HTTP/1.") else { return respond(400, "bad request\n") }
        let method = parts[0]
        let path = parts[1].prefix { $0 != "?" }
        guard method == "GET" || method == "HEAD" else { return respond(405, "GET only\n", headers: [("Allow", "GET, HEAD")]) }
        let head = method == "HEAD"
        guard let server else { return respond(503, "stopping\n", head: head) }
        switch path {
        case "/metrics":
            server.renderMetrics(on: loop.queue) { [self] text in
                respond(200, text, head: head, type: "text/plain; version=0.0.4; charset=utf-8")
            }
        case "/healthz":
            let health = server.health
            respond(health.healthy ? 200 : 503, health.detail + "\n", head: head)
        case "/readyz":
            respond(server.isReady ? 200 : 503, server.isReady ? "ready\n" : "stopping\n", head: head)
        default:
            respond(404, "not found: try /metrics, /healthz or /readyz\n", head: head)
        }
    }

    private func respond(_ status: Int, _ body: String, head: Bool = false, headers: [(String, String)] = [],
                         type: String = "text/plain; charset=utf-8") {
        guard !done else { return }
        response = ProxyResponse.render(status: status, headers: headers, body: body, keepAlive: false,
                                        contentType: type, includeBody: !head)
        writeResponse()
    }

    private func writeResponse() {
        while !response.isEmpty {
            switch response.withUnsafeBytes({ try? SystemCall.write(channel.fd, $0) }) {
            case .done(let n)?: response.removeFirst(n)
            case .wouldBlock?: return channel.wantWrite(true)
            default: return finish()
            }
        }
        finish()
    }

    private func finish() {
        guard !done else { return }
        done = true
        loop.clock.cancel(self)
        channel.close()
        retainSelf = nil
    }
}
