import Foundation
import Glibc

/// The faults woven into the load, one at a time in turn. Each says how many decision records it
/// must leave (a head never finished leaves none; a head timeout leaves one without a User-Agent)
/// and what its client must see. A fault that needs what this build lacks is skipped and says so.
struct Faults: Sendable {
    let world: World
    let daemon: Daemon
    let ledger: Ledger

    /// The faults run in turn by the fault worker (the descriptor burst has its own schedule).
    var rotation: [Ledger.Kind] {
        [.resetMidHead, .resetMidTunnel, .slowloris, .halfCloseTunnel, .halfCloseForward, .originReset,
         .originStall, .originTruncate, .tunnelOriginReset] + (daemon.hasDNSServer ? [.lateResolver] : [])
    }

    /// Why a fault of the issue's list does not run with this build, if one does not.
    var skipped: [String] {
        daemon.hasDNSServer ? [] : ["late resolver: this atsgate has no --dns-server (the asynchronous resolver); "
            + "the slow DNS server (SlowResolver) and the fault are ready for it"]
    }

    func run(_ kind: Ledger.Kind, sequence: Int) {
        switch kind {
        case .resetMidHead: resetMidHead()
        case .resetMidTunnel: resetMidTunnel()
        case .slowloris: slowloris()
        case .halfCloseTunnel: halfCloseTunnel()
        case .halfCloseForward: halfCloseForward()
        case .originReset: forwardToFaultOrigin(.originReset, path: "/reset")
        case .originStall: forwardToFaultOrigin(.originStall, path: "/stall")
        case .originTruncate: forwardToFaultOrigin(.originTruncate, path: "/truncate")
        case .tunnelOriginReset: tunnelOriginReset()
        case .lateResolver: lateResolver(sequence: sequence)
        default: break
        }
    }

    private var bob: String { "Proxy-Authorization: \(Load.credentials("bob"))\r\n" }

    /// Half a head, then a reset: no record (the head never completed), no answer.
    private func resetMidHead() {
        let id = ledger.open(.resetMidHead, expectedRecords: 0, identified: false)
        guard let wire = try? Wire(port: daemon.port) else { return ledger.close(id, answered: false, expected: false) }
        wire.send("GET http://www.soak.test:\(world.plainPort)/half HTTP/1.1\r\nHost: www.soak")
        usleep(50_000)
        wire.reset()
        ledger.close(id, answered: false, expected: true)
    }

    /// A tunnel opened, some bytes up, then the client resets it: one record when the tunnel ends.
    private func resetMidTunnel() {
        guard let (wire, id) = openTunnel(.resetMidTunnel, port: world.faults.eofPort) else { return }
        wire.send(String(repeating: "x", count: 3000))
        usleep(50_000)
        wire.reset()
        ledger.close(id, answered: true, status: 200, expected: true)
    }

    /// A head dribbled a byte at a time, never finished: the head timeout (2 s) answers 408 and
    /// logs one record, which has no User-Agent (the head was never read).
    private func slowloris() {
        let id = ledger.open(.slowloris, identified: false)
        guard let wire = daemon.connect(for: id, ledger) else { return }
        defer { wire.close() }
        let started = Date()
        wire.send("GET http://www.soak.test:\(world.plainPort)/slow HTTP/1.1\r\n")
        var buffer: [UInt8] = []
        for byte in "X-Slowloris: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa".utf8 {
            if wire.read(into: &buffer, timeout: 0.25, until: { HTTPResponse.headEnd($0) != nil }) != .timedOut { break }
            guard wire.send([byte]) else { break }
        }
        _ = wire.read(into: &buffer, timeout: 10) { HTTPResponse.headEnd($0) != nil }
        let status = HTTPResponse.headEnd(buffer).flatMap { HTTPResponse(head: Array(buffer[..<$0]))?.status }
        ledger.close(id, answered: status != nil, status: status, expected: status == 408,
                     latency: Date().timeIntervalSince(started))
    }

    /// Through a tunnel to the EOF echo: bytes up, the client's half-close, and the origin's answer
    /// (which it sends only once the half-close reached it) must come back before the end.
    private func halfCloseTunnel() {
        guard let (wire, id) = openTunnel(.halfCloseTunnel, port: world.faults.eofPort) else { return }
        defer { wire.close() }
        let sent = 5000
        wire.send(String(repeating: "y", count: sent))
        wire.shutdownWrite()
        var buffer: [UInt8] = []
        let end = wire.read(into: &buffer, timeout: 10) { _ in false }
        let text = String(decoding: buffer, as: UTF8.self)
        ledger.close(id, answered: true, status: 200, expected: text == "got \(sent) bytes\n" && end == .closed,
                     detail: "the echo said '\(text.prefix(40))', then \(end)")
    }

    /// A request, then the client's half-close at once: the daemon still answers it.
    private func halfCloseForward() {
        let id = ledger.open(.halfCloseForward)
        guard let wire = daemon.connect(for: id, ledger) else { return }
        defer { wire.close() }
        let target = "www.soak.test:\(world.plainPort)"
        wire.send("GET http://\(target)/half-closed HTTP/1.1\r\nHost: \(target)\r\nUser-Agent: \(Ledger.userAgent(id))\r\n\(bob)\r\n")
        wire.shutdownWrite()
        let response = wire.readResponse()
        ledger.close(id, answered: response != nil, status: response?.status,
                     expected: response?.status == 200 && response?.complete == true)
    }

    /// An origin that resets (502), stalls (the idle timeout ends it: no answer, one record) or
    /// truncates (the head and part of the body, then a reset).
    private func forwardToFaultOrigin(_ kind: Ledger.Kind, path: String) {
        let id = ledger.open(kind)
        guard let wire = daemon.connect(for: id, ledger) else { return }
        defer { wire.close() }
        let target = "faults.soak.test:\(world.faults.httpPort)"
        wire.send("GET http://\(target)\(path) HTTP/1.1\r\nHost: \(target)\r\nUser-Agent: \(Ledger.userAgent(id))\r\n\(bob)\r\n")
        let response = wire.readResponse(timeout: 15)
        let expected: Bool
        switch kind {
        case .originReset: expected = response?.status == 502
        case .originStall: expected = response == nil || response?.status == 504
        default: expected = response?.status == 200 && response?.complete == false
        }
        ledger.close(id, answered: response != nil, status: response?.status, expected: expected,
                     detail: response.map { "\($0.status), body \($0.body.count) bytes, \($0.end)" } ?? "no answer")
    }

    /// A tunnel whose origin resets under it: the client sees the tunnel end.
    private func tunnelOriginReset() {
        guard let (wire, id) = openTunnel(.tunnelOriginReset, port: world.faults.resetPort) else { return }
        defer { wire.close() }
        wire.send("hello")
        var buffer: [UInt8] = []
        let end = wire.read(into: &buffer, timeout: 10) { _ in false }
        ledger.close(id, answered: true, status: 200, expected: end == .closed || end == .reset, detail: "tunnel \(end)")
    }

    /// A name only the slow resolver knows: answered (200) after its one-second wait.
    private func lateResolver(sequence: Int) {
        let id = ledger.open(.lateResolver)
        guard let wire = daemon.connect(for: id, ledger) else { return }
        defer { wire.close() }
        let target = "late-\(sequence).soak.test:\(world.plainPort)"
        wire.send("GET http://\(target)/ HTTP/1.1\r\nHost: \(target)\r\nUser-Agent: \(Ledger.userAgent(id))\r\n\(bob)\r\n")
        let response = wire.readResponse(timeout: 15)
        ledger.close(id, answered: response != nil, status: response?.status, expected: response?.status == 200)
    }

    /// CONNECT faults.soak.test:PORT as bob; the open tunnel and its entry, or nil (entry closed).
    private func openTunnel(_ kind: Ledger.Kind, port: Int) -> (Wire, Int)? {
        let id = ledger.open(kind)
        guard let wire = daemon.connect(for: id, ledger) else { return nil }
        let target = "faults.soak.test:\(port)"
        wire.send("CONNECT \(target) HTTP/1.1\r\nHost: \(target)\r\nUser-Agent: \(Ledger.userAgent(id))\r\n\(bob)\r\n")
        guard let answer = wire.readResponse(headOnly: true), answer.status == 200 else {
            ledger.close(id, answered: false, expected: false, detail: "CONNECT not answered 200")
            return nil
        }
        return (wire, id)
    }

    /// More connections at once than the daemon has descriptors: each that connects sends a CONNECT
    /// and holds it for `hold` seconds, then closes (a FIN, so that one still waiting in the accept
    /// queue is read and logged once the daemon gets to it). The daemon must come back to serving,
    /// with every CONNECT that was sent logged.
    func burst(count: Int, hold: Double) -> (connected: Int, answered: Int) {
        var open: [(Wire, Int)] = []
        let target = "www.soak.test:\(world.plainPort)"
        for _ in 0..<count {
            guard let wire = try? Wire(port: daemon.port, timeout: 0.5) else { continue }
            let id = ledger.open(.burst)
            if !wire.send("CONNECT \(target) HTTP/1.1\r\nHost: \(target)\r\nUser-Agent: \(Ledger.userAgent(id))\r\n\(bob)\r\n",
                          timeout: 1) {
                ledger.markUncertain(id)
            }
            open.append((wire, id))
        }
        usleep(useconds_t(hold * 1_000_000))
        var answered = 0
        for (wire, id) in open {
            var buffer: [UInt8] = []
            _ = wire.read(into: &buffer, timeout: 0.01) { HTTPResponse.headEnd($0) != nil }
            let status = HTTPResponse.headEnd(buffer).flatMap { HTTPResponse(head: Array(buffer[..<$0]))?.status }
            if status != nil { answered += 1 }
            // Any outcome is as expected under exhaustion; what counts is the record and the recovery.
            ledger.close(id, answered: status != nil, status: status, expected: true)
            wire.close()
        }
        return (open.count, answered)
    }
}
