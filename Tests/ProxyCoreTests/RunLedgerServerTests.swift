import DecisionLog
import Foundation
import Synchronization
import Testing
import LogTestSupport
import TestSupport
@testable import ProxyCore

/// The server's side of the run ledger, in-process with the log in memory: the entry points the
/// upgrade uses (a run-start naming the predecessor, a stop naming the successor), and that the
/// ledger's records reach neither the live page's observer nor the decision metrics: the log writes
/// them itself, no connection does.
@Suite(.serialized) struct RunLedgerServerTests {
    /// Counts what the operator's side hears of, as the live feed would.
    final class CountingObserver: DecisionObserver, @unchecked Sendable {
        private let lock = NSLock()
        private var seen = 0
        var count: Int { lock.withLock { seen } }
        func observe(_ record: DecisionRecord, policy: String) { lock.withLock { seen += 1 } }
    }

    @Test func anUpgradedRunNamesBothProcessesAndItsRecordsAreNoDecisions() throws {
        let origin = try RawOrigin(always: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        let idle = try loopbackListener() // a tunnel's origin that never answers: the tunnel stays open
        defer { close(idle.fd) }
        var configuration = ProxyConfiguration()
        configuration.listeners.proxy = [SocketAddress(ip: .v4(0x7F00_0001), port: 0)]
        configuration.log.format = .journal
        configuration.listeners.loopCount = 1
        configuration.connectPorts = [idle.port]
        let log = MemoryLog()
        let observer = CountingObserver()
        let server = try ProxyServer(configuration: configuration, sink: log.sink, observer: observer)
        let predecessor = RunPeer(run: "00000000000000aa", pid: 4242, version: "0.9.0")
        server.startRun(predecessor: predecessor)
        server.start()
        let port = try #require(server.boundAddresses.first).port

        let client = try RawClient(port: port)
        client.send("GET http://127.0.0.1:\(origin.port)/x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        #expect(client.readAll().hasSuffix("ok"))
        let tunnel = try RawClient(port: port)
        tunnel.send("CONNECT 127.0.0.1:\(idle.port) HTTP/1.1\r\n\r\n")
        #expect(tunnel.read(until: "\r\n\r\n").hasPrefix("HTTP/1.1 200 "))

        let successor = RunPeer(run: "00000000000000bb", pid: 4343, version: "1.1.0")
        let stopped = DispatchSemaphore(value: 0)
        server.stop(grace: 0, handOver: { RunHandOver(successor: successor, handedOver: 6) }) { _ in stopped.signal() }
        #expect(stopped.wait(timeout: .now() + 30) == .success)

        let records = log.records
        let start = try #require(records.first)
        #expect(start["ledger"] == "run-start" && start["run"] == LogRun.id && start["generation"] == "1")
        #expect(start["predecessor_run"] == "00000000000000aa" && start["predecessor_pid"] == "4242")
        #expect(start["checkpoint_s"] == "10", "the default interval")
        let stop = try #require(records.last)
        #expect(stop["ledger"] == "run-stop" && stop["stop"] == "upgrade")
        #expect(stop["successor_run"] == "00000000000000bb" && stop["successor_version"] == "1.1.0" && stop["handed_over"] == "6")
        #expect(stop["open"] == "1", "the tunnel, cut at the end of the grace period")
        let decisions = records.filter { $0["ledger"] == nil }
        #expect(decisions.count == 2 && stop["records"] == "2", "the forward and the cut tunnel: \(records)")
        #expect(decisions.allSatisfy { $0["run"] == LogRun.id })

        #expect(observer.count == 2, "the live page hears of decisions only")
        let metrics = Mutex<LoopMetrics?>(nil)
        let collected = DispatchSemaphore(value: 0)
        server.collectMetrics(on: .global()) { sum in
            metrics.withLock { $0 = sum }
            collected.signal()
        }
        _ = collected.wait(timeout: .now() + 10)
        #expect(metrics.withLock { $0?.decisions.values.reduce(0, +) } == 2, "nor do the decision counters count them")
    }
}
