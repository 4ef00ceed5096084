import Foundation
import Glibc
import POSIX
import Testing
import TestSupport

/// deploy/gateway/atsgate-gateway.nft as shipped, in the lab's gateway namespace: it loads with its
/// defines (and only with them), the device's TCP reaches the transparent port with its original
/// destination, its QUIC reaches the QUIC port, other UDP goes nowhere but DNS to the gateway, and
/// with nothing listening the device reaches nothing at all. What does the listening here is the
/// POSIX layer atsgate uses; atsgate itself comes in with the transparent listeners.
@Suite(.serialized) struct GatewayLabTests {
    static let transparentPort = 3130
    static let quicPort = 3443

    @Test func theShippedRulesetLoadsReloadsAndNeedsItsDefines() throws {
        let lab = try GatewayLab()
        defer { lab.close() }
        try lab.loadGatewayRuleset(transparentPort: Self.transparentPort, quicPort: Self.quicPort)
        try lab.loadGatewayRuleset(transparentPort: Self.transparentPort, quicPort: Self.quicPort)
        let table = try lab[.gateway].check(["nft", "list", "table", "inet", "atsgate_gateway"])
        #expect(table.contains(#"iifname "lab0" meta l4proto tcp counter"#) && table.contains("redirect to :3130"))
        #expect(table.contains(#"iifname "lab0" udp dport 443 counter"#) && table.contains("redirect to :3443"))
        #expect(try lab[.gateway].check(["nft", "list", "tables"]) == "table inet atsgate_gateway\n",
                "loading it again replaced the table")
        // Without the defines nft refuses the file, naming what is missing.
        let bare = try lab[.gateway].call(["nft", "-c", "-f", GatewayLab.rulesetPath])
        #expect(bare.status != 0)
        #expect(bare.stderr.contains("unknown identifier 'LAB_IF'"))
        // The operator's own file may define them and include it (as /etc/nftables.conf would).
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gateway-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let conf = directory.appendingPathComponent("nftables.conf")
        try """
            define LAB_IF = "lab0"
            define TRANSPARENT_PORT = 4130
            define QUIC_PORT = 4443
            include "\(GatewayLab.rulesetPath)"

            """.write(to: conf, atomically: true, encoding: .utf8)
        try lab[.gateway].check(["nft", "-f", conf.path])
        #expect(try lab[.gateway].check(["nft", "list", "table", "inet", "atsgate_gateway"]).contains("redirect to :4130"))
    }

    @Test func withTheRulesetAndNothingListeningTheDeviceReachesNothing() throws {
        let lab = try GatewayLab()
        defer { lab.close() }
        let origin = try OriginListeners(lab, port: 8080)
        // Without the ruleset the lab routes the device to the origin: the ruleset is what stops it.
        for address in origin.addresses {
            let client = try lab[.device].inNamespace { try Socket.connect(to: address, timeout: 5) }
            SystemCall.close(client)
        }
        #expect(origin.acceptAll() == 2)

        try lab.loadGatewayRuleset(transparentPort: Self.transparentPort, quicPort: Self.quicPort)
        for address in origin.addresses {
            let refused = try lab[.device].inNamespace { () -> Int32? in
                do throws(SystemError) {
                    SystemCall.close(try Socket.connect(to: address, timeout: 5))
                    return nil
                } catch {
                    return error.code
                }
            }
            // The gateway itself refuses: the connection went to its empty transparent port.
            #expect(refused == ECONNREFUSED, "\(address)")
        }
        // UDP to the origin is not redirected: it reaches the forward hook, which drops it.
        let originUDP = try lab[.origin].inNamespace { try Socket.bindDatagram(on: address(GatewayLab.originIPv4, port: 8080)!) }
        defer { SystemCall.close(originUDP) }
        try send(lab, "udp", to: address(GatewayLab.originIPv4, port: 8080)!)
        #expect(origin.acceptAll() == 0, "nothing reached the origin")
        #expect(try counter(lab, chain: "forward", comment: "nothing from the lab is forwarded") == 1)
        #expect(try receive(originUDP, wait: false).isEmpty)
    }

    @Test func theDevicesTCPArrivesAtTheTransparentPortWithItsOriginalDestination() throws {
        let lab = try GatewayLab()
        defer { lab.close() }
        try lab.loadGatewayRuleset(transparentPort: Self.transparentPort, quicPort: Self.quicPort)
        let origin = try OriginListeners(lab, port: 443)
        let (listener4, listener6, proxy) = try lab[.gateway].inNamespace {
            (try Socket.listen(on: address("0.0.0.0", port: Self.transparentPort)!),
             try Socket.listen(on: address("::", port: Self.transparentPort)!),
             try Socket.listen(on: address(GatewayLab.gatewayLabIPv4, port: 3128)!))
        }
        defer { [listener4, listener6, proxy].forEach(SystemCall.close) }
        let destinations = [address(GatewayLab.originIPv4, port: 443)!, address(GatewayLab.originIPv4, port: 80)!,
                            address(GatewayLab.originIPv4, port: 5222)!, address("198.18.77.7", port: 443)!,
                            address(GatewayLab.originIPv6, port: 443)!]
        for destination in destinations {
            let client = try lab[.device].inNamespace { try Socket.connect(to: destination, timeout: 5) }
            defer { SystemCall.close(client) }
            let accepted = try #require(try accept(destination.ip.isIPv4 ? listener4 : listener6), "\(destination)")
            defer { SystemCall.close(accepted.fd) }
            #expect(try Socket.originalDestination(accepted.fd) == destination)
        }
        #expect(origin.acceptAll() == 0, "the origin saw none of them")
        // The gateway's own addresses are not redirected: a device set to use the explicit proxy
        // reaches it as configured.
        let proxyAddress = address(GatewayLab.gatewayLabIPv4, port: 3128)!
        let client = try lab[.device].inNamespace { try Socket.connect(to: proxyAddress, timeout: 5) }
        defer { SystemCall.close(client) }
        let accepted = try #require(try accept(proxy))
        defer { SystemCall.close(accepted.fd) }
        #expect(try Socket.originalDestination(accepted.fd) == proxyAddress)
    }

    @Test func quicGoesToTheQUICPortAndOtherUDPNowhereButDNSToTheGateway() throws {
        let lab = try GatewayLab()
        defer { lab.close() }
        try lab.loadGatewayRuleset(transparentPort: Self.transparentPort, quicPort: Self.quicPort)
        let (quic4, quic6, dns, other) = try lab[.gateway].inNamespace {
            (try Socket.bindDatagram(on: address("0.0.0.0", port: Self.quicPort)!, originalDestinations: true),
             try Socket.bindDatagram(on: address("::", port: Self.quicPort)!, originalDestinations: true),
             try Socket.bindDatagram(on: address(GatewayLab.gatewayLabIPv4, port: 53)!),
             try Socket.bindDatagram(on: address(GatewayLab.gatewayLabIPv4, port: 5000)!))
        }
        let (origin443, origin5353) = try lab[.origin].inNamespace {
            (try Socket.bindDatagram(on: address("0.0.0.0", port: 443)!), try Socket.bindDatagram(on: address("0.0.0.0", port: 5353)!))
        }
        defer { [quic4, quic6, dns, other, origin443, origin5353].forEach(SystemCall.close) }
        try send(lab, "initial-v4", to: address(GatewayLab.originIPv4, port: 443)!)
        try send(lab, "initial-v6", to: address(GatewayLab.originIPv6, port: 443)!)
        try send(lab, "mdns", to: address(GatewayLab.originIPv4, port: 5353)!)
        try send(lab, "other", to: address(GatewayLab.gatewayLabIPv4, port: 5000)!)
        try send(lab, "dns", to: address(GatewayLab.gatewayLabIPv4, port: 53)!)
        let v4 = try #require(receive(quic4).first)
        #expect(v4.text == "initial-v4")
        #expect(v4.sender?.ip == address(GatewayLab.deviceIPv4, port: 0)?.ip)
        // NAT rewrote the destination: the QUIC socket sees its own address, not the origin's.
        #expect(v4.destination == address(GatewayLab.gatewayLabIPv4, port: Self.quicPort))
        let v6 = try #require(receive(quic6).first)
        #expect(v6.text == "initial-v6")
        #expect(v6.sender?.ip == address(GatewayLab.deviceIPv6, port: 0)?.ip)
        #expect(try receive(dns).map(\.text) == ["dns"])
        // DNS was sent last, so what the gateway was going to deliver has been.
        #expect(try receive(other, wait: false).isEmpty)
        #expect(try receive(origin443, wait: false).isEmpty && receive(origin5353, wait: false).isEmpty)
        #expect(try counter(lab, chain: "input", comment: "any other UDP from the lab") == 1)
        #expect(try counter(lab, chain: "forward", comment: "nothing from the lab is forwarded") == 1)

        // A real QUIC client in the device, with no proxy setting: its Initials reach the QUIC port.
        let client = try QUICClient.command(connect: "\(GatewayLab.originIPv4):443", serverName: "quic.example.com", timeout: 1)
        let run = try lab[.device].call(client, timeout: 30)
        #expect(run.stdout.contains("quic: no answer"), "\(run.stderr)")
        let initials = try receive(quic4)
        #expect(!initials.isEmpty)
        #expect(initials.allSatisfy { $0.bytes.count >= 1200 && $0.bytes[0] & 0xB0 == 0x80 && Array($0.bytes[1..<5]) == [0, 0, 0, 1] },
                "long-header version 1 Initials padded to 1,200 bytes")
        #expect(try receive(origin443, wait: false).isEmpty)
    }
}

/// Listeners on the origin's IPv4 and IPv6 addresses, to count what reaches it.
struct OriginListeners {
    let addresses: [SocketAddress]
    let fds: [Int32]

    init(_ lab: GatewayLab, port: Int) throws {
        let addresses = [address(GatewayLab.originIPv4, port: port)!, address(GatewayLab.originIPv6, port: port)!]
        fds = try lab[.origin].inNamespace { try addresses.map { try Socket.listen(on: $0) } }
        self.addresses = addresses
    }

    /// Accepts (and closes) every connection waiting now; how many there were.
    func acceptAll() -> Int {
        var count = 0
        for fd in fds {
            while let accepted = try? SystemCall.accept(fd) {
                SystemCall.close(accepted.fd)
                count += 1
            }
        }
        return count
    }
}

struct ReceivedDatagram {
    var bytes: [UInt8]
    var sender: SocketAddress?
    var destination: SocketAddress?
    var text: String { String(decoding: bytes, as: UTF8.self) }
}

/// One datagram from the device (a socket of its own, an ephemeral port) to `destination`.
func send(_ lab: GatewayLab, _ text: String, to destination: SocketAddress) throws {
    try lab[.device].inNamespace {
        let fd = try Socket.bindDatagram(on: address(destination.ip.isIPv4 ? "0.0.0.0" : "::", port: 0)!)
        defer { SystemCall.close(fd) }
        let sent = Array(text.utf8).withUnsafeBytes { bytes in
            destination.withSockAddr { Glibc.sendto(fd, bytes.baseAddress, bytes.count, 0, $0, $1) }
        }
        guard sent == text.utf8.count else { throw HarnessError("sendto \(destination): \(String(cString: strerror(errno)))") }
    }
}

/// The datagrams waiting on `fd`, after waiting up to 5 s for the first when `wait`.
func receive(_ fd: Int32, wait: Bool = true) throws -> [ReceivedDatagram] {
    if wait { _ = Poll.wait(fd: fd, events: Int16(POLLIN), timeout: 5) }
    let batch = DatagramBatch(capacity: 16)
    var datagrams: [ReceivedDatagram] = []
    while try batch.receive(from: fd) > 0 {
        for index in 0..<batch.count {
            let datagram = batch[index]
            datagrams.append(ReceivedDatagram(bytes: Array(datagram.bytes), sender: datagram.sender, destination: datagram.destination))
        }
    }
    return datagrams
}

/// The packet count of the gateway ruleset's rule with `comment` in `chain`.
func counter(_ lab: GatewayLab, chain: String, comment: String) throws -> Int {
    let listing = try lab[.gateway].check(["nft", "list", "chain", "inet", "atsgate_gateway", chain])
    guard let line = listing.split(separator: "\n").first(where: { $0.contains("comment \"\(comment)\"") }),
          let match = line.firstMatch(of: /counter packets (\d+)/), let packets = Int(match.1) else {
        throw HarnessError("no counter for \"\(comment)\" in chain \(chain):\n\(listing)")
    }
    return packets
}
