import Foundation
import Glibc
import POSIX

/// The daemon's upgrade status socket, `@atsgate-upgrade-<PID>` (abstract, SOCK_SEQPACKET: no file,
/// gone with the process): `atsgate upgrade` connects before it sends SIGUSR2, so that it cannot
/// miss the outcome, and only this process knows why an upgrade failed. Each client gets one line
/// on connecting (`{"pid":812,"version":"0.1.0","upgrade":"idle"}`) and one when the attempt ends
/// (`{"result":"success","pid":1290,"version":"0.1.1"}` or `{"result":"failure","reason":"..."}`),
/// then the socket closes. Clients of another user than root or the daemon's own are turned away.
final class UpgradeStatus: @unchecked Sendable {
    private let listener: Int32
    private let lock = NSLock()
    private var clients: [Int32] = []
    private var phase = "idle"

    /// The socket's name for a daemon's PID.
    static func name(pid: Int32) -> String { "@atsgate-upgrade-\(pid)" }

    /// Listens, and accepts on a thread of its own; nil (said on stderr) when the name is taken.
    static func start() -> UpgradeStatus? {
        do {
            let status = UpgradeStatus(listener: try DescriptorPassing.listen(at: name(pid: getpid())))
            let thread = Thread { status.acceptForever() }
            thread.name = "atsgate.upgrade-status"
            thread.start()
            return status
        } catch {
            ServiceManager.say("upgrade status socket \(name(pid: getpid())): \(error); `atsgate upgrade` will not hear the outcome")
            return nil
        }
    }

    private init(listener: Int32) {
        self.listener = listener
    }

    /// An attempt began (what a client connecting meanwhile is told).
    func began() {
        lock.withLock { phase = "in progress" }
    }

    /// The new process took over.
    func succeeded(pid: Int32, version: String) {
        finish(["result": "success", "pid": Int(pid), "version": version])
    }

    /// This process keeps serving, for `reason`.
    func failed(_ reason: String) {
        finish(["result": "failure", "reason": reason])
    }

    private func finish(_ outcome: [String: Any]) {
        let waiting = lock.withLock {
            phase = "idle"
            defer { clients = [] }
            return clients
        }
        for fd in waiting {
            send(outcome, to: fd)
            SystemCall.close(fd)
        }
    }

    private func acceptForever() {
        while true {
            guard let fd = try? DescriptorPassing.accept(listener) else {
                usleep(100_000) // out of descriptors, say: try again in a moment rather than spin
                continue
            }
            let peer = try? DescriptorPassing.peerCredentials(fd)
            guard let peer, peer.uid == 0 || peer.uid == getuid() else {
                send(["result": "failure", "reason": "only root or the daemon's user may ask"], to: fd)
                SystemCall.close(fd)
                continue
            }
            let phase = lock.withLock {
                clients.append(fd)
                return self.phase
            }
            send(["pid": Int(getpid()), "version": AtsgateVersion.string, "upgrade": phase], to: fd)
        }
    }

    private func send(_ object: [String: Any], to fd: Int32) {
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else { return }
        _ = Array(data).withUnsafeBytes { try? DescriptorPassing.send(fd, $0) }
    }
}
