import ATSPolicy
import CAtsgateShims
import Dispatch
import Glibc
import Synchronization

/// What every connection shares: configuration, log, resolver and counters.
final class ProxyContext: Sendable {
    /// The pseudonym in Via headers; a request that already carries it is looping.
    static let viaToken = "atsgate"

    let configuration: ProxyConfiguration
    let log: DecisionLog
    let resolver: Resolver
    let counters = Counters()
    let onConnectionClosed: @Sendable () -> Void

    init(configuration: ProxyConfiguration, onConnectionClosed: @escaping @Sendable () -> Void) {
        self.configuration = configuration
        log = DecisionLog(format: configuration.logFormat, policy: configuration.policyLabel)
        resolver = Resolver(pinned: configuration.resolve)
        self.onConnectionClosed = onConnectionClosed
    }

    func connectionClosed() {
        counters.open.subtract(1, ordering: .relaxed)
        onConnectionClosed()
    }

    final class Counters: Sendable {
        let open = Atomic<Int>(0)
        let accepted = Atomic<Int>(0)
        let decisions = Atomic<Int>(0)
    }
}

/// The listening side of the proxy: accepts on each address and hands every connection to one of a
/// small fixed set of serial queues (about one per core), round robin.
public final class ProxyServer: @unchecked Sendable {
    private let context: ProxyContext
    private let loops: [EventLoop]
    private let acceptQueue = DispatchQueue(label: "atsgate.accept")
    private var listeners: [(fd: Int32, source: DispatchSourceRead, address: SocketAddress)] = []
    private var paused = false
    private var next = 0

    /// Binds every listen address; throws a one-line error (e.g. port in use) before anything runs.
    public init(configuration: ProxyConfiguration) throws(SystemError) {
        var configuration = configuration
        let count = configuration.loopCount > 0 ? configuration.loopCount : max(1, sysconf(Int32(_SC_NPROCESSORS_ONLN)))
        loops = (0..<count).map { EventLoop(label: "atsgate.loop.\($0)") }
        var bound: [(Int32, SocketAddress)] = []
        do {
            for address in configuration.listen {
                let fd = try Socket.listen(on: address)
                bound.append((fd, Socket.localAddress(fd) ?? address))
            }
        } catch {
            for (fd, _) in bound { SystemCall.close(fd) }
            throw error
        }
        // Port 0 binds an ephemeral port: record the real one (for loop detection and the log).
        configuration.listen = bound.map(\.1)
        let owner = WeakBox<ProxyServer>()
        context = ProxyContext(configuration: configuration) { owner.value?.connectionClosed() }
        for (fd, address) in bound {
            let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: acceptQueue)
            listeners.append((fd, source, address))
        }
        owner.value = self
    }

    /// The addresses actually bound (with real ports when 0 was asked for).
    public var boundAddresses: [SocketAddress] { listeners.map(\.address) }

    public func start() {
        // splice(2) into a socket whose peer has gone raises SIGPIPE (MSG_NOSIGNAL only covers send);
        // the relay handles EPIPE itself.
        signal(SIGPIPE, SIG_IGN)
        for listener in listeners {
            listener.source.setEventHandler { [self] in accept(on: listener.fd) }
            listener.source.resume()
        }
    }

    /// Waits until the decision log has written every record so far.
    public func flushLog() { context.log.flush() }

    private func accept(on listenFD: Int32) {
        while true {
            if context.counters.open.load(ordering: .relaxed) >= context.configuration.maximumConnections {
                return pause()
            }
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let fd = withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { atsgate_accept(listenFD, $0, &length) }
            }
            if fd < 0 {
                switch errno {
                case EINTR, ECONNABORTED: continue
                case EMFILE, ENFILE, ENOBUFS, ENOMEM:
                    // Out of descriptors: stop accepting for a moment instead of spinning.
                    pause()
                    acceptQueue.asyncAfter(deadline: .now() + .milliseconds(100)) { [self] in resume() }
                    return
                default: return
                }
            }
            guard let client = SocketAddress(storage: storage) else {
                SystemCall.close(fd)
                continue
            }
            Socket.setNoDelay(fd)
            context.counters.open.add(1, ordering: .relaxed)
            context.counters.accepted.add(1, ordering: .relaxed)
            let loop = loops[next]
            next = (next + 1) % loops.count
            let allowed = context.configuration.allowClients.contains { $0.contains(client.ip) }
            let context = self.context
            loop.queue.async {
                let connection = ProxyConnection(fd: fd, clientAddress: client, context: context, loop: loop)
                if allowed { connection.start() } else { connection.refuseClient() }
            }
        }
    }

    private func pause() {
        guard !paused else { return }
        paused = true
        for listener in listeners { listener.source.suspend() }
    }

    private func resume() {
        guard paused else { return }
        paused = false
        for listener in listeners { listener.source.resume() }
    }

    private func connectionClosed() {
        guard paused else { return }
        acceptQueue.async { [self] in
            if context.counters.open.load(ordering: .relaxed) < context.configuration.maximumConnections { resume() }
        }
    }
}

/// Lets the context reach the server without keeping it alive.
private final class WeakBox<Value: AnyObject>: @unchecked Sendable {
    weak var value: Value?
}
