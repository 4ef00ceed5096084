import ATSPolicy
import Dispatch
import EventLoop
import Glibc
import POSIX

/// Turns a destination host into addresses without blocking the event loop: IP literals and pinned
/// names (`--resolve NAME=IP`) answer at once; other names go to getaddrinfo on the blocking pool.
package final class Resolver: @unchecked Sendable {
    private let pinned: [String: [IPAddress]]
    private let pool = BlockingPool.shared

    package init(pinned: [String: [IPAddress]]) {
        self.pinned = pinned
    }

    /// Calls `completion` on `loop` with the addresses (IPv6 and IPv4 as the system orders them), or
    /// an error message.
    package func resolve(_ host: Host, on loop: EventLoop,
                 completion: @escaping (Result<[IPAddress], AddressLookup.Failure>) -> Void) {
        switch host {
        case .address(let address):
            completion(.success([address]))
        case .name(let name):
            if let addresses = pinned[name] {
                completion(.success(addresses))
                return
            }
            pool.submit {
                let result = AddressLookup.resolve(name)
                loop.execute { completion(result) }
            }
        }
    }
}
