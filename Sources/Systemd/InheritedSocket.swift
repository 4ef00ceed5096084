/// A listening socket the service manager opened for the daemon (socket activation).
public struct InheritedSocket: Sendable, Equatable {
    /// What the daemon serves on an inherited socket, from its FileDescriptorName=.
    public enum Role: String, Sendable, Equatable {
        case proxy
        /// The proxy's TLS listener: clients speak TLS first (`--listen-tls`).
        case proxyTLS = "proxy-tls"
        case admin
        /// The transparent gate's listeners: connections a firewall redirected (`--listen-transparent`)
        /// or TPROXY handed over (`--listen-tproxy`), and the QUIC listener's UDP socket (`--listen-quic`).
        case transparent, tproxy, quic

        /// The role a socket unit's FileDescriptorName= selects. No name means the proxy, so a lone
        /// socket (or a manager that passes no names) needs no naming.
        public init(fileDescriptorName name: String?) throws {
            guard let role = Role(rawValue: name ?? "proxy") else {
                throw SystemdError("FileDescriptorName '\(name ?? "")' has no role: name the socket 'proxy', 'proxy-tls', "
                                   + "'admin', 'transparent', 'tproxy' or 'quic'")
            }
            self = role
        }

        /// The socket type the role needs: a datagram socket for QUIC, a listening stream socket otherwise.
        public var isDatagram: Bool { self == .quic }
    }

    /// The descriptor, already close-on-exec.
    public var fd: Int32
    /// FileDescriptorName= of its socket unit; nil when the manager passed no names.
    public var name: String?
    public var role: Role

    public init(fd: Int32, name: String?, role: Role) {
        self.fd = fd
        self.name = name
        self.role = role
    }
}
