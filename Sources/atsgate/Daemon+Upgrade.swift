import Admin
import DecisionLog
import Dispatch
import Foundation
import HandOver
import ProxyCore
import Systemd

/// SIGUSR2: the old process's side of a binary upgrade (docs/upgrades.md, design §4.4). It starts the
/// binary at the path it was started from, hands the new process every listener, then every plain
/// tunnel and idle keep-alive client, makes it the service's main process, lets what stayed finish
/// under the grace period and exits 0. Until the new process has said it accepts, this one never
/// stopped serving; until it has taken an item, that item is this one's. Any failure leaves this
/// process serving everything it still holds, with the reason on stderr, in
/// `atsgate_upgrades_total{result="failure"}` and on the status socket.
///
/// The steps run on a queue of their own (they wait on the new process); the loops never wait.
final class BinaryUpgrade: @unchecked Sendable {
    private let server: ProxyServer
    private let admin: AdminServer?
    private let sink: LogSink
    private let executable: ExecutableFile?
    private let timeout: Double
    private let grace: Double
    private let queue = DispatchQueue(label: "atsgate.upgrade")
    private let lock = NSLock()
    /// Guarded by `lock`.
    private var phase = Phase.idle
    private var child: ChildProcess?
    /// The link to the other process while one is there: the new one during an upgrade and this
    /// process's drain, the old one while this process takes over (SIGUSR1 goes both ways on it).
    private var peer: HandOverLink?
    private var sender: UpgradeSender?
    /// This process took over from another that has not gone yet: no upgrade of its own before.
    private var predecessor: Int32?
    /// Set once the status socket listens (on the main queue; read by the upgrade's steps).
    var status: UpgradeStatus? {
        get { lock.withLock { statusSocket } }
        set { lock.withLock { statusSocket = newValue } }
    }
    private var statusSocket: UpgradeStatus?
    /// Runs on the main queue once this process has let go of the service: the lifecycle stops
    /// sending anything to systemd, and a SIGTERM no longer ends the drain at once.
    var handedOver: @Sendable () -> Void = {}

    private enum Phase {
        case idle
        case starting
        case handingOver(pid: Int32)
        case draining(pid: Int32)
    }

    init(server: ProxyServer, admin: AdminServer?, sink: LogSink, executable: ExecutableFile?, timeout: Double,
         grace: Double) {
        self.server = server
        self.admin = admin
        self.sink = sink
        self.executable = executable
        self.timeout = timeout
        self.grace = grace
    }

    private var me: String { "PID \(getpid()) (\(AtsgateVersion.string))" }

    /// An upgrade is under way and has not handed the service over yet (a reload or a stop must
    /// wait for it, or end it).
    var inProgress: Bool {
        lock.withLock {
            switch phase {
            case .starting, .handingOver: true
            case .idle, .draining: false
            }
        }
    }

    /// This process handed its service over and drains.
    var draining: Bool {
        lock.withLock { if case .draining = phase { true } else { false } }
    }

    // MARK: SIGUSR2

    /// Begins an upgrade, unless one is under way or `refusal` (from the lifecycle: a stop, a reload)
    /// says why not. Called on the main queue.
    func begin(refusal: String?) {
        let busy: String? = lock.withLock {
            switch phase {
            case .starting: return "an upgrade is starting a new binary"
            case .handingOver(let pid): return "an upgrade to PID \(pid) is in progress"
            case .draining(let pid): return "this process has handed over to PID \(pid) and is draining"
            case .idle:
                if let predecessor { return "this process is still taking over from PID \(predecessor)" }
                return nil
            }
        }
        if let why = busy ?? refusal { return refused(why) }
        guard let executable else { return refused("the path this process was started from is not known") }
        switch executable.change() {
        case .missing(let code):
            return refused("\(executable.path): \(String(cString: strerror(code)))")
        case .unchanged:
            ServiceManager.say("upgrade: \(executable.path) is still the file this process runs: starting it again")
        case .replaced:
            ServiceManager.say("upgrade: starting the new \(executable.path)")
        }
        lock.withLock { phase = .starting }
        status?.began()
        queue.async { [self] in run(executable) }
    }

    /// SIGTERM while an upgrade has not handed over yet: it is given up, and this process stops as
    /// asked. Called on the main queue.
    func abandon(_ why: String) {
        guard inProgress, let child = lock.withLock({ self.child }) else { return }
        ServiceManager.say("upgrade: given up (\(why)): stopping PID \(child.pid)")
        // The steps see it exit and undo what they did (giveUp, abort).
        _ = try? child.signal(SIGKILL)
    }

    /// SIGUSR1 reached this process: the other one reopens its log file too.
    func forwardReopenLog() {
        guard let link = lock.withLock({ peer }), !link.isClosed else { return }
        try? link.send(.reopenLog, EmptyHeader())
    }

    // MARK: the steps (on `queue`)

    private func run(_ executable: ExecutableFile) {
        let deadline = ContinuousClock.now + .milliseconds(Int64(timeout * 1000))
        let child: ChildProcess
        let link: HandOverLink
        do {
            let (mine, theirs) = try DescriptorPassing.socketPair()
            defer { SystemCall.close(theirs) }
            do {
                child = try ChildProcess.spawn(
                    executable: executable.path, arguments: CommandLine.arguments,
                    environment: SystemdEnvironment.forSuccessor(of: SystemdEnvironment.current,
                                                                 adding: [HandOverProtocol.environmentVariable: "3"]),
                    inheriting: [theirs])
            } catch {
                SystemCall.close(mine)
                throw error
            }
            link = HandOverLink(fd: mine)
        } catch {
            return failed("\(error)")
        }
        lock.withLock {
            self.child = child
            peer = link
        }
        // Both processes write to standard output from now on.
        sink.setSharedOutput(true)

        // The new process says hello once its configuration and log are ready.
        let hello: HelloHeader
        switch expect(.hello, HelloHeader.self, on: link, from: child, until: deadline) {
        case .success(let header): hello = header
        case .failure(let error): return giveUp(child, link, error.description)
        }
        guard hello.protocol == HandOverProtocol.version else {
            return giveUp(child, link, "PID \(child.pid) (\(hello.version)) speaks hand-over protocol \(hello.protocol), "
                          + "this process \(HandOverProtocol.version)")
        }
        let successor = "PID \(child.pid) (\(hello.version))"

        // Every listener, by role; this process keeps accepting until the new one does.
        var listeners: [ListenersHeader.Listener] = []
        var descriptors: [Int32] = []
        for listener in server.listenersByRole {
            listeners.append(.init(role: listener.role, address: listener.address.description, fd: descriptors.count))
            descriptors.append(listener.fd)
        }
        if let admin {
            listeners.append(.init(role: "admin", address: admin.address?.description ?? "-", fd: descriptors.count))
            descriptors.append(admin.listeningSocket)
        }
        let counts = ListenersHeader(listeners: listeners,
                                     upgradesSucceeded: server.upgradesSucceeded.load(ordering: .relaxed),
                                     upgradesFailed: server.upgradesFailed.load(ordering: .relaxed),
                                     version: AtsgateVersion.string, pid: getpid(), run: LogRun.id)
        do {
            try link.send(.listeners, counts, descriptors: descriptors)
        } catch {
            return giveUp(child, link, error.description)
        }
        let listeningBy = min(deadline, ContinuousClock.now + .seconds(10))
        if case .failure(let error) = expect(.listening, ListeningHeader.self, on: link, from: child, until: listeningBy) {
            return giveUp(child, link, error.description)
        }

        // The new process accepts: this one stops, and hands over what can move.
        lock.withLock { phase = .handingOver(pid: child.pid) }
        let stopped = DispatchSemaphore(value: 0)
        server.stopAccepting { stopped.signal() }
        admin?.stopAccepting()
        stopped.wait()
        let sender = UpgradeSender(link: link)
        lock.withLock { self.sender = sender }
        let ended = DispatchSemaphore(value: 0)
        let serving = DispatchSemaphore(value: 0)
        link.startReading({ [server] frame in
            if sender.received(frame) { return }
            switch HandOverKind(rawValue: frame.kind) {
            case .reopenLog?: server.reopenLog()
            case .serving?: serving.signal()
            default: break
            }
        }, ended: { reason in
            serving.signal()
            sender.end(reason)
            ended.signal()
        })
        let offered = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var firstWaveEnd = 0
        server.handOver(to: sender) { mark in
            firstWaveEnd = mark
            offered.signal()
        }
        offered.wait()
        while !sender.settled(before: firstWaveEnd) {
            if ended.wait(timeout: .now() + .milliseconds(10)) == .success {
                return abort(child, link, "\(successor) went away during the hand-over (\(describeExit(child)))")
            }
            if ContinuousClock.now > deadline {
                return abort(child, link, "\(successor) did not take the connections within \(Int(timeout)) s")
            }
        }

        // Every first-wave item is settled: the new process becomes the service's main process.
        let moved = sender.counts
        DispatchQueue.main.sync { handedOver() }
        do {
            try ServiceManager.handOverMainProcess(to: child.pid, status: "Upgraded: \(successor) took over")
        } catch {
            ServiceManager.say("upgrade: systemd did not confirm MAINPID=\(child.pid) within 5 s (\(error)); handing over all the same")
        }
        try? link.send(.main, EmptyHeader())
        lock.withLock { phase = .draining(pid: child.pid) }
        // The service is the new process's now; `atsgate upgrade` says so once it serves (its pid
        // file names it, a signal reaches its handlers).
        if serving.wait(timeout: .now() + .seconds(10)) == .timedOut {
            ServiceManager.say("upgrade: \(successor) has not said it serves within 10 s; it is the main process all the same")
        }
        status?.succeeded(pid: child.pid, version: hello.version)
        // Once every loop has run what was queued on it (the connections taken are forgotten there),
        // what is still open here stays here.
        let caughtUp = DispatchSemaphore(value: 0)
        server.stopAccepting { caughtUp.signal() }
        caughtUp.wait()
        let staying = server.openConnections
        ServiceManager.say("upgrade: \(me) hands over to \(successor): \(listeners.count) listener\(listeners.count == 1 ? "" : "s"), "
                           + "\(moved.tunnels) tunnel\(moved.tunnels == 1 ? "" : "s"), \(moved.idle) idle client\(moved.idle == 1 ? "" : "s"); "
                           + "\(staying) connection\(staying == 1 ? "" : "s") finish\(staying == 1 ? "es" : "") here")
        // The run-stop names the new process's run and counts the connections it took, late ones
        // too: it is written once the drain is over.
        let successorRun = RunPeer(run: hello.run ?? "unknown", pid: child.pid, version: hello.version)
        let listenerCount = listeners.count
        let handOver: @Sendable () -> RunHandOver = {
            let counts = sender.counts
            return RunHandOver(successor: successorRun, handedOver: counts.tunnels + counts.idle, tunnels: counts.tunnels,
                               idleClients: counts.idle, listeners: listenerCount)
        }
        server.stop(grace: grace, handOver: handOver) { [server] outcome in
            server.endHandOver()
            let late = sender.counts
            let movedLate = late.tunnels + late.idle - moved.tunnels - moved.idle
            var summary = "upgrade: \(movedLate) more connection\(movedLate == 1 ? "" : "s") went to PID \(child.pid) while draining"
            if outcome.cut > 0 { summary += "; \(outcome.cut) cut at the end of the grace period" }
            ServiceManager.say(summary + "; PID \(getpid()) exits")
            try? link.send(.exiting, ExitingHeader(run: LogRun.id, records: server.decisionCount))
            link.close()
            exit(0)
        }
    }

    /// Waits for the next message, which must be `kind`: a `failed` message, an exit, a closed socket
    /// or the deadline is the reason the upgrade fails.
    private func expect<Header: Decodable>(_ kind: HandOverKind, _ type: Header.Type, on link: HandOverLink,
                                           from child: ChildProcess, until deadline: ContinuousClock.Instant)
        -> Result<Header, HandOverError>
    {
        let who = "PID \(child.pid)"
        do {
            switch try link.receive(until: deadline, watching: child.pidFD) {
            case .frame(let frame) where frame.kind == kind.rawValue:
                return .success(try HandOverLink.decode(type, from: frame))
            case .frame(let frame) where frame.kind == HandOverKind.failed.rawValue:
                let reason = (try? HandOverLink.decode(FailedHeader.self, from: frame))?.reason ?? "no reason given"
                _ = try? child.wait(timeout: 5)
                return .failure(HandOverError("\(who) cannot take over: \(reason)"))
            case .frame(let frame):
                for fd in frame.descriptors { SystemCall.close(fd) }
                return .failure(HandOverError("\(who) sent \(HandOverKind(rawValue: frame.kind)?.description ?? "kind \(frame.kind)") "
                                              + "where \(kind) was due"))
            case .ended, .exited:
                return .failure(HandOverError("\(who) \(describeExit(child)) before it said \(kind)"))
            case .timedOut:
                return .failure(HandOverError("\(who) did not say \(kind) in time (--upgrade-timeout \(Int(timeout)) s)"))
            }
        } catch {
            return .failure(error)
        }
    }

    /// How the child ended, once it has (waiting a moment for it).
    private func describeExit(_ child: ChildProcess) -> String {
        guard let status = try? child.wait(timeout: 2) else { return "closed the hand-over socket" }
        return status.description
    }

    /// A failure before the new process accepted: it is killed and reaped; this process never
    /// stopped serving.
    private func giveUp(_ child: ChildProcess, _ link: HandOverLink, _ reason: String) {
        _ = try? child.signal(SIGKILL)
        _ = try? child.wait(timeout: 5)
        link.close()
        failed(reason)
    }

    /// A failure after the new process accepted: it is killed (so that nothing it holds moves any
    /// more), this process accepts again, and every connection not taken yet resumes here; what it
    /// had taken went down with it.
    private func abort(_ child: ChildProcess, _ link: HandOverLink, _ reason: String) {
        _ = try? child.signal(SIGKILL)
        _ = try? child.wait(timeout: 5)
        server.endHandOver()
        link.close()
        sender?.end(reason)
        server.resumeAccepting()
        admin?.resumeAccepting()
        let lost = sender?.counts
        failed(reason + (lost.map { $0.tunnels + $0.idle > 0 ? " (\($0.tunnels + $0.idle) connections it had taken are lost)" : "" } ?? ""))
    }

    private func failed(_ reason: String) {
        sink.setSharedOutput(false)
        lock.withLock {
            phase = .idle
            child = nil
            peer = nil
            sender = nil
        }
        server.upgradesFailed.add(1, ordering: .relaxed)
        ServiceManager.say("upgrade failed, \(me) keeps serving: \(reason)")
        status?.failed(reason)
    }

    /// A SIGUSR2 that cannot start an upgrade now.
    private func refused(_ why: String) {
        server.upgradesFailed.add(1, ordering: .relaxed)
        ServiceManager.say("upgrade refused, \(me) keeps serving: \(why)")
        status?.failed(why)
    }

    // MARK: the new process's side of the link

    /// This process took over from `pid` over `link`, which stays open until the old process has
    /// gone: no upgrade of its own before, and SIGUSR1 is forwarded over it.
    func tookOver(from pid: Int32, link: HandOverLink) {
        lock.withLock {
            predecessor = pid
            peer = link
        }
    }

    /// The old process has gone (it said `exiting`, or its end of the link closed).
    func predecessorGone() {
        lock.withLock {
            predecessor = nil
            peer = nil
        }
        sink.setSharedOutput(false)
    }
}
