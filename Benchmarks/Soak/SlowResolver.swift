import Foundation
import Glibc
import Synchronization

/// A DNS server on a loopback UDP port that answers every A query with 127.0.0.1 (AAAA with no
/// address), `delay` seconds late: the late resolver of the fault list, for a daemon that takes
/// `--dns-server` (the asynchronous resolver). Names are answered only after the wait, each query
/// on its own thread, so a slow answer never holds up another.
final class SlowResolver: @unchecked Sendable {
    let port: Int
    let delay: Double
    private let fd: Int32
    private let stopped = Atomic<Bool>(false)
    let answered = Atomic<Int>(0)

    init(delay: Double) throws {
        self.delay = delay
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard fd >= 0, bound == 0 else { throw SoakError("slow resolver: cannot bind a UDP port") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        port = Int(UInt16(bigEndian: address.sin_port))
        self.fd = fd
        Thread.detachNewThread { [self] in serve() }
    }

    func stop() {
        stopped.store(true, ordering: .relaxed)
        shutdown(fd, Int32(SHUT_RDWR))
        Glibc.close(fd)
    }

    private func serve() {
        var buffer = [UInt8](repeating: 0, count: 512)
        while !stopped.load(ordering: .relaxed) {
            var peer = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let n = buffer.withUnsafeMutableBytes { bytes in
                withUnsafeMutablePointer(to: &peer) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(fd, bytes.baseAddress, bytes.count, 0, $0, &length) }
                }
            }
            if n <= 0 {
                if errno == EINTR { continue }
                return
            }
            guard let reply = SlowResolver.answer(Array(buffer[..<n])) else { continue }
            Thread.detachNewThread { [self, peer] in
                usleep(useconds_t(delay * 1_000_000))
                var to = peer
                _ = reply.withUnsafeBytes { bytes in
                    withUnsafePointer(to: &to) {
                        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                            sendto(fd, bytes.baseAddress, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                        }
                    }
                }
                answered.add(1, ordering: .relaxed)
            }
        }
    }

    /// The response to one query (RFC 1035 section 4.1): the question echoed, and for A one answer
    /// record of 127.0.0.1 (TTL 30) named by a pointer to the question; nil for what is no query.
    static func answer(_ query: [UInt8]) -> [UInt8]? {
        guard query.count >= 12, query[2] & 0x80 == 0, query[4] == 0, query[5] == 1 else { return nil }
        var index = 12
        while index < query.count, query[index] != 0 {
            guard query[index] < 64 else { return nil }
            index += Int(query[index]) + 1
        }
        guard index + 5 <= query.count else { return nil }
        let questionEnd = index + 5
        let type = UInt16(query[index + 1]) << 8 | UInt16(query[index + 2])
        let isA = type == 1
        var reply = Array(query[0..<2])
        reply += [0x81 | (query[2] & 0x01), 0x80] // response, recursion desired as asked, available, NOERROR
        reply += [0, 1, 0, isA ? 1 : 0, 0, 0, 0, 0]
        reply += query[12..<questionEnd]
        if isA { reply += [0xC0, 0x0C, 0, 1, 0, 1, 0, 0, 0, 30, 0, 4, 127, 0, 0, 1] }
        return reply
    }
}
