import ATSPolicy
import EventLoops
import Foundation
import Glibc
import ProxyAccess
import Testing
import LogTestSupport
import TestSupport
@testable import DecisionLog
@testable import ProxyCore

/// The transparent gate in-process, its decision log in memory: the daemon's side of the lab tests
/// (CLITests/TransparentGateTests) where a moved clock or an inherited socket says more than the
/// binary can. The transparent listener lives in the gateway namespace of a GatewayLab, with the
/// shipped ruleset, so that connections reach it redirected.
@Suite(.serialized) struct InProcessGateTests {
    static let port = 3130

    private func stop(_ server: ProxyServer) {
        let stopped = DispatchSemaphore(value: 0)
        server.stop(grace: 1, completion: { _ in stopped.signal() })
        _ = stopped.wait(timeout: .now() + 10)
    }

    /// Moves `clock` on and runs every loop's due deadlines until `fd` is readable (the proxy closed
    /// it), bounded.
    private func move(_ clock: MovableClock, by seconds: Double, on server: ProxyServer, until fd: Int32) {
        for _ in 0..<500 {
            clock.advance(by: seconds)
            for proxyLoop in server.loops { proxyLoop.loop.queue.sync { proxyLoop.loop.clock.tick() } }
            var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            if poll(&ready, 1, 20) > 0 { return }
        }
    }

    @Test func aRedirectedClientThatSendsNothingOrTooLittleEndsAtTheHeadTimeout() throws {
        let lab = try GatewayLab()
        defer { lab.close() }
        try lab.loadGatewayRuleset(transparentPort: Self.port, quicPort: 3443)
        let clock = MovableClock()
        var configuration = ProxyConfiguration()
        configuration.listeners.proxy = []
        configuration.listeners.transparent = [SocketAddress(parsing: "\(GatewayLab.gatewayLabIPv4):\(Self.port)")!]
        configuration.listeners.loopCount = 1
        configuration.allowClients = [IPNetwork(address: .v4(0xC612_0100), prefixLength: 24)]
        configuration.timeouts.head = 10
        configuration.log.format = .journal
        let log = MemoryLog()
        let server = try lab[.gateway].inNamespace { try ProxyServer(configuration: configuration, sink: log.sink, now: { clock.now() }) }
        server.start()
        defer { stop(server) }
        let origin = SocketAddress(parsing: "\(GatewayLab.originIPv4):443")!

        let silent = try lab[.device].inNamespace { try Socket.connect(to: origin, timeout: 5) }
        defer { SystemCall.close(silent) }
        move(clock, by: 11, on: server, until: silent)
        let first = try #require(log.wait(for: 1).first)
        #expect(first["reason"] == "client-timeout" && first["action"] == "error")
        #expect(first["message"] == "the client sent nothing in 10 s")
        #expect(first["path"] == "transparent" && first["original_dst"] == "\(GatewayLab.originIPv4):443")

        // Half a ClientHello: the same timeout, and the record shows what came.
        let half = try lab[.device].inNamespace { try Socket.connect(to: origin, timeout: 5) }
        defer { SystemCall.close(half) }
        let bytes: [UInt8] = [0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xFC]
        _ = bytes.withUnsafeBytes { send(half, $0.baseAddress, $0.count, 0) }
        move(clock, by: 11, on: server, until: half)
        let second = try #require(log.wait(for: 2).last)
        #expect(second["reason"] == "client-timeout")
        #expect(second["message"] == "no whole ClientHello or HTTP request line in 10 s: 16 03 01 02 00 01 00 01 fc (\".........\")")
    }

    @Test func aConnectionStraightToTheTransparentPortIsALoop() throws {
        var configuration = ProxyConfiguration()
        configuration.listeners.proxy = []
        configuration.listeners.transparent = [SocketAddress(ip: .v4(0x7F00_0001), port: 0)]
        configuration.listeners.loopCount = 1
        configuration.log.format = .journal
        let log = MemoryLog()
        let server = try ProxyServer(configuration: configuration, sink: log.sink)
        server.start()
        defer { stop(server) }
        let port = try #require(server.bound(.transparent).first).port
        let client = try RawClient(port: port)
        client.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(client.readAll() == "", "closed, never answered: the client does not speak to a proxy")
        let record = try #require(log.wait(for: 1).first)
        #expect(record["reason"] == "transparent-loop" && record["action"] == "block")
        #expect(record["path"] == "transparent")
        #expect(record["message"]?.hasPrefix("transparent connection not relayed: it ") == true, "\(record)")
    }

    @Test func aQUICSocketSystemdPassedIsReadOnTheFirstLoop() throws {
        // As socket activation hands it over: bound, blocking, adopted by the server.
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        var configuration = ProxyConfiguration()
        configuration.log.format = .journal
        configuration.listeners.loopCount = 2
        configuration.devices = DeviceTable([try Device.parse("laptop=127.0.0.1").get()])
        let log = MemoryLog()
        let proxy = try loopbackListener()
        let server = try ProxyServer(configuration: configuration, sink: log.sink, inherited: [proxy.fd],
                                     inheritedGate: ([], [], [fd]))
        server.start()
        defer { stop(server) }
        let listener = try #require(server.boundQUICAddresses.first)
        let sender = try Socket.bindDatagram(on: SocketAddress(ip: .v4(0x7F00_0001), port: 0))
        defer { SystemCall.close(sender) }
        for datagram in CapturedQUICInitials.aioquicSplit.datagrams {
            _ = datagram.withUnsafeBytes { bytes in listener.withSockAddr { sendto(sender, bytes.baseAddress, bytes.count, 0, $0, $1) } }
        }
        let record = try #require(log.wait(for: 1).first)
        #expect(record["path"] == "quic" && record["reason"] == "quic-fallback" && record["action"] == "block")
        #expect(record["sni"] == CapturedQUICInitials.aioquicSplit.serverName && record["device"] == "laptop")
        #expect(record["host"] == CapturedQUICInitials.aioquicSplit.serverName && record["port"] == "443")
        #expect(record["original_dst"] == nil, "null, and the journal leaves nulls out")
        var metrics: LoopMetrics?
        let collected = DispatchSemaphore(value: 0)
        server.collectMetrics(on: .global()) { metrics = $0; collected.signal() }
        _ = collected.wait(timeout: .now() + 5)
        #expect(metrics?.quicDatagrams["client-hello"] == 1)
        #expect(metrics?.quicDatagrams["incomplete"] == CapturedQUICInitials.aioquicSplit.datagrams.count - 1)
        #expect(metrics?.transparent[.init(path: "quic", result: "block")] == 1)
    }
}
