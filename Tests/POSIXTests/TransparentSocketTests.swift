import Glibc
import POSIX
import Testing
import TestSupport

/// The system calls of the transparent gate: a redirected connection's original destination, a
/// TPROXY listener's, and UDP read in batches. The redirects are rules of the tests' own in the lab's
/// gateway namespace (GatewayLabTests test the shipped ruleset); sockets are made inside the
/// namespaces by threads that enter them.
@Suite(.serialized) struct TransparentSocketTests {
    static let originV4 = SocketAddress(parsing: "\(GatewayLab.originIPv4):443")!
    static let originV6 = SocketAddress(parsing: "[\(GatewayLab.originIPv6)]:8443")!

    @Test func aConnectionThatNftablesRedirectedReportsItsOriginalDestination() throws {
        let lab = try GatewayLab()
        defer { lab.close() }
        try lab[.gateway].run("""
            nft add table inet test_redirect
            nft add chain inet test_redirect prerouting '{ type nat hook prerouting priority dstnat; }'
            nft add rule inet test_redirect prerouting iifname lab0 tcp dport '{ 443, 8443 }' redirect to :4430
            """)
        let (listener4, listener6) = try lab[.gateway].inNamespace {
            (try Socket.listen(on: SocketAddress(parsing: "0.0.0.0:4430")!), try Socket.listen(on: SocketAddress(parsing: "[::]:4430")!))
        }
        defer {
            SystemCall.close(listener4)
            SystemCall.close(listener6)
        }
        for (destination, listener, device, gateway) in [(Self.originV4, listener4, GatewayLab.deviceIPv4, GatewayLab.gatewayLabIPv4),
                                                         (Self.originV6, listener6, GatewayLab.deviceIPv6, GatewayLab.gatewayLabIPv6)] {
            let client = try lab[.device].inNamespace { try Socket.connect(to: destination, timeout: 5) }
            defer { SystemCall.close(client) }
            let accepted = try #require(try accept(listener))
            defer { SystemCall.close(accepted.fd) }
            #expect(try Socket.originalDestination(accepted.fd) == destination)
            #expect(accepted.peer?.ip == address(device, port: 0)?.ip)
            // The redirect delivered it to the gateway's own address on the lab side.
            #expect(Socket.localAddress(accepted.fd) == address(gateway, port: 4430))
        }
        // A connection that no rule redirected reports the listener's own address.
        let direct = SocketAddress(parsing: "\(GatewayLab.gatewayLabIPv4):4430")!
        let client = try lab[.device].inNamespace { try Socket.connect(to: direct, timeout: 5) }
        defer { SystemCall.close(client) }
        let accepted = try #require(try accept(listener4))
        defer { SystemCall.close(accepted.fd) }
        #expect(try Socket.originalDestination(accepted.fd) == direct)
    }

    @Test func aTPROXYListenerAcceptsConnectionsToTheOriginalDestination() throws {
        let lab = try GatewayLab()
        defer { lab.close() }
        // TPROXY leaves the destination alone; the mark routes the packet to the local stack.
        try lab[.gateway].run("""
            ip rule add fwmark 1 lookup 100
            ip route add local 0.0.0.0/0 dev lo table 100
            ip -6 rule add fwmark 1 lookup 100
            ip -6 route add local ::/0 dev lo table 100
            nft add table inet test_tproxy
            nft add chain inet test_tproxy prerouting '{ type filter hook prerouting priority mangle; }'
            nft add rule inet test_tproxy prerouting iifname lab0 meta nfproto ipv4 tcp dport 443 tproxy ip to :4431 meta mark set 1 accept
            nft add rule inet test_tproxy prerouting iifname lab0 meta nfproto ipv6 tcp dport 8443 tproxy ip6 to :4431 meta mark set 1 accept
            """)
        let (listener4, listener6) = try lab[.gateway].inNamespace {
            (try Socket.listen(on: SocketAddress(parsing: "0.0.0.0:4431")!, transparent: true),
             try Socket.listen(on: SocketAddress(parsing: "[::]:4431")!, transparent: true))
        }
        defer {
            SystemCall.close(listener4)
            SystemCall.close(listener6)
        }
        for (destination, listener) in [(Self.originV4, listener4), (Self.originV6, listener6)] {
            let client = try lab[.device].inNamespace { try Socket.connect(to: destination, timeout: 5) }
            defer { SystemCall.close(client) }
            let accepted = try #require(try accept(listener))
            defer { SystemCall.close(accepted.fd) }
            // The gateway answered for the origin's address: its local address is the destination.
            #expect(Socket.localAddress(accepted.fd) == destination)
            // And the client believes it is connected to the origin.
            #expect(try lab[.device].inNamespace { peerAddress(client) } == destination)
        }
    }

    @Test func datagramsAreReadInBatchesWithTheirSenderAndDestination() throws {
        for host in ["127.0.0.1", "[::1]"] {
            let socket = try Socket.bindDatagram(on: SocketAddress(parsing: "\(host):0")!, originalDestinations: true)
            defer { SystemCall.close(socket) }
            let local = try #require(Socket.localAddress(socket))
            let sender = try Socket.bindDatagram(on: SocketAddress(parsing: "\(host):0")!)
            defer { SystemCall.close(sender) }
            let senderAddress = try #require(Socket.localAddress(sender))
            let batch = DatagramBatch(capacity: 4, slotSize: 1300)
            #expect(try batch.receive(from: socket) == 0, "nothing waiting is no error")
            let sizes = [1200, 1, 1250, 1500, 700, 1200]
            for (index, size) in sizes.enumerated() {
                let datagram = [UInt8](repeating: UInt8(index), count: size)
                let sent = datagram.withUnsafeBytes { bytes in
                    local.withSockAddr { Glibc.sendto(sender, bytes.baseAddress, bytes.count, 0, $0, $1) }
                }
                #expect(sent == size)
            }
            var received: [(first: UInt8, count: Int, truncated: Bool)] = []
            while try batch.receive(from: socket) > 0 {
                #expect(batch.count <= 4)
                for index in 0..<batch.count {
                    let datagram = batch[index]
                    #expect(datagram.sender == senderAddress)
                    #expect(datagram.destination == local)
                    received.append((datagram.bytes.first ?? 0, datagram.bytes.count, datagram.truncated))
                }
            }
            #expect(received.map(\.first) == [0, 1, 2, 3, 4, 5])
            // The 1,500-byte datagram is longer than a slot: its first 1,300 bytes, marked cut.
            #expect(received.map(\.count) == [1200, 1, 1250, 1300, 700, 1200])
            #expect(received.map(\.truncated) == [false, false, false, true, false, false])
        }
    }

    @Test func aSocketThatNoRuleRedirectedHasNoOriginalDestinationWithoutConntrack() throws {
        // A fresh namespace has no NAT rule, so conntrack tracks nothing and the call fails.
        let namespace = try LabNamespace(role: "plain")
        defer { namespace.close() }
        let error = try namespace.inNamespace { () -> SystemError? in
            let listener = try Socket.listen(on: SocketAddress(parsing: "127.0.0.1:4432")!)
            defer { SystemCall.close(listener) }
            let client = try Socket.connect(to: SocketAddress(parsing: "127.0.0.1:4432")!, timeout: 5)
            defer { SystemCall.close(client) }
            guard let accepted = try accept(listener) else { return nil }
            defer { SystemCall.close(accepted.fd) }
            do throws(SystemError) {
                _ = try Socket.originalDestination(accepted.fd)
                return nil
            } catch {
                return error
            }
        }
        let failure = try #require(error)
        #expect(failure.code == ENOENT)
        #expect(failure.call == "getsockopt SO_ORIGINAL_DST")
    }
}

/// The next connection on a listener, waiting at most 5 s for it.
func accept(_ listener: Int32) throws -> (fd: Int32, peer: SocketAddress?)? {
    guard Poll.wait(fd: listener, events: Int16(POLLIN), timeout: 5) == .ready else { return nil }
    return try SystemCall.accept(listener)
}

/// `IP` and `port` as a socket address, IPv4 or IPv6.
func address(_ ip: String, port: Int) -> SocketAddress? {
    SocketAddress(parsing: ip.contains(":") ? "[\(ip)]:\(port)" : "\(ip):\(port)")
}

func peerAddress(_ fd: Int32) -> SocketAddress? {
    var storage = sockaddr_storage()
    var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
    let ok = withUnsafeMutablePointer(to: &storage) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &length) }
    }
    return ok == 0 ? SocketAddress(storage: storage) : nil
}
