import Foundation
import Glibc
import Synchronization

/// An origin that echoes every byte back, for any number of connections, on one thread.
public final class EchoOrigin: @unchecked Sendable {
    public let port: Int
    private let listener: Int32
    /// What the thread shares with the origin (not the origin itself, or it would never go away).
    private final class Control: Sendable {
        let stopped = Atomic<Bool>(false)
        let done = DispatchSemaphore(value: 0)
    }
    private let control = Control()

    public init() throws {
        let (listener, port) = try loopbackListener(backlog: 1024)
        self.listener = listener
        self.port = port
        _ = fcntl(listener, F_SETFL, fcntl(listener, F_GETFL) | O_NONBLOCK)
        let control = self.control
        let thread = Thread { EchoOrigin.serve(listener, control) }
        thread.name = "echo-origin"
        thread.start()
    }

    deinit {
        control.stopped.store(true, ordering: .relaxed)
        control.done.wait()
        close(listener)
    }

    private static func serve(_ listener: Int32, _ control: Control) {
        var connections: [Int32: [UInt8]] = [:]
        var buffer = [UInt8](repeating: 0, count: 65536)
        while !control.stopped.load(ordering: .relaxed) {
            var polled = [pollfd(fd: listener, events: Int16(POLLIN), revents: 0)]
            for (fd, pending) in connections {
                polled.append(pollfd(fd: fd, events: Int16(pending.isEmpty ? POLLIN : (POLLIN | POLLOUT)), revents: 0))
            }
            guard poll(&polled, nfds_t(polled.count), 20) > 0 else { continue }
            if polled[0].revents != 0 {
                while case let fd = accept(listener, nil, nil), fd >= 0 {
                    _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
                    connections[fd] = []
                }
            }
            for entry in polled.dropFirst() where entry.revents != 0 {
                let fd = entry.fd
                var ended = false
                if connections[fd]!.count < 1 << 20 {
                    let n = read(fd, &buffer, buffer.count)
                    if n > 0 { connections[fd]! += buffer[..<n] } else if n == 0 || errno != EAGAIN { ended = true }
                }
                var pending = connections[fd]!
                if !pending.isEmpty {
                    let n = pending.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                    if n > 0 { pending.removeFirst(n) } else if errno != EAGAIN { ended = true; pending = [] }
                }
                connections[fd] = pending
                if ended, pending.isEmpty {
                    close(fd)
                    connections[fd] = nil
                }
            }
        }
        for fd in connections.keys { close(fd) }
        control.done.signal()
    }
}
