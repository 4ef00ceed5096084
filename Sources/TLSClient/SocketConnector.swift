import ATSPolicy
import Glibc
import POSIX

/// poll(2) with a deadline, from the one POSIX layer (TLSProbe and TLSConnection wait on it).
typealias Poll = POSIX.Poll

/// Blocking TCP connects bounded in time, and name resolution, for the probe: the POSIX layer's,
/// with failures worded as probe failures.
///
/// The probe runs off every event loop, so blocking here is fine; the socket is left non-blocking for
/// the handshake, which polls with its own deadline.
enum SocketConnector {
    /// A connected non-blocking socket to `address` (an IP literal), or why not.
    static func connect(address: String, port: Int, timeout: Double) -> Result<Int32, ProbeFailure> {
        let bare = address.hasPrefix("[") ? String(address.dropFirst().dropLast()) : address
        guard let ip = IPAddress.parseStrict(Substring(bare)) else {
            return .failure(ProbeFailure(code: .unreachable, message: "\(address) is not an IP address"))
        }
        let endpoint = SocketAddress(ip: ip, port: port)
        let connected = Result { () throws(SystemError) in try Socket.connect(to: endpoint, timeout: timeout) }
        switch connected {
        case .success(let fd):
            return .success(fd)
        case .failure(let error):
            switch error.code {
            case ETIMEDOUT:
                return .failure(ProbeFailure(code: .timeout,
                                             message: "connecting to \(endpoint) timed out after \(Poll.seconds(timeout))"))
            case ECONNREFUSED:
                return .failure(ProbeFailure(code: .refused, message: "connecting to \(endpoint): \(String(cString: strerror(error.code)))"))
            default:
                return .failure(ProbeFailure(code: .unreachable,
                                             message: "connecting to \(endpoint): \(String(cString: strerror(error.code)))"))
            }
        }
    }

    /// The addresses `host` resolves to (IPv4 and IPv6, in resolver order), or why not.
    static func resolve(_ host: String, port: Int) -> Result<[String], ProbeFailure> {
        switch AddressLookup.resolve(host, onlyConfigured: false) {
        case .success(let addresses):
            return .success(addresses.map(\.description))
        case .failure(let failure):
            return .failure(ProbeFailure(code: .dns, message: failure.message))
        }
    }
}
