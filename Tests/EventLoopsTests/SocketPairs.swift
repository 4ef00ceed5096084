import Dispatch
import Glibc
import Synchronization

/// A connected pair of Unix stream sockets: `loopEnd` non-blocking, for a Channel on an event loop
/// (which closes it), and `testEnd` blocking, its reads and writes bounded by a timeout, for the test
/// to talk through (closed when the pair goes).
final class SocketPair: @unchecked Sendable { // two descriptors, each used by one thread at a time
    let loopEnd: Int32
    let testEnd: Int32
    private var testEndOpen = true

    init() throws {
        var fds: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0, &fds) == 0 else {
            throw PairError("socketpair failed: errno \(errno)")
        }
        loopEnd = fds[0]
        testEnd = fds[1]
        _ = fcntl(loopEnd, F_SETFL, fcntl(loopEnd, F_GETFL) | O_NONBLOCK)
        var limit = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(testEnd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(testEnd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
    }

    func send(_ text: String) { send(Array(text.utf8)) }

    /// Sends all of `bytes` (or as much as goes before the timeout).
    func send(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(testEnd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return }
            offset += n
        }
    }

    /// Reads `count` bytes, or fewer when the other end closes (or the timeout passes).
    func receive(_ count: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while bytes.count < count {
            let n = recv(testEnd, &buffer, min(buffer.count, count - bytes.count), 0)
            if n <= 0 { break }
            bytes += buffer[..<n]
        }
        return bytes
    }

    /// Reads until the other end closes its side or resets (`ended`), or the timeout passes.
    func receiveAll() -> (bytes: [UInt8], ended: Bool) {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = recv(testEnd, &buffer, buffer.count, 0)
            if n == 0 { return (bytes, true) }
            if n < 0 { return (bytes, errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) }
            bytes += buffer[..<n]
        }
    }

    func shutdownTestEnd() { shutdown(testEnd, Int32(SHUT_WR)) }

    func closeTestEnd() {
        guard testEndOpen else { return }
        testEndOpen = false
        close(testEnd)
    }

    deinit { closeTestEnd() }
}

struct PairError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// What the loop's handlers did, in order, and a way to wait (bounded) for one of them.
final class Happenings: Sendable {
    private let seen = Mutex<[String]>([])
    private let signal = DispatchSemaphore(value: 0)

    func note(_ what: String) {
        seen.withLock { $0.append(what) }
        signal.signal()
    }

    var all: [String] { seen.withLock { $0 } }

    /// Waits until `what` has been noted `times` times in all; false after 10 s.
    func wait(for what: String, times: Int = 1) -> Bool {
        wait { $0.filter { $0 == what }.count >= times }
    }

    /// Waits until what was noted satisfies `done`; false after 10 s.
    func wait(until done: ([String]) -> Bool) -> Bool {
        let deadline = DispatchTime.now() + 10
        while !done(all) {
            if signal.wait(timeout: deadline) == .timedOut { return false }
        }
        return true
    }
}

/// `count` bytes that do not repeat with a short period, so a lost, doubled or reordered stretch shows.
func pattern(count: Int) -> [UInt8] {
    var bytes = [UInt8](repeating: 0, count: count)
    for index in 0..<count { bytes[index] = UInt8(truncatingIfNeeded: index &* 31 &+ index >> 9) }
    return bytes
}
