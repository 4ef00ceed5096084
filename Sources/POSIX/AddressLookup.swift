import ATSPolicy
import Glibc

/// getaddrinfo(3), once for everyone: the proxy's resolver, the TLS probe and the health check. It
/// blocks: callers run it off the event loops.
public enum AddressLookup {
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public var message: String
        public var description: String { message }
    }

    /// The IPv6 and IPv4 addresses `name` resolves to, in the resolver's order, without repeats.
    /// `onlyConfigured` (AI_ADDRCONFIG) leaves out families the host has no address of.
    public static func resolve(_ name: String, onlyConfigured: Bool = true) -> Result<[IPAddress], Failure> {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_family = AF_UNSPEC
        hints.ai_flags = onlyConfigured ? AI_ADDRCONFIG : 0
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(name, nil, &hints, &list)
        guard status == 0, let first = list else {
            return .failure(Failure(message: "cannot resolve \(name): \(String(cString: gai_strerror(status)))"))
        }
        defer { freeaddrinfo(first) }
        var addresses: [IPAddress] = []
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let entry = cursor {
            if let raw = entry.pointee.ai_addr, let address = SocketAddress(raw, length: Int(entry.pointee.ai_addrlen)),
               !addresses.contains(address.ip) {
                addresses.append(address.ip)
            }
            cursor = entry.pointee.ai_next
        }
        return addresses.isEmpty ? .failure(Failure(message: "no addresses for \(name)")) : .success(addresses)
    }
}
