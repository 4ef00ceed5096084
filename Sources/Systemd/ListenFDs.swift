import CSystemd
import Glibc

/// The sockets passed by socket activation (sd_listen_fds(3)).
public enum ListenFDs {
    /// The inherited listening sockets with their roles; empty when the daemon was not socket
    /// activated. Unsets LISTEN_FDS, LISTEN_PID and LISTEN_FDNAMES so that children do not take the
    /// sockets for theirs. Throws when the manager's variables are malformed, a descriptor is not a
    /// listening stream socket (e.g. ListenDatagram= or Accept=yes) where its role needs one (the
    /// QUIC listener's needs a datagram socket), or a name has no role.
    public static func inherited() throws -> [InheritedSocket] {
        var names: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
        let count = sd_listen_fds_with_names(1, &names)
        defer { free(names: names, count: count) }
        guard count >= 0 else {
            throw SystemdError.call("sd_listen_fds_with_names", returned: count, context: "LISTEN_FDS/LISTEN_FDNAMES")
        }
        return try (0..<Int(count)).map { index in
            let fd = SD_LISTEN_FDS_START + Int32(index)
            // Without LISTEN_FDNAMES libsystemd reports "unknown" for each descriptor: that is no name.
            let name = names?[index].map { String(cString: $0) }.flatMap { $0 == "unknown" ? nil : $0 }
            let shown = "inherited fd \(fd)\(name.map { " (\($0))" } ?? "")"
            let role: InheritedSocket.Role
            do {
                role = try InheritedSocket.Role(fileDescriptorName: name)
            } catch let error as SystemdError {
                throw SystemdError("\(shown): \(error.description)")
            }
            let check = role.isDatagram ? sd_is_socket(fd, AF_UNSPEC, Int32(SOCK_DGRAM.rawValue), -1)
                                        : sd_is_socket(fd, AF_UNSPEC, Int32(SOCK_STREAM.rawValue), 1)
            if check < 0 { throw SystemdError.call("sd_is_socket", returned: check, context: shown) }
            if check == 0 {
                throw SystemdError(role.isDatagram ? "\(shown) is not a datagram socket: use ListenDatagram="
                                                   : "\(shown) is not a listening stream socket: use ListenStream= with Accept=no")
            }
            return InheritedSocket(fd: fd, name: name, role: role)
        }
    }

    private static func free(names: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?, count: Int32) {
        guard let names else { return }
        // The array is NULL-terminated; walk to it rather than trust count on the error path.
        var index = 0
        while let name = names[index] {
            Glibc.free(name)
            index += 1
        }
        Glibc.free(names)
    }
}
