import Dispatch
import Glibc

/// One socket descriptor with its read and write sources, created once and toggled by balanced
/// suspend/resume (libdispatch on Linux misbehaves when sources are recreated on one descriptor).
/// The descriptor is released only after both cancel handlers have run, through `DescriptorReaper`.
final class Channel {
    let fd: Int32
    private let queue: DispatchQueue
    private let readSource: DispatchSourceRead
    /// Created on first use: many descriptors never wait for writability, and a source that was never
    /// resumed would have to be resumed (registered) just to be cancelled.
    private var writeSource: DispatchSourceWrite?
    private var writeHandler: (() -> Void)?
    private var readActive = false
    private var writeActive = false
    private var cancelled = false
    private let sourcesGone = DispatchGroup()

    init(fd: Int32, queue: DispatchQueue) {
        self.fd = fd
        self.queue = queue
        readSource = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        // Release the descriptor only when every source is gone.
        let group = sourcesGone
        group.enter()
        readSource.setCancelHandler { group.leave() }
    }

    func onReadable(_ handler: @escaping () -> Void) { readSource.setEventHandler(handler: handler) }

    func onWritable(_ handler: @escaping () -> Void) {
        writeHandler = handler
        writeSource?.setEventHandler(handler: handler)
    }

    /// Wants read events or not; suspend and resume stay balanced.
    func wantRead(_ on: Bool) {
        guard !cancelled, on != readActive else { return }
        readActive = on
        if on { readSource.resume() } else { readSource.suspend() }
    }

    func wantWrite(_ on: Bool) {
        guard !cancelled, on != writeActive else { return }
        writeActive = on
        if on {
            if writeSource == nil {
                let source = DispatchSource.makeWriteSource(fileDescriptor: fd, queue: queue)
                let group = sourcesGone
                group.enter()
                source.setCancelHandler { group.leave() }
                source.setEventHandler(handler: writeHandler)
                writeSource = source
            }
            writeSource!.resume()
        } else {
            writeSource?.suspend()
        }
    }

    /// Cancels the sources (a suspended source must be resumed to deliver its cancellation), then
    /// hands the descriptor to the reaper.
    func close() {
        guard !cancelled else { return }
        cancelled = true
        readSource.setEventHandler(handler: nil)
        readSource.cancel()
        if !readActive { readSource.resume() }
        if let writeSource {
            writeSource.setEventHandler(handler: nil)
            writeSource.cancel()
            if !writeActive { writeSource.resume() }
        }
        writeHandler = nil
        let fd = self.fd
        sourcesGone.notify(queue: queue) { DescriptorReaper.shared.release(fd) }
    }

    var isClosed: Bool { cancelled }
}

/// Closes socket descriptors late enough for libdispatch.
///
/// libdispatch on Linux can run a source's cancel handler before its manager thread has issued the
/// EPOLL_CTL_DEL for the descriptor. Closing at once lets the kernel hand the same number to a new
/// socket, and the late DEL then removes the new socket's registration: its read source never fires
/// (seen with strace as DEL n followed by MOD n = ENOENT, about one tunnel in 300). Shutting the socket
/// down instead and closing later is no better: the shutdown raises events on the registration being
/// torn down, and libdispatch can trap ("Source finalized twice").
///
/// So the socket is replaced by a placeholder with dup2(2): the socket itself closes at once (the peer
/// sees FIN now, and the kernel drops its epoll registration), while its number stays taken by a file
/// that was never registered, so a late DEL finds nothing. The number is freed after a grace period.
final class DescriptorReaper: @unchecked Sendable {
    static let shared = DescriptorReaper()
    private static let grace = DispatchTimeInterval.milliseconds(500)
    private let queue = DispatchQueue(label: "atsgate.reaper")
    private let placeholder: Int32 = open("/dev/null", O_RDONLY | O_CLOEXEC)

    func release(_ fd: Int32) {
        guard placeholder >= 0, dup2(placeholder, fd) == fd else {
            SystemCall.close(fd)
            return
        }
        queue.asyncAfter(deadline: .now() + DescriptorReaper.grace) { SystemCall.close(fd) }
    }
}
