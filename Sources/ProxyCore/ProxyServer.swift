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
        /// Connections open now (for --max-connections).
        let open = Atomic<Int>(0)
    }
}

/// The listening side of the proxy. Every loop queue (about one per core) watches every listening
/// socket in its own poller and accepts for itself, so a new connection is handled where it was
/// accepted, with no hand-off.
public final class ProxyServer: @unchecked Sendable {
    private let context: ProxyContext
    private let loops: [EventLoop]
    private let listenFDs: [Int32]
    private let addresses: [SocketAddress]
    /// Set while any loop has paused accepting at the connection cap.
    private let anyPaused = Atomic<Bool>(false)

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
        listenFDs = bound.map(\.0)
        addresses = bound.map(\.1)
        let owner = WeakBox<ProxyServer>()
        context = ProxyContext(configuration: configuration) { owner.value?.connectionClosed() }
        owner.value = self
    }

    /// The addresses actually bound (with real ports when 0 was asked for).
    public var boundAddresses: [SocketAddress] { addresses }

    public func start() {
        // splice(2) into a socket whose peer has gone raises SIGPIPE (MSG_NOSIGNAL only covers send);
        // the relay handles EPIPE itself.
        signal(SIGPIPE, SIG_IGN)
        for loop in loops {
            loop.queue.async { [self] in
                for fd in listenFDs {
                    let channel = Channel(fd: fd, poller: loop.poller)
                    channel.onReadable { [unowned self] in accept(on: fd, loop: loop) }
                    channel.wantRead(true)
                    loop.listeners.append(channel)
                }
                // Log lines go out at least on every clock tick.
                loop.clock.schedule(loop, after: LoopClock.resolution, repeating: true) { [context] in
                    context.log.flush(&loop.logBuffer)
                }
            }
        }
    }

    /// Writes out every loop's buffered decision-log lines.
    public func flushLog() {
        for loop in loops { loop.queue.sync { context.log.flush(&loop.logBuffer) } }
    }

    private func accept(on listenFD: Int32, loop: EventLoop) {
        // A bounded batch per wake-up keeps the loops fair to the connections they already have.
        for _ in 0..<64 {
            if context.counters.open.load(ordering: .relaxed) >= context.configuration.maximumConnections {
                return pause(loop)
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
                    pause(loop)
                    loop.queue.asyncAfter(deadline: .now() + .milliseconds(100)) { [self] in resume(loop) }
                    return
                default:
                    return // EAGAIN: another loop took it, or the backlog is empty
                }
            }
            guard let client = SocketAddress(storage: storage) else {
                SystemCall.close(fd)
                continue
            }
            Socket.setNoDelay(fd)
            context.counters.open.add(1, ordering: .relaxed)
            let connection = ProxyConnection(fd: fd, clientAddress: client, context: context, loop: loop)
            if context.configuration.allowClients.contains(where: { $0.contains(client.ip) }) {
                connection.start()
            } else {
                connection.refuseClient()
            }
        }
    }

    private func pause(_ loop: EventLoop) {
        guard !loop.acceptPaused else { return }
        loop.acceptPaused = true
        anyPaused.store(true, ordering: .relaxed)
        for listener in loop.listeners { listener.wantRead(false) }
    }

    private func resume(_ loop: EventLoop) {
        guard loop.acceptPaused else { return }
        loop.acceptPaused = false
        for listener in loop.listeners { listener.wantRead(true) }
    }

    /// Below the cap again: every paused loop resumes accepting.
    private func connectionClosed() {
        guard anyPaused.load(ordering: .relaxed),
              context.counters.open.load(ordering: .relaxed) < context.configuration.maximumConnections else { return }
        anyPaused.store(false, ordering: .relaxed)
        for loop in loops { loop.queue.async { [self] in resume(loop) } }
    }
}

/// Lets the context reach the server without keeping it alive.
private final class WeakBox<Value: AnyObject>: @unchecked Sendable {
    weak var value: Value?
}
