/// A listening socket the service manager opened for the daemon (socket activation).
public struct InheritedSocket: Sendable, Equatable {
    /// What the daemon serves on an inherited socket, from its FileDescriptorName=.
    public enum Role: String, Sendable, Equatable {
        case proxy
        /// The proxy's TLS listener: clients speak TLS first (`--listen-tls`).
        case proxyTLS = "proxy-tls"
        case admin

        /// The role a socket unit's FileDescriptorName= selects. No name means the proxy, so a lone
        /// socket (or a manager that passes no names) needs no naming.
        public init(fileDescriptorName name: String?) throws {
            switch name {
            case nil, "proxy": self = .proxy
            case "proxy-tls": self = .proxyTLS
            case "admin": self = .admin
            case let other?:
                throw SystemdError("FileDescriptorName '\(other)' has no role: name the socket 'proxy', 'proxy-tls' or 'admin'")
            }
        }
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
