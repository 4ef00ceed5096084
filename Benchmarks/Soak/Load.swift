import Foundation
import Glibc

/// The soak's ordinary traffic, as device-lab clients send it: forwarded requests on kept-alive
/// connections (three users, so three apps whose policies decide differently; now and then a
/// chunked upload with a trailer field, or a first request without credentials that gets its 407
/// and is sent again on the same connection), plain CONNECT tunnels, and TLS 1.2 and 1.3 tunnels
/// through curl to names whose certificate verdicts are sometimes cached, sometimes fresh.
struct Load: Sendable {
    let world: World
    let daemon: Daemon
    let ledger: Ledger

    static func credentials(_ user: String) -> String {
        "Basic " + Data("\(user):\(World.password)".utf8).base64EncodedString()
    }

    /// What a user's request to the cleartext origin may get: appA (full ATS) blocks it, appB
    /// (arbitrary loads) allows it, appC allows it or not depending on the policy of the moment.
    static func acceptable(_ user: String) -> Set<Int> {
        switch user {
        case "alice": [403]
        case "bob": [200]
        default: [200, 403]
        }
    }

    /// One kept-alive connection: 1 to 4 requests, each read to its end before the next.
    func forwardSession(user: String, random: inout SystemRandomNumberGenerator) {
        guard let wire = try? Wire(port: daemon.port) else { return }
        defer { wire.close() }
        let target = "www.soak.test:\(world.plainPort)"
        let challengeFirst = Int.random(in: 0..<10, using: &random) == 0
        for number in 0..<Int.random(in: 1...4, using: &random) {
            let challenge = challengeFirst && number == 0
            let chunked = !challenge && user == "bob" && Int.random(in: 0..<4, using: &random) == 0
            let kind: Ledger.Kind = challenge ? .challenge : (chunked ? .forwardChunked : .forward)
            let id = ledger.open(kind)
            var head = "\(chunked ? "POST" : "GET") http://\(target)/r/\(id) HTTP/1.1\r\nHost: \(target)\r\n"
                + "User-Agent: \(Ledger.userAgent(id))\r\n"
            if !challenge { head += "Proxy-Authorization: \(Load.credentials(user))\r\n" }
            if chunked { head += "Transfer-Encoding: chunked\r\n" }
            head += "\r\n"
            if chunked { head += "5\r\nhello\r\n7;part=2\r\n, world\r\n0\r\nX-Soak-Checksum: \(id)\r\n\r\n" }
            let started = Date()
            guard wire.send(head) else {
                ledger.markUncertain(id)
                ledger.close(id, answered: false, expected: false, detail: "send failed")
                return
            }
            let response = wire.readResponse()
            let latency = Date().timeIntervalSince(started)
            let wanted: Set<Int> = challenge ? [407] : Load.acceptable(user)
            let ok = response.map { wanted.contains($0.status) && $0.complete } ?? false
            ledger.close(id, answered: response != nil, status: response?.status, expected: ok, latency: latency,
                         detail: response == nil ? "no response" : nil)
            guard let response, response.complete, !response.closes else { return }
        }
    }

    /// CONNECT to the cleartext origin (bob: appB lets cleartext through), a GET inside, read to the close.
    func tunnel() {
        let id = ledger.open(.tunnel)
        let started = Date()
        guard let wire = daemon.connect(for: id, ledger) else { return }
        defer { wire.close() }
        let target = "www.soak.test:\(world.plainPort)"
        wire.send("CONNECT \(target) HTTP/1.1\r\nHost: \(target)\r\nUser-Agent: \(Ledger.userAgent(id))\r\n"
                  + "Proxy-Authorization: \(Load.credentials("bob"))\r\n\r\n")
        guard let answer = wire.readResponse(headOnly: true) else {
            return ledger.close(id, answered: false, expected: false, detail: "no answer to CONNECT")
        }
        guard answer.status == 200 else {
            return ledger.close(id, answered: true, status: answer.status, expected: false, detail: "CONNECT answered \(answer.status)")
        }
        wire.send("GET /inside HTTP/1.1\r\nHost: www.soak.test\r\nConnection: close\r\n\r\n")
        let inner = wire.readResponse()
        let ok = inner.map { $0.status == 200 && $0.complete } ?? false
        ledger.close(id, answered: true, status: 200, expected: ok, latency: Date().timeIntervalSince(started),
                     detail: ok ? nil : "inside the tunnel: \(inner.map { "\($0.status)" } ?? "no response")")
    }

    /// A TLS tunnel through curl (alice: appA, full ATS, so the handshake is judged): mostly a few
    /// names whose verdicts stay cached, otherwise the next of many names, whose verdict has
    /// expired by the time it comes round again.
    func tls(version: String, sequence: Int, random: inout SystemRandomNumberGenerator) {
        let kind: Ledger.Kind = version == "1.2" ? .tls12 : .tls13
        let port = version == "1.2" ? world.tls12Port : world.tls13Port
        let cached = Int.random(in: 0..<10, using: &random) < 7
        let name = cached ? Int.random(in: 0..<World.cachedTLSNames, using: &random)
            : World.cachedTLSNames + sequence % (World.tlsNames - World.cachedTLSNames)
        let id = ledger.open(kind)
        let started = Date()
        let result = Child.run("curl", [
            "--silent", "--show-error", "--output", "/dev/null", "--write-out", "%{http_code}", "--max-time", "15",
            "--proxy", "http://127.0.0.1:\(daemon.port)", "--proxy-user", "alice:\(World.password)",
            "--proxy-header", "User-Agent: \(Ledger.userAgent(id))", "--cacert", world.caFile,
            "--tlsv\(version)", "--tls-max", version, "https://tls-\(name).soak.test:\(port)/",
        ], timeout: 20)
        let status = Int(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        // curl says 000 when it got no HTTP answer; the CONNECT was answered when the tunnel's
        // answer came (status 200 inside) or curl names the proxy's refusal.
        let answered = status != 0 || result.stderr.contains("CONNECT tunnel failed")
        ledger.close(id, answered: answered, status: status == 0 ? nil : status, expected: status == 200,
                     latency: Date().timeIntervalSince(started),
                     detail: status == 200 ? nil : "curl: \(result.stderr.trimmingCharacters(in: .whitespacesAndNewlines).prefix(160))")
    }
}
