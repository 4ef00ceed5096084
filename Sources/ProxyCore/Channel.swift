import Dispatch
import Glibc

/// One socket descriptor with its read and write sources, created once and toggled by balanced
/// suspend/resume (libdispatch on Linux misbehaves when sources are recreated on one descriptor).
/// The descriptor is released only after both cancel handlers have run, through `DescriptorReaper`.
final class Channel {
    let fd: Int32
    private let readSource: DispatchSourceRead
    private let writeSource: DispatchSourceWrite
    private var readActive = false
    private var writeActive = false
    private var cancelled = false

    init(fd: Int32, queue: DispatchQueue) {
        self.fd = fd
        readSource = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        writeSource = DispatchSource.makeWriteSource(fileDescriptor: fd, queue: queue)
        // Close only when both sources are gone.
        let group = DispatchGroup()
        group.enter()
        group.enter()
        readSource.setCancelHandler { group.leave() }
        writeSource.setCancelHandler { group.leave() }
        group.notify(queue: queue) { DescriptorReaper.shared.release(fd) }
    }

    func onReadable(_ handler: @escaping () -> Void) { readSource.setEventHandler(handler: handler) }
    func onWritable(_ handler: @escaping () -> Void) { writeSource.setEventHandler(handler: handler) }

    /// Wants read events or not; suspend and resume stay balanced.
    func wantRead(_ on: Bool) {
        guard !cancelled, on != readActive else { return }
        readActive = on
        if on { readSource.resume() } else { readSource.suspend() }
    }

    func wantWrite(_ on: Bool) {
        guard !cancelled, on != writeActive else { return }
        writeActive = on
        if on { writeSource.resume() } else { writeSource.suspend() }
    }

    /// Cancels both sources (a suspended source must be resumed to deliver its cancellation).
    func close() {
        guard !cancelled else { return }
        cancelled = true
        readSource.setEventHandler(handler: nil)
        writeSource.setEventHandler(handler: nil)
        readSource.cancel()
        writeSource.cancel()
        if !readActive { readSource.resume() }
        if !writeActive { writeSource.resume() }
    }

    var isClosed: Bool { cancelled }
}

/// Closes socket descriptors late enough for libdispatch.
///
/// libdispatch on Linux can run a source's cancel handler before its manager thread has issued the
/// EPOLL_CTL_DEL for the descriptor. Closing at once lets the kernel hand the same number to a new
/// socket, and the late DEL then removes the new socket's registration: its read source never fires
/// (seen with strace as DEL n followed by MOD n = ENOENT, about one tunnel in 300). So the socket is
/// shut down at once (the peer sees FIN now) and its number is held for a moment before close(2).
final class DescriptorReaper: @unchecked Sendable {
    static let shared = DescriptorReaper()
    private static let grace = DispatchTimeInterval.milliseconds(500)
    private let queue = DispatchQueue(label: "atsgate.reaper")

    func release(_ fd: Int32) {
        _ = Glibc.shutdown(fd, Int32(SHUT_RDWR))
        queue.asyncAfter(deadline: .now() + DescriptorReaper.grace) { SystemCall.close(fd) }
    }
}
