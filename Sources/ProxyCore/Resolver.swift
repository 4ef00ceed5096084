import ATSPolicy
import Dispatch
import Glibc

/// Turns a destination host into addresses without blocking the event loop: IP literals and pinned
/// names (`--resolve NAME=IP`) answer at once; other names go to getaddrinfo on the blocking pool.
final class Resolver: @unchecked Sendable {
    private let pinned: [String: [IPAddress]]
    private let pool = BlockingPool.shared

    init(pinned: [String: [IPAddress]]) {
        self.pinned = pinned
    }

    /// Calls `completion` on `loop` with the addresses (IPv6 and IPv4 as the system orders them), or
    /// an error message.
    func resolve(_ host: Host, on loop: EventLoop,
                 completion: @escaping (Result<[IPAddress], ResolveError>) -> Void) {
        switch host {
        case .address(let address):
            completion(.success([address]))
        case .name(let name):
            if let addresses = pinned[name] {
                completion(.success(addresses))
                return
            }
            pool.submit {
                let result = Resolver.lookup(name)
                loop.execute { completion(result) }
            }
        }
    }

    private static func lookup(_ name: String) -> Result<[IPAddress], ResolveError> {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_family = AF_UNSPEC
        hints.ai_flags = AI_ADDRCONFIG
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(name, nil, &hints, &list)
        guard status == 0, let first = list else {
            return .failure(ResolveError(message: "cannot resolve \(name): \(String(cString: gai_strerror(status)))"))
        }
        defer { freeaddrinfo(first) }
        var addresses: [IPAddress] = []
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let entry = cursor {
            if let raw = entry.pointee.ai_addr {
                var storage = sockaddr_storage()
                withUnsafeMutableBytes(of: &storage) { target in
                    target.copyMemory(from: UnsafeRawBufferPointer(start: raw, count: Int(entry.pointee.ai_addrlen)))
                }
                if let address = SocketAddress(storage: storage), !addresses.contains(address.ip) {
                    addresses.append(address.ip)
                }
            }
            cursor = entry.pointee.ai_next
        }
        return addresses.isEmpty ? .failure(ResolveError(message: "no addresses for \(name)")) : .success(addresses)
    }
}

struct ResolveError: Error {
    var message: String
}
