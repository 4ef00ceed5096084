import ATSPolicy
import DecisionLog
import Foundation
import Glibc
import POSIX
import ProxyAccess
import ProxyAnswers
@testable import QUICGate
import Testing
import TestSupport
import TLSWire

/// The QUIC listener on a real UDP socket on loopback: real clients' captured Initials (aioquic,
/// Chromium), one ClientHello split over datagrams, and what is no valid Initial, each counted by kind;
/// and an attempt judged as the app's TCP would be.
@Suite struct QUICGateTests {
    /// A gate on 127.0.0.1 (an ephemeral port) and a client socket to send from.
    final class Bench {
        let gate: QUICGate
        let client: Int32
        let address: SocketAddress

        init() throws {
            gate = QUICGate(listeners: try QUICGate.bind([SocketAddress(parsing: "127.0.0.1:0")!]))
            address = gate.listeners[0].address
            client = try Socket.bindDatagram(on: SocketAddress(parsing: "127.0.0.1:0")!)
        }

        deinit {
            SystemCall.close(gate.listeners[0].fd)
            SystemCall.close(client)
        }

        func send(_ datagram: [UInt8]) {
            _ = datagram.withUnsafeBytes { bytes in
                address.withSockAddr { sendto(client, bytes.baseAddress, bytes.count, 0, $0, $1) }
            }
        }

        /// Waits until the gate's socket is readable, then drains it; the attempts read.
        func drain(wait: Double = 2) -> [QUICAttempt] {
            _ = Poll.wait(fd: gate.listeners[0].fd, events: Int16(POLLIN), timeout: wait)
            var attempts: [QUICAttempt] = []
            gate.drain(gate.listeners[0], now: .now) { attempts.append($0) }
            return attempts
        }
    }

    @Test(arguments: [CapturedQUICInitials.aioquicVersion1, CapturedQUICInitials.aioquicVersion2, CapturedQUICInitials.chromium])
    func aRealClientsInitialIsReadForItsServerName(_ capture: CapturedQUICInitial) throws {
        let bench = try Bench()
        for datagram in capture.datagrams { bench.send(datagram) }
        var attempts: [QUICAttempt] = []
        for _ in 0..<capture.datagrams.count where attempts.isEmpty { attempts += bench.drain() }
        let attempt = try #require(attempts.first)
        #expect(attempts.count == 1)
        #expect(attempt.hello.serverName == capture.serverName)
        #expect(attempt.sender.ip == bench.address.ip && attempt.listener == bench.address)
        #expect(attempt.original == nil, "no TPROXY: the datagram was sent to the socket's own address")
        // Sent again (a retransmission): counted, not read again.
        bench.send(capture.datagrams[0])
        #expect(bench.drain().isEmpty)
        #expect(bench.gate.datagrams["client-hello"] == 1 && bench.gate.datagrams["retransmission", default: 0] >= 1)
        #expect(bench.gate.remembered == 1)
    }

    @Test func aClientHelloSplitOverDatagramsIsPutTogether() throws {
        let bench = try Bench()
        let capture = CapturedQUICInitials.aioquicSplit
        var attempts: [QUICAttempt] = []
        for datagram in capture.datagrams {
            bench.send(datagram)
            attempts += bench.drain()
        }
        #expect(attempts.map(\.hello.serverName) == [capture.serverName])
        #expect(bench.gate.datagrams["incomplete", default: 0] == capture.datagrams.count - 1)
    }

    @Test func whatIsNoValidInitialIsCountedByKindAndDropped() throws {
        let bench = try Bench()
        let initial = CapturedQUICInitials.aioquicVersion1.datagrams[0]
        var wrongVersion = initial
        wrongVersion[1...4] = [0x0A, 0x0A, 0x0A, 0x0A]
        var damaged = initial
        damaged[200] ^= 0xFF
        for datagram in [[0x40, 1, 2, 3], Array(initial.prefix(30)), wrongVersion, damaged, [UInt8](repeating: 0xC0, count: 2500)] {
            bench.send(datagram)
        }
        // Loopback delivers them at once: one wait, then whatever is left.
        var attempts = bench.drain()
        for _ in 0..<4 { attempts += bench.drain(wait: 0.05) }
        #expect(attempts.isEmpty)
        #expect(bench.gate.datagrams == ["not-long-header": 1, "too-short": 1, "unsupported-version": 1, "decryption-failed": 1,
                                         "truncated": 1])
        // Still reading: a valid Initial after all that.
        bench.send(CapturedQUICInitials.aioquicVersion2.datagrams[0])
        #expect(bench.drain().count == 1)
    }

    @Test func anAttemptIsJudgedAsTheAppsTCPWouldBeAndAlwaysDropped() throws {
        let bench = try Bench()
        for datagram in CapturedQUICInitials.aioquicVersion1.datagrams { bench.send(datagram) }
        let attempt = try #require(bench.drain().first)
        let policy = try PolicyLoader.parse(data: Data(#"{"NSExceptionDomains": {"example.com": {"NSIncludesSubdomains": true, "NSExceptionMinimumTLSVersion": "TLSv1.3"}}}"#.utf8),
                                            origin: "lab.json")
        let app = AppPolicy(id: "com.example.lab", engine: DecisionEngine(policy: Policy(policy)), label: "lab.json")
        let router = AppRouter(apps: [app], routes: [], unrouted: .app(0))
        let devices = DeviceTable([try Device.parse("iphone=127.0.0.1").get()])
        let (record, verdict) = attempt.judged(router: router, devices: devices, context: nil, time: 0)
        #expect(record.path == .quic && record.originalDestination == nil)
        #expect(record.sni == "api.example.com" && record.app == "com.example.lab" && record.device == "iphone")
        #expect(record.decision?.destination == Destination(host: .name("api.example.com"), port: 443, scheme: .https))
        #expect(record.decision?.requirements.minimumTLSVersion == .tls13, "the app's exception for the host")
        guard case .block(.quicFallback, let message?, nil) = verdict else {
            Issue.record("\(verdict)")
            return
        }
        #expect(message == "QUIC version 1 attempt dropped so that the client falls back to TCP; TCP to api.example.com:443 "
                + "is judged by its TLS handshake")

        // No policy for it (--unrouted block): still dropped, and said so.
        let unrouted = AppRouter(apps: [app], routes: [], unrouted: .block)
        let (bare, dropped) = attempt.judged(router: unrouted, devices: DeviceTable(), context: nil, time: 0)
        #expect(bare.app == nil && bare.decision == nil)
        guard case .block(.quicFallback, let why?, nil) = dropped else {
            Issue.record("\(dropped)")
            return
        }
        #expect(why.hasSuffix("no policy for it: no --route matched and --unrouted is block"))

        // The device's own (here its server name is an operator's --system-dest): app system, still dropped.
        var table = SystemDestinations.none
        table.add(try SystemDestinations.parseOperatorEntry(".example.com:443"))
        let (own, ownVerdict) = attempt.judged(router: router, devices: devices, context: nil, time: 0,
                                               system: SystemTrafficRules(mode: .record, destinations: table))
        #expect(own.app == "system" && own.policy == "system" && own.sni == "api.example.com")
        guard case .block(.quicFallback, let ownMessage?, nil) = ownVerdict else {
            Issue.record("\(ownVerdict)")
            return
        }
        #expect(ownMessage.contains("attempt dropped so that the client falls back to TCP; the device's own traffic"), "\(ownMessage)")
        // --system-traffic judge: the app's, as before.
        let (judged, _) = attempt.judged(router: router, devices: devices, context: nil, time: 0,
                                         system: SystemTrafficRules(mode: .judge, destinations: table))
        #expect(judged.app == "com.example.lab")
    }

    @Test func aDatagramsDestinationCountsOnlyWhenItIsNotTheSocketsOwn() {
        let listener = SocketAddress(parsing: "198.18.1.1:3443")!
        #expect(QUICGate.original(SocketAddress(parsing: "198.18.1.1:3443")!, listener: listener) == nil, "NAT rewrote it")
        #expect(QUICGate.original(SocketAddress(parsing: "198.18.2.2:443")!, listener: listener)
                == SocketAddress(parsing: "198.18.2.2:443"), "TPROXY kept it")
        #expect(QUICGate.original(nil, listener: listener) == nil)
    }
}
