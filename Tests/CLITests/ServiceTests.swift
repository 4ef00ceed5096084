import Foundation
import Glibc
import Testing
import TestSupport

/// The daemon as a service: reload on SIGHUP, graceful stop on SIGTERM, and the admin listener.
@Suite(.serialized) struct ServiceTests {
    static let pins = ["--resolve", "api.example.com=127.0.0.1"]
    static let strict = "{}"
    static let allowsAPI = #"{"NSExceptionDomains": {"api.example.com": {"NSExceptionAllowsInsecureHTTPLoads": true}}}"#

    @Test func reloadAppliesANewPolicyToNewRequests() throws {
        let origin = try Origin()
        let directory = try TemporaryDirectory()
        let policy = try directory.write("policy.json", Self.strict)
        let daemon = try Daemon(Self.pins + ["--policy", policy])
        let url = "http://api.example.com:\(origin.httpPort)/small"
        #expect(try Subprocess.curl(["-x", daemon.proxy, "-o", "/dev/null", "-w", "%{http_code}", url]).stdout == "403")

        try directory.write("policy.json", Self.allowsAPI)
        try daemon.reload()
        #expect(try Subprocess.curl(["-x", daemon.proxy, "-o", "/dev/null", "-w", "%{http_code}", url]).stdout == "200")
        // Each loop writes its own batches: records of two loops are in time order only once sorted.
        let (status, logged) = try daemon.stop(expected: 2)
        let records = logged.sorted { ($0["time"] as? String ?? "") < ($1["time"] as? String ?? "") }
        #expect(status == 0)
        #expect(records.map { $0["action"] as? String } == ["block", "allow"])
    }

    @Test func aBrokenPolicyOnReloadKeepsTheRunningOne() throws {
        let origin = try Origin()
        let directory = try TemporaryDirectory()
        let policy = try directory.write("policy.json", Self.allowsAPI)
        let daemon = try Daemon(Self.pins + ["--policy", policy, "--admin", "127.0.0.1:0"])
        try directory.write("policy.json", #"{"NSExceptionDomains": "#)
        try daemon.reload(expecting: "reload failed")
        let line = daemon.process.stderr.split(separator: "\n").first { $0.contains("reload failed") } ?? ""
        #expect(line.contains("policy.json"), "the error names the file: \(line)")
        #expect(line.contains("keeping configuration 1"))

        let url = "http://api.example.com:\(origin.httpPort)/small"
        #expect(try Subprocess.curl(["-x", daemon.proxy, "-o", "/dev/null", "-w", "%{http_code}", url]).stdout == "200",
                "the last good policy still allows the host")
        let metrics = try daemon.admin("/metrics")
        #expect(metrics.contains("atsgate_reloads_total{result=\"failure\"} 1\n"))
        #expect(metrics.contains("atsgate_config_generation 1\n"))
        _ = try daemon.stop(expected: 1)
    }

    @Test func aTunnelOpenedBeforeAReloadKeepsCarryingBytes() throws {
        let origin = try Origin()
        let directory = try TemporaryDirectory()
        let policy = try directory.write("policy.json", Self.strict)
        let daemon = try Daemon(["--policy", policy, "--connect-port", "\(origin.httpPort)"])
        let tunnel = try daemon.openTunnel(to: origin.httpPort)
        let request = "GET /small HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        let body = String(repeating: "a", count: 100) // what /small answers
        tunnel.send(request)
        #expect(tunnel.read(until: body).hasPrefix("HTTP/1.1 200 OK"))

        // The new policy revokes the local-network exemption: new cleartext tunnels to 127.0.0.1 fail.
        try directory.write("policy.json", #"{"NSAllowsLocalNetworking": false}"#)
        try daemon.reload()
        let fresh = try daemon.openTunnel(to: origin.httpPort)
        fresh.send(request)
        #expect(fresh.readAll().isEmpty, "the new policy closes a cleartext tunnel to a local address")

        // The old tunnel keeps the policy it was opened under.
        tunnel.send(request)
        #expect(tunnel.read(until: body).hasPrefix("HTTP/1.1 200 OK"), "the old tunnel still carries bytes")
        tunnel.close()
        let (_, records) = try daemon.stop(expected: 2)
        let reasons = records.map { $0["reason"] as? String }
        #expect(reasons.contains("cleartext-in-tunnel"))
        #expect(records.contains { $0["action"] as? String == "allow" && ($0["bytes_up"] as? Int ?? 0) == 2 * request.utf8.count })
    }

    @Test func sigtermLetsAnOpenTunnelFinishAndRefusesNewClients() throws {
        let origin = try Origin()
        let daemon = try Daemon(["--connect-port", "\(origin.httpPort)", "--admin", "127.0.0.1:0"])
        let adminPort = try daemon.adminPort()
        let tunnel = try daemon.openTunnel(to: origin.httpPort)

        kill(daemon.process.process.processIdentifier, SIGTERM)
        try daemon.process.wait { _, err in err.contains("SIGTERM: stopping") }
        #expect(throws: (any Error).self, "the listener is closed") { try RawClient(port: daemon.port) }
        let ready = try Subprocess.curl(["-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.1:\(adminPort)/readyz"])
        #expect(ready.stdout == "503", "not ready while draining")
        #expect(daemon.process.process.isRunning)

        tunnel.send("GET /small HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        #expect(tunnel.readAll().hasPrefix("HTTP/1.1 200 OK"), "the open tunnel works during the drain")
        tunnel.close()
        let (status, records) = try daemon.stop(expected: 1)
        #expect(status == 0)
        #expect(records.first?["action"] as? String == "allow")
        #expect((records.first?["bytes_down"] as? Int ?? 0) > 0)
    }

    @Test func theGracePeriodEndsWithARecordForEachCutTunnel() throws {
        let origin = try Origin()
        let daemon = try Daemon(["--connect-port", "\(origin.httpPort)", "--grace-period", "0.5"])
        let tunnel = try daemon.openTunnel(to: origin.httpPort)
        tunnel.send("GET /small HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        #expect(tunnel.read(until: "\r\n\r\n").hasPrefix("HTTP/1.1 200 OK"))
        let (status, records) = try daemon.stop(expected: 0)
        #expect(status == 0)
        #expect(daemon.process.stderr.contains("1 connections were cut"))
        let record = try #require(records.first)
        #expect((record["message"] as? String ?? "").contains("cut: the daemon stopped"))
        #expect((record["bytes_up"] as? Int ?? 0) > 0)
    }

    @Test func metricsCountDecisionsAndHealthEndpointsAnswer() throws {
        let origin = try Origin()
        let daemon = try Daemon(Self.pins + ["--admin", "127.0.0.1:0"])
        _ = try Subprocess.curl(["-x", daemon.proxy, "http://api.example.com:\(origin.httpPort)/small"])
        _ = try Subprocess.curl(["-x", daemon.proxy, "http://127.0.0.1:\(origin.httpPort)/small"])
        try daemon.waitForRecords(2)
        let metrics = try daemon.admin("/metrics")
        #expect(metrics.contains("atsgate_decisions_total{app=\"embedded\",action=\"block\",reason=\"cleartext-http\",enforced=\"true\"} 1\n"))
        #expect(metrics.contains("atsgate_decisions_total{app=\"embedded\",action=\"allow\",reason=\"\",enforced=\"true\"} 1\n"))
        #expect(metrics.contains("atsgate_connections_accepted_total 2\n"))
        #expect(metrics.contains("# TYPE atsgate_bytes_total counter\n"))
        #expect(!metrics.contains("atsgate_bytes_total{direction=\"down\"} 0\n"))
        #expect(try daemon.admin("/healthz") == "ok\n")
        #expect(try daemon.admin("/readyz") == "ready\n")
        let missing = try Subprocess.curl(["-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.1:\(daemon.adminPort())/nope"])
        #expect(missing.stdout == "404")
        _ = try daemon.stop(expected: 2)
    }

    /// The request duration histogram, from real requests: a forwarded request counts its whole
    /// exchange (as its record's duration_ms), a block its answer, and a tunnel the wait for its origin
    /// only: held open half a second longer, it counts less than its record's duration by at least that.
    @Test func requestDurationsCountATunnelUntilItsOriginConnected() throws {
        let origin = try Origin()
        let daemon = try Daemon(Self.pins + ["--admin", "127.0.0.1:0", "--connect-port", "\(origin.httpPort)"])
        _ = try Subprocess.curl(["-x", daemon.proxy, "http://api.example.com:\(origin.httpPort)/small"])
        _ = try Subprocess.curl(["-x", daemon.proxy, "http://127.0.0.1:\(origin.httpPort)/small"])
        let tunnel = try daemon.openTunnel(to: origin.httpPort)
        tunnel.send("GET /small HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        #expect(tunnel.read(until: "\r\n\r\n").hasPrefix("HTTP/1.1 200 OK"))
        usleep(500_000)
        tunnel.close()
        try daemon.waitForRecords(3)
        let metrics = try daemon.admin("/metrics")
        func sample(_ name: String, _ labels: String) throws -> Double {
            let prefix = "atsgate_request_duration_seconds_\(name){\(labels)} "
            let line = try #require(metrics.split(separator: "\n").first { $0.hasPrefix(prefix) }, "\(prefix) in \(metrics)")
            return try #require(Double(line.dropFirst(prefix.count)))
        }
        #expect(try sample("count", #"kind="answer",action="block""#) == 1)
        #expect(try sample("bucket", #"kind="answer",action="block",le="+Inf""#) == 1)
        #expect(try sample("count", #"kind="forward",action="allow""#) == 1)
        #expect(try sample("count", #"kind="tunnel",action="allow""#) == 1)
        let (_, records) = try daemon.stop(expected: 3)
        func seconds(_ method: String, _ action: String) throws -> Double {
            let record = try #require(records.first { $0["method"] as? String == method && $0["action"] as? String == action })
            return try #require(record["duration_ms"] as? Double) / 1000
        }
        let forward = try sample("sum", #"kind="forward",action="allow""#)
        #expect(abs(forward - (try seconds("GET", "allow"))) < 0.001, "the whole exchange, as its record says")
        let block = try sample("sum", #"kind="answer",action="block""#)
        #expect(abs(block - (try seconds("GET", "block"))) < 0.001)
        let tunnelSetup = try sample("sum", #"kind="tunnel",action="allow""#)
        let tunnelLife = try seconds("CONNECT", "allow")
        #expect(tunnelSetup > 0 && tunnelSetup <= tunnelLife - 0.5, "setup \(tunnelSetup) s, life \(tunnelLife) s")
    }

    @Test func descriptorGaugesCountTheDaemonsDescriptorsAgainstItsLimit() throws {
        let origin = try Origin()
        let daemon = try Daemon(["--admin", "127.0.0.1:0", "--connect-port", "\(origin.httpPort)"])
        func gauge(_ name: String) throws -> Int {
            let metrics = try daemon.admin("/metrics")
            let line = try #require(metrics.split(separator: "\n").first { $0.hasPrefix("\(name) ") }, "\(name) in \(metrics)")
            return try #require(Int(line.dropFirst(name.count + 1)))
        }
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        #expect(try gauge("process_max_fds") == Int(limit.rlim_cur), "the daemon inherits this process's soft limit")

        let before = try gauge("process_open_fds")
        #expect(before > 3)
        // Each tunnel holds the client's descriptor and the origin's.
        let tunnels = try (0..<4).map { _ in try daemon.openTunnel(to: origin.httpPort) }
        #expect(try gauge("process_open_fds") >= before + 2 * tunnels.count)
        // A last exchange through each, which the origin ends, so each tunnel ends with its record.
        for tunnel in tunnels {
            tunnel.send("GET /small HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            #expect(tunnel.readAll().hasPrefix("HTTP/1.1 200 OK"))
            tunnel.close()
        }
        _ = try daemon.stop(expected: tunnels.count)
    }
}

extension Daemon {
    /// SIGHUP, then waits for the daemon to say how the reload went.
    func reload(expecting outcome: String = "reloaded:") throws {
        let before = process.stderr.components(separatedBy: outcome).count
        kill(process.process.processIdentifier, SIGHUP)
        try process.wait { _, err in err.components(separatedBy: outcome).count > before }
    }

    func adminPort() throws -> Int {
        guard let match = process.stderr.firstMatch(of: /admin on 127\.0\.0\.1:(\d+)/), let port = Int(match.1) else {
            throw HarnessError("no admin address in: \(process.stderr)")
        }
        return port
    }

    /// GET on the admin listener; the body.
    func admin(_ path: String) throws -> String {
        let run = try Subprocess.curl(["--fail", "http://127.0.0.1:\(adminPort())\(path)"])
        guard run.status == 0 else { throw HarnessError("GET \(path): \(run.stderr)") }
        return run.stdout
    }
}
