import ATSPolicy
import Glibc

/// getifaddrs(3): the host's own IPv4 and IPv6 addresses, on every interface that has one. What a
/// listener on 0.0.0.0 or :: answers on, so what the destination ACL keeps clients from reaching.
public enum InterfaceAddresses {
    /// Every address of every interface (loopback included), without repeats; empty if the call fails.
    public static func all() -> [IPAddress] {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return [] }
        defer { freeifaddrs(first) }
        var addresses: [IPAddress] = []
        var cursor: UnsafeMutablePointer<ifaddrs>? = first
        while let entry = cursor {
            cursor = entry.pointee.ifa_next
            guard let raw = entry.pointee.ifa_addr else { continue }
            let family = Int32(raw.pointee.sa_family)
            let length = family == AF_INET ? MemoryLayout<sockaddr_in>.size
                : family == AF_INET6 ? MemoryLayout<sockaddr_in6>.size : 0
            guard length > 0 else { continue }
            var storage = sockaddr_storage()
            withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: UnsafeRawBufferPointer(start: raw, count: length)) }
            if let address = SocketAddress(storage: storage), !addresses.contains(address.ip) {
                addresses.append(address.ip)
            }
        }
        return addresses
    }
}
