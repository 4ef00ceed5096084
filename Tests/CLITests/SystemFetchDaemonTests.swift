import Foundation
import Testing
import TestSupport

/// The device's own certificate fetches through the daemon (issue 31): trustd's caIssuers download
/// (its User-Agent, by curl) and an OCSP request (`openssl ocsp`, which sends no User-Agent) are
/// forwarded as app `system` with reason `system-fetch`, while the app's own cleartext stays blocked;
/// the report keeps them out of every app's findings, fixes and suggested dictionary.
@Suite(.serialized) struct SystemFetchDaemonTests {
    static let pins = ["--resolve", "crt.ca.example=127.0.0.1", "--resolve", "ocsp.ca.example=127.0.0.1",
                       "--resolve", "api.example.com=127.0.0.1", "--local-network", "192.0.2.0/24"]

    /// trustd's download of int-a from the caIssuers server, through `daemon`: curl's exit status and
    /// the bytes it got.
    static func trustdFetch(_ daemon: Daemon, _ server: AIAServer) throws -> AtsgateRun {
        try Subprocess.curl(["-x", daemon.proxy, "-A", "com.apple.trustd/3.0", "-o", "-", "-w", "\n%{http_code}",
                             "http://crt.ca.example:\(server.port)/int-a.cer"])
    }

    /// A real OCSP client's request through `daemon` (origin.py answers it with its own body: not an
    /// OCSP response, so the client fails, but the request went through).
    static func ocspRequest(_ daemon: Daemon, _ origin: Origin) throws {
        _ = try Subprocess.run("/usr/bin/openssl", ["ocsp", "-issuer", try AppleLayoutTestStore.path("int-a.pem"),
                                                    "-cert", try AppleLayoutTestStore.path("leaf-good.pem"),
                                                    "-url", "http://ocsp.ca.example:\(origin.httpPort)/",
                                                    "-proxy", "127.0.0.1:\(daemon.port)", "-timeout", "10"])
    }

    @Test func trustdsFetchesAreTheSystemsAndTheAppsCleartextIsStillBlocked() throws {
        let server = try AIAServer.shared.get()
        let origin = try Origin()
        let daemon = try Daemon(Self.pins + ["--admin", "127.0.0.1:0"])
        let fetched = try Self.trustdFetch(daemon, server)
        #expect(fetched.stdout.hasSuffix("\n200"), "\(fetched.stdout.suffix(40)) \(fetched.stderr)")
        let certificate = try Data(contentsOf: URL(fileURLWithPath: try AppleLayoutTestStore.path("int-a.der")))
        #expect(fetched.stdout.utf8.count > certificate.count / 2, "the certificate came through")
        try Self.ocspRequest(daemon, origin)
        let app = try Subprocess.curl(["-x", daemon.proxy, "-o", "/dev/null", "-w", "%{http_code}",
                                       "http://api.example.com:\(origin.httpPort)/small"])
        #expect(app.stdout == "403", "the app's own cleartext stays blocked")
        let appCertificate = try Subprocess.curl(["-x", daemon.proxy, "-A", "Lab/1.0 CFNetwork/1490.0.4 Darwin/23.2.0",
                                                  "-o", "/dev/null", "-w", "%{http_code}",
                                                  "http://crt.ca.example:\(server.port)/int-a.cer"])
        #expect(appCertificate.stdout == "403", "an app's own download of a certificate is the app's")
        let metrics = try daemon.admin("/metrics")
        #expect(metrics.contains(#"atsgate_decisions_total{app="system",action="allow",reason="system-fetch",enforced="true"} 2"#),
                "\(metrics)")
        let page = try daemon.admin("/")
        #expect(page.contains(#""app":"system""#) && page.contains(#""reason":"system-fetch""#), "the live page's totals")
        let records = try daemon.stopInTimeOrder(expected: 4)
        let system = records.filter { $0["app"] as? String == "system" }
        #expect(system.count == 2)
        for record in system {
            #expect(record["action"] as? String == "allow")
            #expect(record["reason"] as? String == "system-fetch")
            #expect(record["ats"] as? String == "off", "no app's ATS judged it")
            #expect(record["rule"] == nil, "nor any rule")
            #expect(record["scheme"] as? String == "http")
        }
        #expect(system.map { $0["host"] as? String } == ["crt.ca.example", "ocsp.ca.example"])
        #expect((system[0]["message"] as? String ?? "").contains("trustd's User-Agent com.apple.trustd/3.0"))
        #expect((system[1]["message"] as? String ?? "").contains("an OCSP request without a User-Agent"))
        #expect(server.requests(containing: "/int-a.cer").count >= 1)
        let blocked = records.filter { $0["app"] as? String != "system" }
        #expect(blocked.map { $0["reason"] as? String } == ["cleartext-http", "cleartext-http"])

        // The report: no finding, fix or dictionary entry for the device's own fetches.
        let directory = try TemporaryDirectory()
        let log = try directory.write("decisions.log", daemon.process.stdout)
        let json = try Atsgate.run(["report", "--format", "json", "--local-network", "192.0.2.0/24", log])
        #expect(json.status == 1, "the app's cleartext is a finding: \(json.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let systemSection = try #require(report["system"] as? [[String: Any]])
        #expect(Set(systemSection.compactMap { $0["url"] as? String })
                == ["http://crt.ca.example:\(server.port)", "http://ocsp.ca.example:\(origin.httpPort)"])
        let apps = try #require(report["apps"] as? [[String: Any]])
        #expect(apps.map { $0["app"] as? String }.contains("system") == false)
        let urls = apps.flatMap { ($0["destinations"] as? [[String: Any]] ?? []).compactMap { $0["url"] as? String } }
        #expect(!urls.contains { $0.contains("ocsp.ca.example") }, "\(urls)")
        #expect(urls.contains("http://crt.ca.example:\(server.port)"), "the app's own download is the app's finding")
        let plist = try Atsgate.run(["report", "--format", "plist", "--local-network", "192.0.2.0/24", log])
        #expect(plist.stdout.contains("<key>api.example.com</key>"), "\(plist.stdout)")
        #expect(!plist.stdout.contains("ocsp.ca.example"), "no exception for the device's OCSP server")
        let text = try Atsgate.run(["report", "--local-network", "192.0.2.0/24", log]).stdout
        #expect(text.contains("SYSTEM: the device's own traffic, not an app's (2 destinations, 2 records, "), "\(text)")
        #expect(text.contains("    http://ocsp.ca.example:\(origin.httpPort): 1 record, ")
                && text.contains(" down (system-fetch 1)\n"), "\(text)")
    }

    @Test func aSystemFetchIsNeverRedirectedOrUpgraded() throws {
        let server = try AIAServer.shared.get()
        let origin = try Origin()
        for mode in ["redirect", "upgrade"] {
            let daemon = try Daemon(Self.pins + ["--cleartext", mode])
            #expect(try Self.trustdFetch(daemon, server).stdout.hasSuffix("\n200"), "\(mode)")
            let app = try Subprocess.curl(["-x", daemon.proxy, "-o", "/dev/null", "-w", "%{http_code}",
                                           "http://api.example.com:\(origin.httpPort)/small"])
            #expect(app.stdout != "200", "\(mode): the app's request is \(mode)d, not forwarded as it came")
            let records = try daemon.stopInTimeOrder(expected: 2)
            let system = records.filter { $0["app"] as? String == "system" }
            #expect(system.map { $0["reason"] as? String } == ["system-fetch"], "\(mode)")
            #expect(system.first?["action"] as? String == "allow", "\(mode)")
            let appRecord = records.first { $0["app"] as? String != "system" }
            #expect(["upgrade", "error"].contains(appRecord?["action"] as? String ?? ""), "\(mode): \(appRecord ?? [:])")
        }
    }

    @Test func theAppIDSystemIsTheDevicesAndCannotNameAPolicy() throws {
        let directory = try TemporaryDirectory()
        let policy = try directory.write("policy.json", "{}")
        let run = try Atsgate.run(["run", "--listen", "127.0.0.1:0", "--policy", "system=\(policy)"], timeout: 20)
        #expect(run.status == 2)
        #expect(run.stderr.contains("the policy ID 'system' is the device's own traffic"), "\(run.stderr)")
    }
}
