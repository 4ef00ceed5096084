import DecisionLog
import Dispatch
import Foundation
import HandOver
import POSIX
import ProxyCore
import Systemd

/// The new process's side of an upgrade (design §4.4): started by the old one with the hand-over
/// socket as descriptor 3, it builds its configuration exactly as a start does, says hello, takes
/// the listeners (and accepts on them), takes each connection it is handed (acknowledging it before
/// it relays a byte of it), and becomes the one that serves (signals, READY, the pid file) when the
/// old process says it is the service's main process now.
extension Daemon {
    /// The hand-over socket this process was started with (ATSGATE_UPGRADE_FD), if any. The variable
    /// is unset, so that this process's own successor never takes it for its own.
    static func inheritedUpgradeLink() -> HandOverLink? {
        if let link = TakeOverFailure.link { return link }
        guard let value = getenv(HandOverProtocol.environmentVariable).map({ String(cString: $0) }) else { return nil }
        unsetenv(HandOverProtocol.environmentVariable)
        guard let fd = Int32(value), fd > 2, fcntl(fd, F_GETFD) >= 0 else {
            ServiceManager.say("\(HandOverProtocol.environmentVariable)=\(value) names no open descriptor: starting as a new daemon")
            return nil
        }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        TakeOverFailure.link = HandOverLink(fd: fd)
        return TakeOverFailure.link
    }

    func takeOver(_ link: HandOverLink) throws -> Never {
        let pid = getpid()
        // Until its own handlers are in place (at `main`), a reload or a log reopen meant for the
        // service must not end this process (their default action); systemd sends them to the new
        // process as soon as MAINPID names it.
        for ignored in [SIGHUP, SIGUSR1, SIGUSR2] { signal(ignored, SIG_IGN) }
        do {
            try link.send(.hello, HelloHeader(version: AtsgateVersion.string, pid: pid, run: LogRun.id))
        } catch {
            throw CommandFailure(message: "upgrade: \(error)", exitCode: 1)
        }
        let frame: HandOverFrame
        switch try? link.receive(until: .now + .milliseconds(Int64(upgradeTimeout * 1000))) {
        case .frame(let received)? where received.kind == HandOverKind.listeners.rawValue: frame = received
        default: throw CommandFailure(message: "upgrade: the old process handed over no listeners", exitCode: 1)
        }
        let header: ListenersHeader
        var daemon = self
        daemon.inherited = .init()
        do {
            header = try HandOverLink.decode(ListenersHeader.self, from: frame)
            for listener in header.listeners {
                guard listener.fd >= 0, listener.fd < frame.descriptors.count else {
                    throw HandOverError("the listener \(listener.role) on \(listener.address) came without its socket")
                }
                do {
                    daemon.inherited.add(frame.descriptors[listener.fd], role: try InheritedSocket.Role(fileDescriptorName: listener.role))
                } catch {
                    throw HandOverError("this binary does not serve the listener role '\(listener.role)' (\(listener.address))")
                }
            }
        } catch {
            throw CommandFailure(message: "upgrade: \(error)", exitCode: 1)
        }
        // This run's run-start names the old one, so that the report counts the old run as
        // continued here, whether or not its own run-stop was written.
        daemon.predecessor = RunPeer(run: header.run ?? "unknown", pid: header.pid, version: header.version)
        let running = try daemon.start()
        running.server.upgradesSucceeded.store(header.upgradesSucceeded, ordering: .relaxed)
        running.server.upgradesFailed.store(header.upgradesFailed, ordering: .relaxed)
        running.sink.setSharedOutput(true)
        do {
            try link.send(.listening, ListeningHeader(count: header.listeners.count))
        } catch {
            throw CommandFailure(message: "upgrade: \(error)", exitCode: 1)
        }
        TakeOverFailure.link = nil

        let serving = daemon
        let upgrade = serving.upgrade(for: running)
        upgrade.tookOver(from: header.pid, link: link)
        let old = "PID \(header.pid) (\(header.version))"
        let server = running.server
        let progress = TakeOverProgress()
        let becomeMain: @Sendable (String) -> Void = { why in
            // On the main queue.
            guard !progress.isMain else { return }
            progress.isMain = true
            server.upgradesSucceeded.add(1, ordering: .relaxed)
            ServiceManager.say("took over from \(old) as PID \(pid) (\(AtsgateVersion.string))\(why)")
            serving.serve(running, upgrade: upgrade) {
                try? link.send(.serving, EmptyHeader())
            }
        }
        let receiver = UpgradeReceiver(link: link, adopt: { server.adopt($0, note: "handed over by \(old) in an upgrade") },
                                       other: { kind, _ in
            DispatchQueue.main.async {
                switch kind {
                case .main: becomeMain("")
                case .reopenLog: server.reopenLog()
                case .exiting:
                    upgrade.predecessorGone()
                    link.close()
                default: break
                }
            }
        })
        link.startReading({ receiver.received($0) }, ended: { _ in
            DispatchQueue.main.async {
                if !progress.isMain {
                    // The old process gives an upgrade up by killing this one; a link that ends
                    // while it lives is the same decision. If it is gone, this process serves on.
                    guard kill(header.pid, 0) != 0, errno == ESRCH else {
                        ServiceManager.say("upgrade: \(old) gave the upgrade up; PID \(pid) exits")
                        exit(1)
                    }
                    becomeMain(" (\(old) went away before it handed the service over)")
                }
                upgrade.predecessorGone()
            }
        })
        withExtendedLifetime(running.admin) { dispatchMain() }
    }
}

/// Whether the old process has made this one the main process yet; touched on the main queue only.
private final class TakeOverProgress: @unchecked Sendable {
    var isMain = false
}

/// A new process that cannot take over tells the old one why (which then says it, and keeps
/// serving) before it exits as any failed start does.
enum TakeOverFailure {
    /// The hand-over socket until the new process accepts on the listeners.
    nonisolated(unsafe) static var link: HandOverLink?

    static func report(_ message: String) {
        guard let link = Daemon.inheritedUpgradeLink() else { return }
        try? link.send(.failed, FailedHeader(reason: message))
    }
}
