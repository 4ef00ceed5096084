import ATSPolicy
import Glibc

/// An IPv4 or IPv6 socket address with a port, convertible to and from sockaddr storage.
public struct SocketAddress: Hashable, Sendable, CustomStringConvertible {
    public var ip: IPAddress
    public var port: Int

    public init(ip: IPAddress, port: Int) {
        self.ip = ip
        self.port = port
    }

    public var description: String {
        ip.isIPv4 ? "\(ip):\(port)" : "[\(ip)]:\(port)"
    }

    /// Parses `IP:PORT` (`127.0.0.1:3128`, `[::1]:3128`); port 0 asks the kernel for a free port.
    public init?(parsing text: String) {
        guard let colon = text.lastIndex(of: ":") else { return nil }
        var host = text[..<colon]
        let portText = text[text.index(after: colon)...]
        if host.hasPrefix("[") {
            guard host.hasSuffix("]") else { return nil }
            host = host.dropFirst().dropLast()
        } else if host.contains(":") {
            return nil // IPv6 needs brackets
        }
        guard !portText.isEmpty, portText.allSatisfy(\.isASCII), portText.allSatisfy(\.isNumber),
              let port = Int(portText), port <= 65535, let ip = IPAddress.parseStrict(host) else { return nil }
        self.init(ip: ip, port: port)
    }

    public var family: Int32 { ip.isIPv4 ? AF_INET : AF_INET6 }

    /// Calls `body` with this address as a sockaddr.
    public func withSockAddr<T>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> T) -> T {
        switch ip {
        case .v4(let value):
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = value.bigEndian
            return withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        case .v6(let value):
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = in_port_t(UInt16(port).bigEndian)
            withUnsafeMutableBytes(of: &address.sin6_addr) { bytes in
                for index in 0..<16 { bytes[index] = UInt8(truncatingIfNeeded: value >> (120 - 8 * index)) }
            }
            return withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
            }
        }
    }

    /// Reads a sockaddr of `length` bytes a resolver handed over (getaddrinfo's, c-ares').
    public init?(_ address: UnsafePointer<sockaddr>, length: Int) {
        var storage = sockaddr_storage()
        withUnsafeMutableBytes(of: &storage) { target in
            target.copyMemory(from: UnsafeRawBufferPointer(start: address, count: min(length, target.count)))
        }
        self.init(storage: storage)
    }

    /// Reads a sockaddr filled in by accept(2) or getsockname(2).
    public init?(storage: sockaddr_storage) {
        var storage = storage
        switch Int32(storage.ss_family) {
        case AF_INET:
            let address = withUnsafeBytes(of: &storage) { $0.load(as: sockaddr_in.self) }
            ip = .v4(UInt32(bigEndian: address.sin_addr.s_addr))
            port = Int(UInt16(bigEndian: address.sin_port))
        case AF_INET6:
            let address = withUnsafeBytes(of: &storage) { $0.load(as: sockaddr_in6.self) }
            let value = withUnsafeBytes(of: address.sin6_addr) { bytes in
                bytes.reduce(UInt128(0)) { $0 << 8 | UInt128($1) }
            }
            ip = value >> 32 == 0xFFFF ? .v4(UInt32(truncatingIfNeeded: value)) : .v6(value)
            port = Int(UInt16(bigEndian: address.sin6_port))
        default:
            return nil
        }
    }
}
