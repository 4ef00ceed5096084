import CAtsgateShims
import Glibc

/// One epoll instance (level-triggered), with EINTR handled once. The descriptor is the owner's to
/// keep for the process's life: an event loop's.
public struct Epoll: Sendable {
    public let fd: Int32

    public init() throws(SystemError) {
        fd = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard fd >= 0 else { throw SystemError(call: "epoll_create1", code: errno) }
    }

    public enum Operation: Sendable {
        case add, modify, delete

        var code: Int32 {
            switch self {
            case .add: EPOLL_CTL_ADD
            case .modify: EPOLL_CTL_MOD
            case .delete: EPOLL_CTL_DEL
            }
        }
    }

    /// epoll_ctl(2) for `descriptor` with `events` (EPOLLIN | EPOLLOUT ...); false when it failed
    /// (a descriptor already closed, say).
    @discardableResult
    public func control(_ operation: Operation, _ descriptor: Int32, events: UInt32 = 0) -> Bool {
        var event = epoll_event()
        event.events = events
        event.data.fd = descriptor
        return epoll_ctl(fd, operation.code, descriptor, &event) == 0
    }

    /// epoll_wait(2) into `events`; an interruption counts as no events.
    public func wait(into events: UnsafeMutableBufferPointer<epoll_event>, timeoutMilliseconds: Int32) -> Int {
        let count = epoll_wait(fd, events.baseAddress, Int32(events.count), timeoutMilliseconds)
        return count < 0 ? 0 : Int(count)
    }
}
