import ATSPolicy
import Foundation
import Testing
import LogTestSupport
import TestSupport
@testable import DecisionLog
@testable import ProxyCore

/// The proxy in-process with a journal that stops reading (MemoryLog.stall): the journal sink sits
/// behind the same bounded buffer as the others, so requests are answered whatever the journal does.
@Suite(.serialized) struct InProcessLogPressureTests {
    private func start(_ log: MemoryLog, overflow: LogOverflow, connectPort: Int? = nil) throws -> (ProxyServer, Int) {
        var configuration = ProxyConfiguration()
        configuration.listeners.proxy = [SocketAddress(ip: .v4(0x7F00_0001), port: 0)]
        configuration.log.format = .journal
        configuration.listeners.loopCount = 1
        if let connectPort { configuration.connectPorts = [connectPort] }
        let server = try ProxyServer(configuration: configuration, sink: log.sink(overflow: overflow, capacity: 8192))
        server.start()
        return (server, try #require(server.boundAddresses.first).port)
    }

    private func stop(_ server: ProxyServer) {
        let stopped = DispatchSemaphore(value: 0)
        server.stop(grace: 1, completion: { _ in stopped.signal() })
        _ = stopped.wait(timeout: .now() + 30)
    }

    /// A blocked cleartext request: the proxy answers it itself, 403.
    private func request(_ number: Int, port: Int) throws -> String {
        let client = try RawClient(port: port, timeout: 30)
        client.send("GET http://r\(number).example/ HTTP/1.1\r\nHost: r\(number).example\r\nConnection: close\r\n\r\n")
        return String(client.readAll().prefix(12))
    }

    @Test func dropAnswersEveryRequestWhileTheJournalStallsAndCountsWhatItLost() throws {
        let log = MemoryLog()
        let (server, port) = try start(log, overflow: .drop)
        log.stall()
        let answers = try (0..<150).map { try request($0, port: port) }
        #expect(answers.allSatisfy { $0 == "HTTP/1.1 403" }, "\(Set(answers))")
        #expect(server.health.healthy)
        let deadline = Date().addingTimeInterval(30)
        while server.logState.droppedTotal == 0, Date() < deadline { usleep(20_000) }
        #expect(server.health.detail.contains("records dropped"), "\(server.health.detail)")
        #expect(server.readiness.ready, "drop never holds the proxy back")

        log.resume()
        stop(server)
        let decisions = log.records.filter { $0["reason"] != "log-overflow" }
        let dropped = log.records.filter { $0["reason"] == "log-overflow" }.compactMap { $0["dropped"].flatMap(Int.init) }
        #expect(decisions.count + dropped.reduce(0, +) == 150, "records plus dropped equal decisions")
        #expect(dropped.reduce(0, +) == server.logState.droppedTotal)
        #expect(log.records.last?["reason"] == "log-overflow", "the last record says what was lost")
    }

    @Test func pauseHoldsNewRequestsBackKeepsTunnelsRelayingAndLosesNothing() throws {
        let origin = try RawOrigin(always: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        let log = MemoryLog()
        let (server, port) = try start(log, overflow: .pause, connectPort: origin.port)
        let tunnel = try RawClient(port: port, timeout: 30)
        tunnel.send("CONNECT 127.0.0.1:\(origin.port) HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(tunnel.read(until: "\r\n\r\n").hasPrefix("HTTP/1.1 200 "))
        tunnel.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(tunnel.read(until: "ok").hasSuffix("ok"))
        // A keep-alive client, answered once before the log fills.
        let keptAlive = try RawClient(port: port, timeout: 30)
        keptAlive.send("GET http://k0.example/ HTTP/1.1\r\nHost: k0.example\r\n\r\n")
        #expect(readResponse(keptAlive).hasPrefix("HTTP/1.1 403"))

        log.stall()
        // Requests from another thread: they are answered until the log fills, then wait.
        let answers = Answers()
        let count = 120
        Thread.detachNewThread {
            for number in 0..<count { answers.add((try? request(number, port: port)) ?? "failed") }
        }
        var deadline = Date().addingTimeInterval(30)
        while server.readiness.ready, Date() < deadline { usleep(20_000) }
        let readiness = server.readiness
        #expect(!readiness.ready && readiness.detail.contains("--log-overflow pause"), "\(readiness.detail)")
        #expect(server.health.healthy, "paused is not broken: /healthz stays 200 and says why")
        #expect(answers.count < count, "requests wait while the log is full")
        tunnel.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(tunnel.read(until: "ok").hasSuffix("ok"), "an open tunnel keeps relaying")
        // Its next request is not read while the log is full (it is answered after).
        keptAlive.send("GET http://k1.example/ HTTP/1.1\r\nHost: k1.example\r\n\r\n")
        let secondAnswer = Answers()
        nonisolated(unsafe) let reader = keptAlive // read on that thread only, from here on
        Thread.detachNewThread { secondAnswer.add(String(readResponse(reader).prefix(12))) }
        usleep(200_000) // not a timing assertion: a wrong design would answer within this, and fail below
        #expect(secondAnswer.count == 0, "a kept-alive client's next request waits for the log")

        log.resume()
        deadline = Date().addingTimeInterval(60)
        while answers.count < count, Date() < deadline { usleep(20_000) }
        #expect(answers.values == Array(repeating: "HTTP/1.1 403", count: count), "served again once the log drained")
        while secondAnswer.count == 0, Date() < deadline { usleep(20_000) }
        #expect(secondAnswer.values == ["HTTP/1.1 403"])
        tunnel.close()
        stop(server)
        let hosts = log.records.compactMap { $0["host"] }
        for number in 0..<count { #expect(hosts.contains("r\(number).example"), "record \(number) kept") }
        #expect(hosts.contains("k1.example"))
        #expect(!log.records.contains { $0["reason"] == "log-overflow" })
        #expect(server.logState.droppedTotal == 0)
    }
}

/// One response with a Content-Length body, read whole.
private func readResponse(_ client: RawClient) -> String {
    var text = client.read(until: "\r\n\r\n")
    guard let end = text.range(of: "\r\n\r\n"),
          let length = text.firstMatch(of: /Content-Length: (\d+)/).flatMap({ Int($0.1) }) else { return text }
    let head = text[..<end.upperBound].utf8.count
    while text.utf8.count < head + length {
        let more = client.read(until: "\n")
        if more.isEmpty { break }
        text += more
    }
    return text
}

/// Answers a background client got, in order.
private final class Answers: @unchecked Sendable {
    private let lock = NSLock()
    private var kept: [String] = []
    func add(_ answer: String) { lock.withLock { kept.append(answer) } }
    var values: [String] { lock.withLock { kept } }
    var count: Int { values.count }
}
