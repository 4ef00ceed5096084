import CAtsgateShims
import Glibc

/// Where a transparently intercepted connection was going. A firewall redirect (nftables
/// `redirect`/`dnat`, iptables `REDIRECT`) rewrites the destination and conntrack remembers the
/// original; TPROXY leaves it alone, and an IP_TRANSPARENT socket accepts it as its own local address.
extension Socket {
    /// The original destination of an accepted TCP connection that netfilter NAT redirected
    /// (SO_ORIGINAL_DST, IP6T_SO_ORIGINAL_DST by the socket's family). A connection that reached the
    /// listener without a redirect reports the listener's own address, since conntrack tracks it
    /// unrewritten; without conntrack (no NAT rule loaded) the call fails with ENOENT.
    public static func originalDestination(_ fd: Int32) throws(SystemError) -> SocketAddress {
        var storage = sockaddr_storage()
        guard atsgate_original_destination(fd, &storage) == 0 else {
            throw SystemError(call: "getsockopt SO_ORIGINAL_DST", code: errno)
        }
        guard let address = SocketAddress(storage: storage) else {
            throw SystemError(call: "getsockopt SO_ORIGINAL_DST", code: EAFNOSUPPORT)
        }
        return address
    }

    /// IP_TRANSPARENT (IPV6_TRANSPARENT for `AF_INET6`) on `fd`, before bind: a TPROXY socket.
    /// Needs CAP_NET_ADMIN (or CAP_NET_RAW): EPERM without.
    public static func setTransparent(_ fd: Int32, family: Int32) throws(SystemError) {
        guard atsgate_set_transparent(fd, family) == 0 else {
            throw SystemError(call: family == AF_INET6 ? "setsockopt IPV6_TRANSPARENT" : "setsockopt IP_TRANSPARENT", code: errno)
        }
    }
}
