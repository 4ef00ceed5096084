import ATSPolicy
import DecisionLog
import Dispatch
import EventLoops
import Glibc
import Inspection
import ProxyAccess
import QUICGate
import Synchronization
@_exported import POSIX

/// The listening side of the proxy. Every loop queue (about one per core) watches every listening
/// socket in its own poller and accepts for itself, so a new connection is handled where it was
/// accepted, with no hand-off.
public final class ProxyServer: @unchecked Sendable {
    /// The configuration generation new connections get (see Generation).
    let current: Mutex<Generation>
    let daemon: DaemonState
    let loops: [ProxyLoop]
    /// How many event loops run, and why that many (the start-up line says both).
    public let loopAllowance: CPUAllowance
    let listenFDs: [Int32]
    private let addresses: [SocketAddress]
    /// By index of `listenFDs`: what clients do there (`--listen-tls`, `--listen-transparent`, ..., or
    /// the systemd socket's name).
    private let kinds: [ListenerKind]
    /// The QUIC listeners (`--listen-quic`), read on the first loop; nil without any.
    let quicGate: QUICGate?
    /// Set while any loop has paused accepting at the connection cap.
    private let anyPaused = Atomic<Bool>(false)
    let stopping = Atomic<Bool>(false)
    let reloadsSucceeded = Atomic<Int>(0)
    let reloadsFailed = Atomic<Int>(0)
    let lastReload = Mutex<Double>(0)

    /// Binds every listen address, plain and TLS (or takes `inherited` and `inheritedTLS`, the sockets
    /// a supervisor bound: systemd's socket activation, which then replaces both lists); throws a
    /// one-line error (e.g. port in use) before anything runs. Every record logged is also handed to
    /// `observer` (the live page's feed). `now` is the time the loops' deadlines are kept in: a test
    /// gives a MovableClock's, to move past a timeout instead of waiting for it.
    package init(configuration: ProxyConfiguration, sink: LogSink = LogSink(), inherited: [Int32] = [],
                inheritedTLS: [Int32] = [], inheritedGate: (transparent: [Int32], tproxy: [Int32], quic: [Int32]) = ([], [], []),
                observer: DecisionObserver? = nil,
                now: @escaping () -> Double = monotonic) throws(SystemError) {
        var configuration = configuration
        // One loop per CPU the process may use (affinity and cgroup quota included), unless configured.
        loopAllowance = configuration.listeners.loopCount > 0
            ? CPUAllowance(count: configuration.listeners.loopCount, source: "as configured (--loops)") : CPUAllowance.current()
        loops = (0..<loopAllowance.count).map { ProxyLoop(label: "atsgate.loop.\($0)", now: now) }
        var bound: [(fd: Int32, address: SocketAddress, kind: ListenerKind)] = []
        var quic: [QUICGate.Listener] = []
        do throws(SystemError) {
            let listeners = configuration.listeners
            if inherited.isEmpty && inheritedTLS.isEmpty && (inheritedGate.transparent + inheritedGate.tproxy + inheritedGate.quic).isEmpty {
                for (address, kind) in listeners.proxy.map({ ($0, ListenerKind.proxy) }) + listeners.tls.map({ ($0, .tls) })
                    + listeners.transparent.map({ ($0, .transparent) }) + listeners.tproxy.map({ ($0, .tproxy) }) {
                    let fd = try Socket.listen(on: address, transparent: kind == .tproxy)
                    bound.append((fd, Socket.localAddress(fd) ?? address, kind))
                }
                quic = try QUICGate.bind(listeners.quic)
            } else {
                for (fd, kind) in inherited.map({ ($0, ListenerKind.proxy) }) + inheritedTLS.map({ ($0, .tls) })
                    + inheritedGate.transparent.map({ ($0, .transparent) }) + inheritedGate.tproxy.map({ ($0, .tproxy) }) {
                    bound.append((fd, try Socket.adopt(fd), kind))
                    Socket.setNoDelay(fd) // inherited by the accepted sockets
                }
                quic = try QUICGate.adopt(inheritedGate.quic)
            }
        } catch {
            for fd in bound.map(\.fd) + quic.map(\.fd) { SystemCall.close(fd) }
            throw error
        }
        // Port 0 binds an ephemeral port: record the real one (for loop detection and the log).
        func of(_ kind: ListenerKind) -> [SocketAddress] { bound.filter { $0.kind == kind }.map(\.address) }
        configuration.listeners.proxy = of(.proxy)
        configuration.listeners.tls = of(.tls)
        configuration.listeners.transparent = of(.transparent)
        configuration.listeners.tproxy = of(.tproxy)
        configuration.listeners.quic = quic.map(\.address)
        quicGate = quic.isEmpty ? nil : QUICGate(listeners: quic)
        listenFDs = bound.map(\.fd)
        addresses = bound.map(\.address)
        kinds = bound.map(\.kind)
        let owner = WeakBox<ProxyServer>()
        daemon = DaemonState(sink: sink, observer: observer) { owner.value?.connectionClosed() }
        current = Mutex(Generation(configuration: configuration, daemon: daemon, number: 1))
        lastReload.withLock { $0 = wallClock() }
        owner.value = self
    }

    /// The plain listeners' addresses actually bound (with real ports when 0 was asked for).
    public var boundAddresses: [SocketAddress] { bound(.proxy) }

    /// The TLS listeners' addresses actually bound.
    public var boundTLSAddresses: [SocketAddress] { bound(.tls) }

    /// The QUIC listeners' addresses actually bound.
    package var boundQUICAddresses: [SocketAddress] { quicGate?.listeners.map(\.address) ?? [] }

    /// The addresses actually bound of one kind of listener.
    package func bound(_ kind: ListenerKind) -> [SocketAddress] { zip(addresses, kinds).filter { $0.1 == kind }.map(\.0) }

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
                for (fd, kind) in zip(listenFDs, kinds) {
                    let channel = Channel(fd: fd, poller: loop.poller)
                    channel.onReadable { [unowned self] in accept(on: fd, kind: kind, proxyLoop) }
                    channel.wantRead(true)
                    proxyLoop.listeners.append(channel)
                }
                if proxyLoop === loops[0] { startQUIC(on: proxyLoop) }
                // Records go to the log's writer at least on every clock tick; the tick also proves
                // the loop alive.
                loop.clock.schedule(loop, after: LoopClock.resolution, repeating: true) { [daemon] in
                    proxyLoop.handOverLog(to: daemon.sink)
                    loop.lastTick.store(monotonicMilliseconds(), ordering: .relaxed)
                }
            }
        }
    }

    /// Starts this process's run in the decision log (docs/decision-log-ledger.md): its `run-start`,
    /// then a `run-checkpoint` every `--log-checkpoint` seconds with the connections open. Call it
    /// before `start()`, so that the run-start is the run's first record. `predecessor`: the process
    /// this one took over from (an upgrade).
    public func startRun(predecessor: RunPeer? = nil) {
        let seconds = current.withLock { $0.configuration.log.checkpointSeconds }
        let start = RunStart(version: ProxyServer.version, generation: generation, checkpointSeconds: seconds,
                             predecessor: predecessor)
        // Weak: the sink is the server's own (a strong capture would keep both for ever).
        daemon.sink.startRun(start) { [weak self] in
            RunStatus(open: self?.openConnections ?? 0, generation: self?.generation ?? 0)
        }
    }

    /// Hands every loop's records to the log, whatever its bound, and waits up to `seconds` for them
    /// to be written (a second SIGTERM); returns how many are still unwritten. `stop`: how the run
    /// ended, for its `run-stop`; without one the run has none (connections were cut unlogged).
    @discardableResult
    public func flushLog(within seconds: Double, stop: RunStop? = nil) -> Int {
        flushLog(until: monotonic() + seconds, stop: stop)
    }

    /// The daemon is stopping: the log's last records say how many records were lost, if any were,
    /// and how the run ended.
    func flushLog(until deadline: Double, stop: RunStop?) -> Int {
        for proxyLoop in loops { proxyLoop.loop.queue.sync { daemon.sink.offer(&proxyLoop.logBatch, force: true) } }
        return daemon.sink.drain(within: deadline - monotonic(), closing: true, stop: stop)
    }

    /// The decision log's buffer and losses.
    public var logState: LogState { daemon.sink.state }

    /// Opens the log file again (SIGUSR1, after logrotate moved it).
    public func reopenLog() {
        daemon.sink.reopen()
    }

    // MARK: accepting

    private func accept(on listenFD: Int32, kind: ListenerKind, _ proxyLoop: ProxyLoop) {
        let loop = proxyLoop.loop
        let generation = current.withLock { $0 }
        let localPort = listenFDs.firstIndex(of: listenFD).map { addresses[$0].port } ?? 0
        // The log is full (--log-overflow pause): accept nothing until it drains.
        if daemon.sink.isPaused {
            proxyLoop.logPaused = true
            return proxyLoop.updateListening()
        }
        // A bounded batch per wake-up keeps the loops fair to the connections they already have.
        for _ in 0..<64 {
            if daemon.open.load(ordering: .relaxed) >= generation.configuration.listeners.maximumConnections {
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
            daemon.open.add(1, ordering: .relaxed)
            let target = leastLoaded(than: proxyLoop)
            target.load.add(1, ordering: .relaxed)
            if target === proxyLoop {
                begin(fd: fd, client: client, localPort: localPort, kind: kind, generation: generation, on: proxyLoop)
            } else {
                target.loop.execute { [self] in
                    begin(fd: fd, client: client, localPort: localPort, kind: kind, generation: generation, on: target)
                }
            }
        }
    }

    /// Where a connection accepted on `proxyLoop` goes: there, unless another loop holds clearly fewer
    /// connections. Every loop watches the listening sockets, and whichever wakes first takes the
    /// whole backlog: a client that opens its keep-alive connections at once (wrk's 32, a device's
    /// pool) found 3 in 4 of them on one loop, which then ran out of CPU while the other idled. The
    /// slack keeps balanced loads from handing connections to and fro: a hand-off is a wake-up of
    /// the other loop.
    private func leastLoaded(than proxyLoop: ProxyLoop) -> ProxyLoop {
        guard loops.count > 1 else { return proxyLoop }
        let mine = proxyLoop.load.load(ordering: .relaxed)
        var best = proxyLoop
        var bestLoad = mine
        for other in loops where other !== proxyLoop {
            let load = other.load.load(ordering: .relaxed)
            if load < bestLoad { best = other; bestLoad = load }
        }
        return mine - bestLoad > ProxyServer.balanceSlack + mine / 4 ? best : proxyLoop
    }

    /// Connections a loop may hold beyond the least loaded one before new ones go there instead.
    static let balanceSlack = 4

    /// Starts a connection on the loop that will own it (on that loop's queue).
    private func begin(fd: Int32, client: SocketAddress, localPort: Int, kind: ListenerKind, generation: Generation,
                       on proxyLoop: ProxyLoop) {
        proxyLoop.metrics.connectionsAccepted += 1
        let arrival = kind == .transparent || kind == .tproxy
            ? TransparentArrival.read(fd, tproxy: kind == .tproxy, listenerPort: localPort, isOwnListener: generation.isOwnListener)
            : nil
        let connection = ProxyConnection(fd: fd, clientAddress: client, localPort: localPort, tls: kind == .tls,
                                         transparent: arrival, generation: generation, loop: proxyLoop)
        if generation.configuration.allowClients.contains(where: { $0.contains(client.ip) }) {
            switch kind {
            case .tls: connection.startTLS()
            case .transparent, .tproxy: connection.startTransparent()
            case .proxy: connection.start()
            }
        } else {
            connection.refuseClient()
        }
    }

    private func pause(_ proxyLoop: ProxyLoop) {
        guard !proxyLoop.acceptPaused else { return }
        proxyLoop.acceptPaused = true
        anyPaused.store(true, ordering: .relaxed)
        proxyLoop.updateListening()
    }

    private func resume(_ proxyLoop: ProxyLoop) {
        guard proxyLoop.acceptPaused else { return }
        proxyLoop.acceptPaused = false
        proxyLoop.updateListening()
    }

    /// Below the cap again: every paused loop resumes accepting.
    private func connectionClosed() {
        let cap = current.withLock { $0.configuration.listeners.maximumConnections }
        guard anyPaused.load(ordering: .relaxed), daemon.open.load(ordering: .relaxed) < cap else { return }
        anyPaused.store(false, ordering: .relaxed)
        for proxyLoop in loops { proxyLoop.loop.execute { [self] in resume(proxyLoop) } }
    }
}

/// What clients do on a listening socket.
package enum ListenerKind {
    /// Ask the proxy (`--listen`).
    case proxy
    /// The same, over TLS to the proxy (`--listen-tls`).
    case tls
    /// Redirected by a firewall's NAT (`--listen-transparent`) or handed over by TPROXY (`--listen-tproxy`).
    case transparent, tproxy
}

/// Lets each generation reach the server without keeping it alive.
private final class WeakBox<Value: AnyObject>: @unchecked Sendable {
    weak var value: Value?
}
