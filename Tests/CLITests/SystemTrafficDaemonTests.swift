import Foundation
import Testing
import TestSupport

/// The device's own traffic on the proxy path (issue 35): the captive-portal probe by its User-Agent
/// and a destination of the system-destinations table (here the operator's `--system-dest`, on the
/// origin's port) are recorded as app `system`, reason `system-traffic`, and allowed whatever the
/// app's policy; the app's own cleartext stays blocked; `--system-traffic judge` hands it all back to
/// the app's policy; the report keeps it apart, with its volume.
@Suite(.serialized) struct SystemTrafficDaemonTests {
    static let captive = "CaptiveNetworkSupport-407.0.1 wispr"
    static let app = "Lab/1.0 CFNetwork/1490.0.4 Darwin/23.2.0"

    static func arguments(_ origin: Origin) -> [String] {
        // Without the built-in exceptions, apple.com's cleartext is no app's to allow: the captive
        // probe passes only because it is the system's.
        ["--no-builtin-exceptions", "--resolve", "captive.apple.com=127.0.0.1", "--resolve", "telemetry.lab.test=127.0.0.1",
         "--resolve", "api.example.com=127.0.0.1", "--system-dest", "telemetry.lab.test:\(origin.httpPort)",
         "--connect-port", "\(origin.httpPort)"]
    }

    /// The status of a request through `daemon` (`-p`: in a CONNECT tunnel).
    static func status(_ daemon: Daemon, _ url: String, agent: String, tunnel: Bool = false) throws -> String {
        try Subprocess.curl((tunnel ? ["-p"] : []) + ["-x", daemon.proxy, "-A", agent, "-o", "/dev/null",
                                                        "-w", "%{http_code}", url]).stdout
    }

    @Test func theCaptiveProbeAndTheTablesDestinationsAreTheSystemsAndTheAppsCleartextIsStillBlocked() throws {
        let origin = try Origin()
        let daemon = try Daemon(Self.arguments(origin) + ["--admin", "127.0.0.1:0"])
        let port = origin.httpPort
        #expect(try Self.status(daemon, "http://captive.apple.com:\(port)/small", agent: Self.captive) == "200")
        #expect(try Self.status(daemon, "http://telemetry.lab.test:\(port)/small", agent: Self.app) == "200",
                "a table destination is the system's whatever the User-Agent")
        #expect(try Self.status(daemon, "http://telemetry.lab.test:\(port)/small", agent: Self.app, tunnel: true) == "200",
                "cleartext in a system tunnel is not the app's either")
        #expect(try Self.status(daemon, "http://api.example.com:\(port)/small", agent: Self.app) == "403")
        #expect(try Self.status(daemon, "http://captive.apple.com:\(port)/small", agent: Self.app) == "403",
                "the captive host on another port than the table's, with the app's User-Agent, is the app's")
        let metrics = try daemon.admin("/metrics")
        #expect(metrics.contains(#"atsgate_decisions_total{app="system",action="allow",reason="system-traffic",enforced="true"} 3"#),
                "\(metrics)")
        let page = try daemon.admin("/")
        #expect(page.contains(#""app":"system""#) && page.contains(#""reason":"system-traffic""#),
                "the live page's totals, from which its app filter lists system")
        let records = try daemon.stopInTimeOrder(expected: 5)
        let system = records.filter { $0["app"] as? String == "system" }
        #expect(system.map { $0["host"] as? String } == ["captive.apple.com", "telemetry.lab.test", "telemetry.lab.test"])
        for record in system {
            #expect(record["action"] as? String == "allow")
            #expect(record["reason"] as? String == "system-traffic")
            #expect(record["ats"] as? String == "off", "no app's ATS judged it")
            #expect(record["rule"] == nil)
        }
        #expect((system[0]["message"] as? String ?? "").contains("captive-portal probe"), "\(system[0])")
        #expect((system[1]["message"] as? String ?? "").contains("operator (--system-dest), telemetry.lab.test:\(port)"),
                "\(system[1])")
        #expect((system[2]["bytes_down"] as? Int ?? 0) > 0, "the tunnel carried the origin's answer: \(system[2])")
        let apps = records.filter { $0["app"] as? String != "system" }
        #expect(apps.map { $0["reason"] as? String } == ["cleartext-http", "cleartext-http"])

        // The report: the system section with its destinations and volume; no app counts them.
        let directory = try TemporaryDirectory()
        let log = try directory.write("decisions.log", daemon.process.stdout)
        let json = try Atsgate.run(["report", "--format", "json", log])
        let report = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let section = try #require(report["system"] as? [[String: Any]])
        // The tunnel carried cleartext: its record, and so its destination, is http.
        #expect(section.map { "\($0["url"] as? String ?? "") \($0["records"] as? Int ?? 0)" }
                == ["http://captive.apple.com:\(port) 1", "http://telemetry.lab.test:\(port) 2"], "\(section)")
        #expect(section.allSatisfy { ($0["bytes_down"] as? Int ?? 0) > 0 }, "\(section)")
        let urls = (report["apps"] as? [[String: Any]] ?? [])
            .flatMap { ($0["destinations"] as? [[String: Any]] ?? []).compactMap { $0["url"] as? String } }
        #expect(!urls.contains { $0.contains("telemetry.lab.test") }, "\(urls)")
        let text = try Atsgate.run(["report", log]).stdout
        #expect(text.contains("SYSTEM: the device's own traffic, not an app's (2 destinations, 3 records, "), "\(text)")
        #expect(text.contains("    http://captive.apple.com:\(port): 1 record, "), "\(text)")
        let html = try Atsgate.run(["report", "--format", "html", log]).stdout
        #expect(html.contains("<h2>Device system traffic</h2>") && html.contains("telemetry.lab.test"), "the HTML report too")
    }

    @Test func judgeModeHandsTheSystemsTrafficBackToTheAppsPolicy() throws {
        let origin = try Origin()
        let daemon = try Daemon(Self.arguments(origin) + ["--system-traffic", "judge"])
        let port = origin.httpPort
        #expect(try Self.status(daemon, "http://captive.apple.com:\(port)/small", agent: Self.captive) == "403")
        #expect(try Self.status(daemon, "http://telemetry.lab.test:\(port)/small", agent: Self.app) == "403")
        let records = try daemon.stopInTimeOrder(expected: 2)
        #expect(records.map { $0["reason"] as? String } == ["cleartext-http", "cleartext-http"])
        #expect(records.allSatisfy { $0["app"] as? String != "system" }, "\(records)")
    }

    @Test func aRoutesDestinationRulesHoldForTheDevicesOwnTrafficToo() throws {
        let origin = try Origin()
        let files = try TemporaryDirectory()
        let policy = try files.write("policy.json", "{}")
        let daemon = try Daemon(Self.arguments(origin) + ["--policy", "lab=\(policy)",
                                                          "--route", "client:127.0.0.0/8=lab,deny-dest=telemetry.lab.test"])
        let port = origin.httpPort
        #expect(try Self.status(daemon, "http://telemetry.lab.test:\(port)/small", agent: Self.app) == "403")
        let records = try daemon.stopInTimeOrder(expected: 1)
        #expect(records.first?["app"] as? String == "system", "\(records)")
        #expect(records.first?["reason"] as? String == "destination-not-allowed", "the route's deny-dest, not ATS: \(records)")
    }

    @Test(arguments: [
        (["--system-dest", "bad name!"], "--system-dest 'bad name!': expected NAME, .SUFFIX or CIDR"),
        (["--system-dest", "host.test:99999"], "--system-dest 'host.test:99999': the port after ':' must be 1-65535"),
        (["--system-traffic", "ignore"], "--system-traffic"),
    ])
    func aMalformedSystemOptionStopsTheStartNamingTheFlag(arguments: [String], message: String) throws {
        let run = try Atsgate.run(["run", "--listen", "127.0.0.1:0"] + arguments, timeout: 20)
        #expect(run.status == 2, "\(run.stderr)")
        #expect(run.stderr.contains(message), "\(run.stderr)")
    }
}
