import CAtsgateShims
import Glibc

/// Non-blocking UDP sockets, for the QUIC listener (`--listen-quic`).
extension Socket {
    /// A non-blocking, close-on-exec UDP socket bound to `address` (IPv6 only for an IPv6 address).
    /// `transparent`: IP_TRANSPARENT, for datagrams a TPROXY rule sends to it (needs CAP_NET_ADMIN).
    /// `originalDestinations`: each datagram comes with the address it was sent to (see
    /// `DatagramBatch.Datagram.destination`): the original one under TPROXY, this socket's own after a
    /// NAT redirect, which rewrote it.
    public static func bindDatagram(on address: SocketAddress, transparent: Bool = false,
                                    originalDestinations: Bool = false) throws(SystemError) -> Int32 {
        let fd = atsgate_socket(address.family, Int32(SOCK_DGRAM.rawValue))
        guard fd >= 0 else { throw SystemError(call: "socket", code: errno) }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        if !address.ip.isIPv4 { setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &one, socklen_t(MemoryLayout<Int32>.size)) }
        do throws(SystemError) {
            if transparent { try setTransparent(fd, family: address.family) }
            if originalDestinations, atsgate_set_receive_original_destination(fd, address.family) != 0 {
                throw SystemError(call: "setsockopt IP_RECVORIGDSTADDR", code: errno)
            }
        } catch {
            SystemCall.close(fd)
            throw SystemError(call: "\(error.call) on \(address)", code: error.code)
        }
        guard address.withSockAddr({ Glibc.bind(fd, $0, $1) }) == 0 else {
            let code = errno
            SystemCall.close(fd)
            throw SystemError(call: "bind \(address)", code: code)
        }
        return fd
    }
}

/// Buffers for reading a UDP socket's waiting datagrams in one system call (recvmmsg(2)), reused
/// from call to call; one per reading thread. Memory: `capacity` slots of `slotSize` bytes.
public final class DatagramBatch {
    /// One datagram of the last `receive`; its bytes stay valid until the next.
    public struct Datagram {
        public var bytes: UnsafeRawBufferPointer
        public var sender: SocketAddress?
        /// The address it was sent to, when the socket asked (`originalDestinations`); else nil.
        public var destination: SocketAddress?
        /// Longer than a slot: the kernel kept only its first `slotSize` bytes.
        public var truncated: Bool
    }

    public let capacity: Int
    public let slotSize: Int
    /// Datagrams the last `receive` filled in.
    public private(set) var count = 0
    private let buffers: UnsafeMutableRawBufferPointer
    private let senders: UnsafeMutableBufferPointer<sockaddr_storage>
    private let destinations: UnsafeMutableBufferPointer<sockaddr_storage>
    private let lengths: UnsafeMutableBufferPointer<Int>
    private let truncated: UnsafeMutableBufferPointer<Int32>

    /// `capacity`: datagrams per call (at most 256). `slotSize`: the longest datagram kept whole; a
    /// QUIC client's Initial datagrams are 1200 bytes up to the path MTU.
    public init(capacity: Int = 64, slotSize: Int = 2048) {
        self.capacity = min(max(1, capacity), 256)
        self.slotSize = max(1, slotSize)
        buffers = .allocate(byteCount: self.capacity * self.slotSize, alignment: 16)
        senders = .allocate(capacity: self.capacity)
        destinations = .allocate(capacity: self.capacity)
        lengths = .allocate(capacity: self.capacity)
        truncated = .allocate(capacity: self.capacity)
        senders.initialize(repeating: sockaddr_storage())
        destinations.initialize(repeating: sockaddr_storage())
        lengths.initialize(repeating: 0)
        truncated.initialize(repeating: 0)
    }

    deinit {
        buffers.deallocate()
        senders.deallocate()
        destinations.deallocate()
        lengths.deallocate()
        truncated.deallocate()
    }

    /// Reads the datagrams waiting on `fd` (up to `capacity`) without blocking; returns how many,
    /// 0 when none is waiting.
    @discardableResult
    public func receive(from fd: Int32) throws(SystemError) -> Int {
        while true {
            let received = atsgate_receive_datagrams(fd, buffers.baseAddress!.assumingMemoryBound(to: UInt8.self), slotSize,
                                                     UInt32(capacity), senders.baseAddress, destinations.baseAddress,
                                                     lengths.baseAddress, truncated.baseAddress)
            if received >= 0 {
                count = Int(received)
                return count
            }
            switch errno {
            case EINTR: continue
            case EAGAIN:
                count = 0
                return 0
            case let code: throw SystemError(call: "recvmmsg", code: code)
            }
        }
    }

    public subscript(index: Int) -> Datagram {
        precondition(index < count, "datagram \(index) of \(count)")
        let start = index * slotSize
        return Datagram(bytes: UnsafeRawBufferPointer(rebasing: buffers[start..<start + min(lengths[index], slotSize)]),
                        sender: SocketAddress(storage: senders[index]),
                        destination: destinations[index].ss_family == 0 ? nil : SocketAddress(storage: destinations[index]),
                        truncated: truncated[index] != 0)
    }
}
