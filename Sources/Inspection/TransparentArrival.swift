import ATSPolicy
import Glibc
import POSIX

/// Where a transparent listener's connection was going, read once when it is accepted: its original
/// destination, or why it has none the proxy may use (`transparent-loop`).
package enum TransparentArrival: Equatable {
    /// A firewall redirected it (or TPROXY handed it over) on its way to this address.
    case redirected(SocketAddress)
    /// It reached the listener without a redirect, or was going to the proxy itself (the address,
    /// when there is one, and why): relaying it would only bring it back.
    case loop(SocketAddress?, String)

    /// `fd` was accepted on a transparent listener (`tproxy`: a TPROXY one, whose local address is the
    /// original destination; else a NAT redirect's, read with SO_ORIGINAL_DST) listening on port
    /// `listenerPort`; `isOwnListener` says whether an address is one of the proxy's listeners.
    package static func read(_ fd: Int32, tproxy: Bool, listenerPort: Int,
                             isOwnListener: (SocketAddress) -> Bool) -> TransparentArrival {
        let local = Socket.localAddress(fd)
        let original: SocketAddress
        if tproxy {
            guard let local else { return .loop(nil, "the connection's local address cannot be read") }
            original = local
            if local.port == listenerPort {
                return .loop(local, "it reached the TPROXY port \(listenerPort) itself: no firewall rule handed it over")
            }
        } else {
            do {
                original = try Socket.originalDestination(fd)
            } catch {
                // ENOENT: conntrack knows no NAT for it (no ruleset loaded, or it came over loopback).
                let why = error.code == ENOENT ? "conntrack knows no redirect for it" : "\(error)"
                return .loop(nil, "it was not redirected by a firewall rule (\(why))")
            }
            if original == local {
                return .loop(original, "it reached the transparent port \(original) itself: no firewall rule redirected it")
            }
        }
        if isOwnListener(original) {
            return .loop(original, "its original destination \(original) is the proxy itself")
        }
        return .redirected(original)
    }

    /// Whether `address` is one of `listeners`; a wildcard listener listens on every one of the host's
    /// `ownAddresses` of its family (`::` on IPv4 too: dual stack).
    package static func isListener(_ address: SocketAddress, among listeners: [SocketAddress],
                                   ownAddresses: Set<IPAddress>) -> Bool {
        listeners.contains { listener in
            guard listener.port == address.port else { return false }
            switch listener.ip {
            case .v4(0): return address.ip.isIPv4 && ownAddresses.contains(address.ip)
            case .v6(0): return ownAddresses.contains(address.ip)
            default: return listener.ip == address.ip
            }
        }
    }

    /// The original destination, when one was read.
    package var address: SocketAddress? {
        switch self {
        case .redirected(let address): address
        case .loop(let address, _): address
        }
    }
}
