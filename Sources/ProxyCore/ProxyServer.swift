import ATSPolicy
import Dispatch
import EventLoop
import Glibc
import Synchronization
@_exported import POSIX

/// The listening side of the proxy. Every loop queue (about one per core) watches every listening
/// socket in its own poller and accepts for itself, so a new connection is handled where it was
/// accepted, with no hand-off.
public final class ProxyServer: @unchecked Sendable {
    /// The configuration generation new connections get (see ProxyContext).
    private let current: Mutex<ProxyContext>
    private let shared: ServerShared
    private let loops: [ProxyLoop]
    /// How many event loops run, and why that many (the start-up line says both).
    public let loopAllowance: CPUAllowance
    private let listenFDs: [Int32]
    private let addresses: [SocketAddress]
    /// Set while any loop has paused accepting at the connection cap.
    private let anyPaused = Atomic<Bool>(false)
    private let stopping = Atomic<Bool>(false)
    private let reloadsSucceeded = Atomic<Int>(0)
    private let reloadsFailed = Atomic<Int>(0)
    private let lastReload = Mutex<Double>(0)

    /// Binds every listen address (or takes `inherited`, the sockets a supervisor bound: systemd's
    /// socket activation); throws a one-line error (e.g. port in use) before anything runs. Every
    /// record logged is also handed to `observer` (the live page's feed).
    package init(configuration: ProxyConfiguration, sink: LogSink = LogSink(), inherited: [Int32] = [],
                observer: DecisionObserver? = nil) throws(SystemError) {
        var configuration = configuration
        // One loop per CPU the process may use (affinity and cgroup quota included), unless configured.
        loopAllowance = configuration.loopCount > 0
            ? CPUAllowance(count: configuration.loopCount, source: "as configured (--loops)") : CPUAllowance.current()
        loops = (0..<loopAllowance.count).map { ProxyLoop(label: "atsgate.loop.\($0)") }
        var bound: [(Int32, SocketAddress)] = []
        do throws(SystemError) {
            if inherited.isEmpty {
                for address in configuration.listen {
                    let fd = try Socket.listen(on: address)
                    bound.append((fd, Socket.localAddress(fd) ?? address))
                }
            } else {
                for fd in inherited {
                    try Socket.setNonBlocking(fd)
                    Socket.setNoDelay(fd) // inherited by the accepted sockets
                    guard let address = Socket.localAddress(fd) else {
                        throw SystemError(call: "getsockname of inherited descriptor \(fd)", code: EBADF)
                    }
                    bound.append((fd, address))
                }
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
        shared = ServerShared(sink: sink, observer: observer) { owner.value?.connectionClosed() }
        current = Mutex(ProxyContext(configuration: configuration, shared: shared, generation: 1))
        lastReload.withLock { $0 = wallClock() }
        owner.value = self
    }

    /// The addresses actually bound (with real ports when 0 was asked for).
    public var boundAddresses: [SocketAddress] { addresses }

    /// The loop the operator's side (the admin listener) runs on.
    package var firstLoop: EventLoop { loops[0].loop }

    public func start() {
        // splice(2) into a socket whose peer has gone raises SIGPIPE (MSG_NOSIGNAL only covers send);
        // the relay handles EPIPE itself.
        signal(SIGPIPE, SIG_IGN)
        for proxyLoop in loops {
            let loop = proxyLoop.loop
            loop.lastTick.store(monotonicMilliseconds(), ordering: .relaxed)
            loop.execute { [self] in
                for fd in listenFDs {
                    let channel = Channel(fd: fd, poller: loop.poller)
                    channel.onReadable { [unowned self] in accept(on: fd, proxyLoop) }
                    channel.wantRead(true)
                    proxyLoop.listeners.append(channel)
                }
                // Log lines go out at least on every clock tick; the tick also proves the loop alive.
                loop.clock.schedule(loop, after: LoopClock.resolution, repeating: true) { [shared] in
                    shared.sink.flush(&proxyLoop.logBuffer)
                    loop.lastTick.store(monotonicMilliseconds(), ordering: .relaxed)
                }
            }
        }
    }

    /// Writes out every loop's buffered decision-log lines.
    public func flushLog() {
        for proxyLoop in loops { proxyLoop.loop.queue.sync { shared.sink.flush(&proxyLoop.logBuffer) } }
    }

    // MARK: reload

    /// Makes `configuration` the one new connections get; open connections keep theirs. Settings
    /// that belong to the sockets (listen, admin, loops) cannot change without a restart: they are
    /// kept, and the returned warnings say so.
    @discardableResult
    public func reload(_ configuration: ProxyConfiguration) -> [String] {
        var configuration = configuration
        var warnings: [String] = []
        let old = current.withLock { $0.configuration }
        if Set(configuration.listen) != Set(old.listen), !configuration.listen.allSatisfy({ $0.port == 0 }) {
            warnings.append("listen addresses do not change on reload; restart to apply")
        }
        if configuration.admin != old.admin, configuration.admin?.port != 0 {
            warnings.append("the admin address does not change on reload; restart to apply")
        }
        if configuration.loopCount != old.loopCount {
            warnings.append("the number of event loops does not change on reload; restart to apply")
        }
        configuration.listen = old.listen
        configuration.admin = old.admin
        configuration.loopCount = old.loopCount
        current.withLock { context in
            context = ProxyContext(configuration: configuration, shared: shared, generation: context.generation + 1)
        }
        reloadsSucceeded.add(1, ordering: .relaxed)
        lastReload.withLock { $0 = wallClock() }
        return warnings
    }

    /// Counts a reload that was refused (the configuration stays as it was).
    public func reloadFailed() {
        reloadsFailed.add(1, ordering: .relaxed)
    }

    /// The generation new connections get: 1 at start, one more per successful reload.
    public var generation: Int { current.withLock { $0.generation } }

    // MARK: stop

    /// Stops accepting, closes idle connections, lets the others finish for up to `grace` seconds,
    /// then ends the rest (each with its own record), flushes the log and calls `completion` with the
    /// number of connections that were cut. `listenersClosed` runs once nothing accepts any more.
    public func stop(grace: Double, listenersClosed: @escaping @Sendable () -> Void = {},
                     completion: @escaping @Sendable (Int) -> Void) {
        guard !stopping.exchange(true, ordering: .relaxed) else { return }
        let group = DispatchGroup()
        for proxyLoop in loops {
            proxyLoop.loop.execute(in: group) {
                proxyLoop.draining = true
                for listener in proxyLoop.listeners { listener.detach() }
                proxyLoop.listeners = []
                for connection in Array(proxyLoop.connections.values) { connection.closeIfIdle() }
            }
        }
        group.notify(queue: .global()) { [self] in
            for fd in listenFDs { SystemCall.close(fd) }
            listenersClosed()
            waitForConnections(until: monotonic() + grace, completion: completion)
        }
    }

    private func waitForConnections(until deadline: Double, completion: @escaping @Sendable (Int) -> Void) {
        if shared.open.load(ordering: .relaxed) == 0 {
            flushLog()
            return completion(0)
        }
        if monotonic() < deadline {
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(50)) { [self] in
                waitForConnections(until: deadline, completion: completion)
            }
            return
        }
        var cut = 0
        for proxyLoop in loops {
            proxyLoop.loop.queue.sync {
                for connection in Array(proxyLoop.connections.values) {
                    cut += 1
                    connection.endAtShutdown()
                }
                shared.sink.flush(&proxyLoop.logBuffer)
            }
        }
        completion(cut)
    }

    // MARK: health and metrics

    /// Whether every loop ran its clock recently; otherwise which one is stuck.
    public var health: (healthy: Bool, detail: String) {
        let time = monotonicMilliseconds()
        for (index, proxyLoop) in loops.enumerated() {
            let silent = time - proxyLoop.loop.lastTick.load(ordering: .relaxed)
            if silent > 5_000 { return (false, "event loop \(index) has not run for \(silent / 1000) s") }
        }
        return (true, "ok")
    }

    /// Ready while accepting: false once a stop began.
    public var isReady: Bool { !stopping.load(ordering: .relaxed) }

    public var openConnections: Int { shared.open.load(ordering: .relaxed) }

    /// Decision records written since the start.
    public var decisionCount: Int { shared.decisions.load(ordering: .relaxed) }

    /// Sums every loop's counters (each read on its own queue) and hands the sum over on `queue`.
    package func collectMetrics(on queue: DispatchQueue, completion: @escaping (LoopMetrics) -> Void) {
        let collected = Mutex(LoopMetrics())
        let group = DispatchGroup()
        for proxyLoop in loops {
            proxyLoop.loop.execute(in: group) {
                let metrics = proxyLoop.metrics
                collected.withLock { $0.add(metrics) }
            }
        }
        group.notify(queue: queue) { completion(collected.withLock { $0 }) }
    }

    /// The server-wide values of /metrics, as they are now.
    package var gauges: ServerGauges {
        ServerGauges(
            connectionsOpen: openConnections, generation: generation,
            reloadsSucceeded: reloadsSucceeded.load(ordering: .relaxed),
            reloadsFailed: reloadsFailed.load(ordering: .relaxed),
            lastReloadTime: lastReload.withLock { $0 }, draining: !isReady,
            probeCache: ["hit": shared.verdictHits.load(ordering: .relaxed),
                         "miss": shared.verdictMisses.load(ordering: .relaxed)],
            version: ProxyServer.version)
    }

    /// The version /metrics reports; the executable sets it.
    nonisolated(unsafe) public static var version = "unknown"

    // MARK: accepting

    private func accept(on listenFD: Int32, _ proxyLoop: ProxyLoop) {
        let loop = proxyLoop.loop
        let context = current.withLock { $0 }
        let localPort = listenFDs.firstIndex(of: listenFD).map { addresses[$0].port } ?? 0
        // A bounded batch per wake-up keeps the loops fair to the connections they already have.
        for _ in 0..<64 {
            if shared.open.load(ordering: .relaxed) >= context.configuration.maximumConnections {
                return pause(proxyLoop)
            }
            let accepted: (fd: Int32, peer: SocketAddress?)
            do {
                // nil: another loop took it, or the backlog is empty.
                guard let next = try SystemCall.accept(listenFD) else { return }
                accepted = next
            } catch {
                switch error.code {
                case EMFILE, ENFILE, ENOBUFS, ENOMEM:
                    // Out of descriptors: stop accepting for a moment instead of spinning.
                    pause(proxyLoop)
                    loop.queue.asyncAfter(deadline: .now() + .milliseconds(100)) { [self] in resume(proxyLoop) }
                default:
                    break
                }
                return
            }
            let fd = accepted.fd
            guard let client = accepted.peer else {
                SystemCall.close(fd)
                continue
            }
            shared.open.add(1, ordering: .relaxed)
            proxyLoop.metrics.connectionsAccepted += 1
            let connection = ProxyConnection(fd: fd, clientAddress: client, localPort: localPort,
                                             context: context, loop: proxyLoop)
            if context.configuration.allowClients.contains(where: { $0.contains(client.ip) }) {
                connection.start()
            } else {
                connection.refuseClient()
            }
        }
    }

    private func pause(_ proxyLoop: ProxyLoop) {
        guard !proxyLoop.acceptPaused else { return }
        proxyLoop.acceptPaused = true
        anyPaused.store(true, ordering: .relaxed)
        for listener in proxyLoop.listeners { listener.wantRead(false) }
    }

    private func resume(_ proxyLoop: ProxyLoop) {
        guard proxyLoop.acceptPaused else { return }
        proxyLoop.acceptPaused = false
        for listener in proxyLoop.listeners { listener.wantRead(true) }
    }

    /// Below the cap again: every paused loop resumes accepting.
    private func connectionClosed() {
        let cap = current.withLock { $0.configuration.maximumConnections }
        guard anyPaused.load(ordering: .relaxed), shared.open.load(ordering: .relaxed) < cap else { return }
        anyPaused.store(false, ordering: .relaxed)
        for proxyLoop in loops { proxyLoop.loop.execute { [self] in resume(proxyLoop) } }
    }
}

/// Lets the context reach the server without keeping it alive.
private final class WeakBox<Value: AnyObject>: @unchecked Sendable {
    weak var value: Value?
}
