import Foundation
import Glibc

/// A loopback origin that speaks raw bytes: it records everything each connection sends it and
/// answers every request head it sees with scripted bytes (a hostile origin's response, exactly as
/// written). Bounded: each connection reads with a 10 s timeout, and the origin stops with the test.
public final class RawOrigin: @unchecked Sendable {
    public let port: Int
    private let listener: Int32
    private let lock = NSLock()
    private var connectionBytes: [[UInt8]] = []
    private var stopped = false
    private let reply: @Sendable (Int) -> [UInt8]
    private let closeAfterReply: Bool
    /// Answer the first bytes of each connection, whatever they are (a TLS ClientHello has no blank line).
    private let answerFirstBytes: Bool

    /// `reply(n)` answers the n-th request head (0-based, over all connections); `closeAfterReply`
    /// closes the connection after each answer (a close-delimited or truncated body).
    public convenience init(closeAfterReply: Bool = false, reply: @escaping @Sendable (Int) -> String) throws {
        try self.init(closeAfterReply: closeAfterReply, answerFirstBytes: false) { Array(reply($0).utf8) }
    }

    /// An origin that answers the first bytes of each connection with `bytes` (a TLS server's flight).
    public convenience init(answeringFirstBytesWith bytes: [UInt8]) throws {
        try self.init(closeAfterReply: false, answerFirstBytes: true) { _ in bytes }
    }

    private init(closeAfterReply: Bool, answerFirstBytes: Bool, bytes: @escaping @Sendable (Int) -> [UInt8]) throws {
        self.reply = bytes
        self.closeAfterReply = closeAfterReply
        self.answerFirstBytes = answerFirstBytes
        let (fd, port) = try loopbackListener()
        self.port = port
        listener = fd
        Thread.detachNewThread { [self] in acceptLoop() }
    }

    public convenience init(closeAfterReply: Bool = false, always text: String) throws {
        try self.init(closeAfterReply: closeAfterReply) { _ in text }
    }

    /// What each connection has sent so far, as text.
    public var received: [String] {
        lock.withLock { connectionBytes.map { String(decoding: $0, as: UTF8.self) } }
    }

    public var connections: Int { lock.withLock { connectionBytes.count } }

    public func stop() {
        lock.withLock { stopped = true }
        shutdown(listener, Int32(SHUT_RDWR))
        Glibc.close(listener)
    }

    deinit { stop() }

    private var headsAnswered = 0

    private func acceptLoop() {
        while true {
            let fd = accept(listener, nil, nil)
            if fd < 0 { return }
            let index: Int? = lock.withLock {
                if stopped { return nil }
                connectionBytes.append([])
                return connectionBytes.count - 1
            }
            guard let index else {
                Glibc.close(fd)
                return
            }
            Thread.detachNewThread { [self] in serve(fd, index) }
        }
    }

    private func serve(_ fd: Int32, _ index: Int) {
        defer { Glibc.close(fd) }
        var limit = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        var buffer = [UInt8](repeating: 0, count: 65536)
        var seen: [UInt8] = []
        var heads = 0
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { return }
            seen += buffer[..<n]
            lock.withLock { connectionBytes[index] += buffer[..<n] }
            let count = answerFirstBytes ? 1 : Self.headCount(seen)
            while heads < count {
                heads += 1
                let number = lock.withLock { () -> Int in
                    headsAnswered += 1
                    return headsAnswered - 1
                }
                let answer = reply(number)
                _ = answer.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if closeAfterReply { return }
            }
        }
    }

    /// Request heads in `bytes`: blank lines that end a head (a test's bodies hold none).
    private static func headCount(_ bytes: [UInt8]) -> Int {
        var count = 0
        var index = 0
        while index + 3 < bytes.count {
            if bytes[index] == 0x0D, bytes[index + 1] == 0x0A, bytes[index + 2] == 0x0D, bytes[index + 3] == 0x0A {
                count += 1
                index += 4
            } else {
                index += 1
            }
        }
        return count
    }
}
