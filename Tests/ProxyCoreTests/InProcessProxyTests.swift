import ATSPolicy
import EventLoops
import Foundation
import Testing
import LogTestSupport
import TestSupport
@testable import DecisionLog
@testable import HTTP1
@testable import ProxyCore

/// The proxy run in-process with its decision log in memory: connection behaviour asserted from the
/// records themselves, next to the same behaviours tested through the binary (CLITests).
@Suite(.serialized) struct InProcessProxyTests {
    /// `clock`: the time the server's deadlines are kept in, for a test that moves past a timeout.
    private func start(clock: MovableClock? = nil,
                       _ configure: (inout ProxyConfiguration) -> Void = { _ in }) throws -> (ProxyServer, MemoryLog, Int) {
        var configuration = ProxyConfiguration()
        configuration.listeners.proxy = [SocketAddress(ip: .v4(0x7F00_0001), port: 0)]
        configuration.log.format = .journal
        configuration.listeners.loopCount = 1
        configure(&configuration)
        let log = MemoryLog()
        let now: () -> Double = clock.map { clock in { clock.now() } } ?? monotonic
        let server = try ProxyServer(configuration: configuration, sink: log.sink, now: now)
        server.start()
        return (server, log, try #require(server.boundAddresses.first).port)
    }

    /// Moves `clock` on by `seconds` and runs what is due on every loop, until `client` has something
    /// to read (bounded). Moving again is harmless: it covers a deadline armed after the previous
    /// move (the test cannot see when the proxy has taken the connection).
    private func move(_ clock: MovableClock, by seconds: Double, on server: ProxyServer, until client: RawClient) {
        for _ in 0..<500 {
            clock.advance(by: seconds)
            for proxyLoop in server.loops { proxyLoop.loop.queue.sync { proxyLoop.loop.clock.tick() } }
            var ready = pollfd(fd: client.fd, events: Int16(POLLIN), revents: 0)
            if poll(&ready, 1, 20) > 0 { return }
        }
    }

    private func stop(_ server: ProxyServer) {
        let stopped = DispatchSemaphore(value: 0)
        server.stop(grace: 1, completion: { _ in stopped.signal() })
        _ = stopped.wait(timeout: .now() + 10)
    }

    @Test func aForwardedRequestIsRecordedAsAnAllowWithItsStatus() throws {
        let origin = try RawOrigin(always: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        let (server, log, port) = try start()
        defer { stop(server) }
        let client = try RawClient(port: port)
        client.send("GET http://127.0.0.1:\(origin.port)/x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        #expect(client.readAll().hasSuffix("\r\n\r\nok"))
        let record = try #require(log.wait(for: 1).first)
        #expect(record["action"] == "allow")
        #expect(record["status"] == "200")
        #expect(record["method"] == "GET")
        #expect(record["upstream_ip"] == "127.0.0.1")
    }

    @Test func aHeadTimeoutIsAnErrorRecord() throws {
        let clock = MovableClock()
        let (server, log, port) = try start(clock: clock) { $0.timeouts.head = 30 }
        defer { stop(server) }
        let client = try RawClient(port: port)
        client.send("GET http://127.0.0.1:1/ HTTP/1.1\r\n")
        move(clock, by: 31, on: server, until: client)
        #expect(client.readAll().hasPrefix("HTTP/1.1 408 Request Timeout\r\n"))
        let record = try #require(log.wait(for: 1).first)
        #expect(record["action"] == "error")
        #expect(record["reason"] == "request-timeout")
        #expect(record["status"] == "408")
    }

    /// A tunnel that moves nothing for the idle timeout is closed, and its record says so.
    @Test func anIdleTunnelIsClosedWhenTheClockPassesTheIdleTimeout() throws {
        let origin = try loopbackListener() // the kernel completes the connection; nothing reads or answers
        defer { close(origin.fd) }
        let clock = MovableClock()
        let (server, log, port) = try start(clock: clock) {
            $0.connectPorts = [origin.port]
            $0.timeouts.idle = 60
        }
        defer { stop(server) }
        let client = try RawClient(port: port)
        client.send("CONNECT 127.0.0.1:\(origin.port) HTTP/1.1\r\n\r\n")
        #expect(client.read(until: "\r\n\r\n").hasPrefix("HTTP/1.1 200 "))
        client.send("hello")
        move(clock, by: 61, on: server, until: client)
        #expect(client.readAll() == "", "the tunnel is closed, with nothing from the origin")
        let record = try #require(log.wait(for: 1).first)
        #expect(record["message"]?.contains("idle for 60 s") == true, "\(record)")
        #expect(record["bytes_up"] == "5")
    }

    /// An origin that never completes the connection: 504 upstream-timeout once the clock passes the
    /// connect timeout.
    @Test func aConnectThatNeverCompletesTimesOutWhenTheClockPassesTheConnectTimeout() throws {
        // Backlog 0 holds one completed connection; with that one queued, the kernel drops the next SYN.
        let origin = try loopbackListener(backlog: 0)
        defer { close(origin.fd) }
        let queued = try connectLoopback(port: origin.port)
        defer { close(queued) }
        let clock = MovableClock()
        let (server, log, port) = try start(clock: clock) { $0.timeouts.connect = 30 }
        defer { stop(server) }
        let client = try RawClient(port: port)
        client.send("GET http://127.0.0.1:\(origin.port)/ HTTP/1.1\r\nHost: x\r\n\r\n")
        move(clock, by: 31, on: server, until: client)
        #expect(client.readAll().hasPrefix("HTTP/1.1 504 "))
        let record = try #require(log.wait(for: 1).first)
        #expect(record["action"] == "error")
        #expect(record["reason"] == "upstream-timeout")
        #expect(record["message"]?.hasSuffix("timed out after 30 s") == true, "\(record)")
    }

    /// An origin that answers the ClientHello with a fatal alert: the client hears the alert, and the
    /// record names it (not a plain allow).
    @Test func anOriginsFatalAlertInAWatchedHandshakeIsRecorded() throws {
        let captured = CapturedHandshakes.protocolVersionAlert
        let origin = try RawOrigin(answeringFirstBytesWith: captured.serverToClient)
        let (server, log, port) = try start {
            $0.connectPorts = [origin.port]
            $0.resolve = ["api.example.com": [.v4(0x7F00_0001)]] // the captured ClientHello's server name
        }
        defer { stop(server) }
        let client = try RawClient(port: port)
        client.send("CONNECT api.example.com:\(origin.port) HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(client.read(until: "\r\n\r\n").hasPrefix("HTTP/1.1 200 "))
        client.send(captured.clientToServer)
        let alert = client.read(until: "\u{2}")
        #expect(alert.utf8.first == 0x15, "the client got the origin's alert record")
        client.close()
        let record = try #require(log.wait(for: 1).first)
        #expect(record["action"] == "error")
        #expect(record["reason"] == "server-alert")
        #expect(record["message"]?.contains("protocol_version") == true, "\(record)")
    }

    /// A TLS 1.0 server refused on the wire: the record and the /metrics handshake failure both name
    /// R14, the rule that decided, not the policy lookup's.
    @Test func aRefusedHandshakeNamesItsRuleInTheRecordAndTheMetrics() throws {
        let captured = CapturedHandshakes.tls10
        let origin = try RawOrigin(answeringFirstBytesWith: captured.serverToClient)
        let (server, log, port) = try start {
            $0.connectPorts = [origin.port]
            $0.resolve = ["api.example.com": [.v4(0x7F00_0001)]]
        }
        defer { stop(server) }
        let client = try RawClient(port: port)
        client.send("CONNECT api.example.com:\(origin.port) HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(client.read(until: "\r\n\r\n").hasPrefix("HTTP/1.1 200 "))
        client.send(captured.clientToServer)
        let alert = Array(client.readAll().utf8)
        #expect(alert.first == 0x15 && alert.last == 70, "a protocol_version alert: \(alert)")
        let record = try #require(log.wait(for: 1).first)
        #expect(record["reason"] == "tls-version")
        #expect(record["rule"] == "R14")
        let collected = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var metrics = LoopMetrics()
        server.collectMetrics(on: DispatchQueue(label: "test.metrics")) { sum in
            metrics = sum
            collected.signal()
        }
        #expect(collected.wait(timeout: .now() + 10) == .success)
        // The counter behind /metrics' handshake failures (AdminTests checks how it is rendered).
        #expect(metrics.handshakeFailures == [LoopMetrics.HandshakeKey(reason: "tls-version", rule: "R14"): 1], "\(metrics)")
    }
}
