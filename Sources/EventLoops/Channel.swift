import CAtsgateShims
import Glibc
import POSIX

/// One socket descriptor on one event-loop queue: read and write interest, each with its handler.
/// Interest changes are inline epoll_ctl calls on the loop's `Poller`; on `close()` the descriptor is
/// forgotten by the poller and closed at once (closing it is what takes it out of the epoll set).
/// Used on its poller's queue only (checked in debug builds at every door).
package final class Channel {
    package let fd: Int32
    private let poller: Poller
    private var readHandler: (() -> Void)?
    private var writeHandler: (() -> Void)?
    private var readActive = false
    private var writeActive = false
    private var registered = false
    /// Out of the poller for an upgrade's hand-over, with its interest and handlers kept (`suspend`).
    private var suspended = false
    package private(set) var closed = false
    /// The poller reported the peer's end (EPOLLRDHUP or EPOLLHUP): reading on reaches it.
    package private(set) var peerClosed = false

    package init(fd: Int32, poller: Poller) {
        self.fd = fd
        self.poller = poller
    }

    package func onReadable(_ handler: @escaping () -> Void) {
        assertOnLoop(poller.queue)
        readHandler = handler
    }

    package func onWritable(_ handler: @escaping () -> Void) {
        assertOnLoop(poller.queue)
        writeHandler = handler
    }

    /// Wants read events or not.
    package func wantRead(_ on: Bool) {
        assertOnLoop(poller.queue)
        guard !closed, on != readActive else { return }
        readActive = on
        updateInterest()
    }

    package func wantWrite(_ on: Bool) {
        assertOnLoop(poller.queue)
        guard !closed, on != writeActive else { return }
        writeActive = on
        updateInterest()
    }

    private func updateInterest() {
        guard !suspended else { return }
        var events: UInt32 = 0
        if readActive { events |= EPOLLIN.rawValue | EPOLLRDHUP.rawValue }
        if writeActive { events |= EPOLLOUT.rawValue }
        registered = poller.update(self, events: events, registered: registered)
    }

    /// Runs the handlers for what epoll reported. Errors and hang-ups wake both directions, so the
    /// handler's next read or write sees them.
    package func handle(_ events: UInt32) {
        assertOnLoop(poller.queue)
        let failure = events & (EPOLLERR.rawValue | EPOLLHUP.rawValue) != 0
        if events & (EPOLLRDHUP.rawValue | EPOLLHUP.rawValue) != 0 { peerClosed = true }
        if readActive, failure || events & (EPOLLIN.rawValue | EPOLLRDHUP.rawValue) != 0 { readHandler?() }
        if !closed, writeActive, failure || events & EPOLLOUT.rawValue != 0 { writeHandler?() }
    }

    /// What writing a buffer out came to.
    package enum WriteOutcome: Equatable {
        /// Every byte went; the buffer is empty.
        case done
        /// The socket took what it could; the rest is still in the buffer. Ask for writability.
        case wouldBlock
        /// The socket failed (the peer is gone); what is left in the buffer will never go.
        case failed
    }

    /// Writes as much of `bytes` as the socket takes and removes what went: the one write path of
    /// the answers, the forwarded responses, the watched handshakes and the admin listener.
    package func write(_ bytes: inout [UInt8]) -> WriteOutcome {
        assertOnLoop(poller.queue)
        var written = 0
        defer { if written > 0 { bytes.removeFirst(written) } }
        while written < bytes.count {
            let outcome = bytes.withUnsafeBytes { buffer in
                try? SystemCall.write(fd, UnsafeRawBufferPointer(rebasing: buffer[written...]))
            }
            switch outcome {
            case .done(let n)?: written += n
            case .wouldBlock?: return .wouldBlock
            default: return .failed
            }
        }
        return .done
    }

    /// Leaves the poller without closing the descriptor (a listening socket every loop watches).
    package func detach() {
        leave(deregistering: true)
    }

    /// Takes the descriptor out of the poller (EPOLL_CTL_DEL) and keeps it open, with its handlers
    /// and the interest asked for, until `unsuspend` or `close`. An upgrade's hand-over suspends a
    /// connection's sockets before it passes them: once another process holds the same open file,
    /// close(2) here would no longer take it out of this loop's epoll set, which would keep reporting
    /// it (design §4.3).
    package func suspend() {
        assertOnLoop(poller.queue)
        guard !closed, !suspended else { return }
        suspended = true
        if registered { poller.remove(self, registered: true) }
        registered = false
    }

    /// Back in the poller with the interest it had (the hand-over was refused).
    package func unsuspend() {
        assertOnLoop(poller.queue)
        guard !closed, suspended else { return }
        suspended = false
        updateInterest()
    }

    package func close() {
        // No EPOLL_CTL_DEL: the descriptor is this socket's only one (every socket is made with
        // SOCK_CLOEXEC and never duplicated), so close(2) removes it from the epoll set; the
        // explicit removal was two system calls per tunnel. A descriptor passed to another process
        // is duplicated: it is `suspend`ed (deregistered) first.
        guard leave(deregistering: false) else { return }
        SystemCall.close(fd)
    }

    /// Closes with a reset instead of an orderly end (SO_LINGER 0): the peer sees an error, never
    /// an end of stream it could take for a complete message.
    package func abort() {
        guard leave(deregistering: false) else { return }
        Socket.abort(fd)
    }

    /// Marks the channel closed, tells the poller (taking the descriptor out of the epoll set only
    /// when `deregistering`) and drops the handlers; false when it was closed already.
    @discardableResult
    private func leave(deregistering: Bool) -> Bool {
        assertOnLoop(poller.queue)
        guard !closed else { return false }
        closed = true
        if deregistering { poller.remove(self, registered: registered) } else { poller.forget(self) }
        registered = false
        readHandler = nil
        writeHandler = nil
        return true
    }
}
