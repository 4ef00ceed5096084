import Foundation
import Glibc
import Testing
import TestSupport

/// `--admin-auth`: the admin window (metrics, the live page, its event stream) asks for Basic
/// credentials; the probes stay open. Real curl against the real daemon.
@Suite(.serialized) struct LockedAdminTests {
    static func status(_ url: String, _ extra: [String] = []) throws -> (code: String, headers: String) {
        let run = try Subprocess.curl(["-D", "-", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "5"] + extra + [url])
        let code = String(run.stdout.suffix(3))
        return (code, String(run.stdout.dropLast(3)))
    }

    /// A request whose lines end in LF alone has ended as far as its sender knows: the admin listener
    /// refuses it at once (400) instead of waiting for a CRLFCRLF that never comes, as the proxy does.
    @Test func aHeadWithBareLineFeedsIsRefusedAtOnce() throws {
        let daemon = try Daemon(["--admin", "127.0.0.1:0"])
        let client = try RawClient(port: try daemon.adminPort(), timeout: 30)
        client.send("GET /healthz HTTP/1.1\nHost: x\n\n")
        let answer = client.readAll()
        #expect(answer.hasPrefix("HTTP/1.1 400 "), "\(answer)")
        #expect(answer.contains("bare LF"), "\(answer)")
        _ = daemon.process.stop()
    }

    @Test func withoutCredentials401AndTheProbesStayOpen() throws {
        let directory = try TemporaryDirectory()
        let users = try directory.write("admins", try DeviceLabTests.sha512Line("prometheus", "scrape-me") + "\n")
        let daemon = try Daemon(["--admin", "127.0.0.1:0", "--admin-auth", users])
        let admin = "http://127.0.0.1:\(try daemon.adminPort())"

        for path in ["/metrics", "/", "/events?max=1", "/?app=lab"] {
            let refused = try Self.status(admin + path)
            #expect(refused.code == "401", "\(path): \(refused)")
            #expect(refused.headers.contains("WWW-Authenticate: Basic realm=\"atsgate admin\""), "\(path): \(refused.headers)")
            let wrong = try Self.status(admin + path, ["-u", "prometheus:guess"])
            #expect(wrong.code == "401", "\(path) with a wrong password: \(wrong)")
        }
        for path in ["/healthz", "/readyz"] {
            #expect(try Self.status(admin + path).code == "200", "\(path) stays open for probes")
        }
        let metrics = try Subprocess.curl(["--fail", "-u", "prometheus:scrape-me", admin + "/metrics"])
        #expect(metrics.status == 0, "\(metrics.stderr)")
        #expect(metrics.stdout.contains("atsgate_connections_open"), "\(metrics.stdout.prefix(300))")
        // Known credentials answer again without a second hash; the live page too.
        #expect(try Self.status(admin + "/", ["-u", "prometheus:scrape-me"]).code == "200")
        #expect(try Self.status(admin + "/events?max=1", ["-u", "prometheus:scrape-me"]).code == "200")
        // `atsgate health` needs no credentials.
        let health = try Atsgate.run(["health", "--admin", "127.0.0.1:\(try daemon.adminPort())"])
        #expect(health.status == 0, "\(health.stderr)")
        _ = daemon.process.stop()
    }

    @Test func aMissingOrBadAdminFileStopsTheStartNamingIt() throws {
        let directory = try TemporaryDirectory()
        let missing = try Atsgate.run(["run", "--listen", "127.0.0.1:0", "--admin", "127.0.0.1:0",
                                       "--admin-auth", directory.url.appendingPathComponent("none").path])
        #expect(missing.status == 2)
        #expect(missing.stderr.contains("--admin-auth \(directory.url.path)/none: no such file"), "\(missing.stderr)")
        let plain = try directory.write("plain", "admin:secret\n")
        let refused = try Atsgate.run(["run", "--listen", "127.0.0.1:0", "--admin-auth", plain])
        #expect(refused.status == 2)
        #expect(refused.stderr.contains("plain:1: user 'admin': plain-text passwords"), "\(refused.stderr)")
    }
}

/// Failed proxy logins slowed per client address, then 429 with Retry-After (`auth-throttled`);
/// another address with the right password goes through. Two loopback addresses stand for two devices.
@Suite(.serialized) struct ThrottledLoginTests {
    @Test func fortyQuickWrongPasswordsFromOneAddressThenTheRightOneFromAnother() throws {
        let origin = try Origin()
        let directory = try TemporaryDirectory()
        let users = try directory.write("users", try DeviceLabTests.sha512Line("ann", "s3cret") + "\n")
        let daemon = try Daemon(DeviceLabTests.pins + ["--auth-file", users, "--policy", try DeviceLabTests.ipa("lab", in: directory)])
        let url = "http://legacy.example.com:\(origin.httpPort)/small"

        // 40 wrong passwords at once from 127.0.0.2 (curl --parallel, each on its own connection).
        let guesses = try Subprocess.run("/usr/bin/curl", ["--silent", "--parallel", "--parallel-max", "40", "--max-time", "20",
                                                           "--interface", "127.0.0.2", "-x", daemon.proxy, "-U", "ann:wrong",
                                                           "-w", "%{http_code}\n"]
                                         + Array(repeating: ["-o", "/dev/null", url], count: 40).flatMap { $0 }, timeout: 60)
        let codes = guesses.stdout.split(separator: "\n").map(String.init)
        #expect(codes.count == 40, "\(guesses.stdout)\(guesses.stderr)")
        // The bucket's burst (10) is checked and answered 407; the rest are refused unhashed. (One
        // attempt drains every 30 s: a very slow machine may let one or two more through.)
        let checked = codes.filter { $0 == "407" }.count
        #expect((10...12).contains(checked), "\(codes)")
        #expect(codes.filter { $0 == "429" }.count == 40 - checked, "\(codes)")

        // Another device with the right password is not slowed by its neighbour.
        let right = try Subprocess.curl(["--interface", "127.0.0.3", "-x", daemon.proxy, "-U", "ann:s3cret",
                                         "-o", "/dev/null", "-w", "%{http_code}", url])
        #expect(right.stdout == "200", "\(right.stderr)")

        // The guesser is refused even with the right password now, with a Retry-After.
        let refused = try Subprocess.curl(["--interface", "127.0.0.2", "-x", daemon.proxy, "-U", "ann:s3cret",
                                           "-D", "-", "-o", "/dev/null", url])
        #expect(refused.stdout.hasPrefix("HTTP/1.1 429 Too Many Requests"), "\(refused.stdout)")
        let retryAfter = refused.stdout.firstMatch(of: /Retry-After: (\d+)\r\n/).flatMap { Int($0.1) }
        #expect(retryAfter.map { $0 > 0 && $0 <= 300 } == true, "\(refused.stdout)")
        #expect(refused.stdout.contains("X-ATS-Reason: auth-throttled"))
        let status = try #require(try StructuredFieldParser.proxyStatus(of: [refused.stdout]).first)
        #expect(status.name == "atsgate" && status.token("error") == "http_request_error", "\(status)")
        #expect(status.string("details") == "auth-throttled", "\(status)")

        let records = try DeviceLabTests.stop(daemon, expected: 42)
        let throttled = records.filter { $0["reason"] as? String == "auth-throttled" }
        #expect(throttled.count == 40 - checked + 1)
        for record in throttled {
            #expect(record["action"] as? String == "block" && record["status"] as? Int == 429, "\(record)")
            #expect((record["client"] as? String)?.hasPrefix("127.0.0.2:") == true, "\(record)")
            #expect(record["proxy_user"] as? String == "ann")
            #expect((record["message"] as? String)?.hasPrefix("too many failed proxy logins from 127.0.0.2; retry after ") == true)
        }
        #expect(records.contains { ($0["client"] as? String)?.hasPrefix("127.0.0.3:") == true && $0["action"] as? String == "allow"
                                   && $0["proxy_user"] as? String == "ann" })
        let log = daemon.process.stdout
        #expect(!log.contains("s3cret") && !log.contains("ann:wrong"), "passwords are never logged")
    }
}

/// The scrape config deploy/ ships, in a real Prometheus against the real daemon: with the shipped
/// credentials the target is up; the same job with a wrong password is down with a 401.
@Suite(.serialized) struct ShippedScrapeConfigTests {
    @Test func prometheusScrapesTheLockedAdminWithTheShippedConfig() throws {
        let directory = try TemporaryDirectory()
        let users = try directory.write("admins", try DeviceLabTests.sha512Line("prometheus", "scrape-me") + "\n")
        let daemon = try Daemon(["--admin", "127.0.0.1:0", "--admin-auth", users])
        let adminPort = try daemon.adminPort()
        let right = try directory.write("right.password", "scrape-me")
        let wrong = try directory.write("wrong.password", "guess")

        // The shipped job as it is, pointed at this daemon; a copy of it with the wrong password.
        let shipped = try String(contentsOfFile: Fixtures.repository("deploy/prometheus/scrape-atsgate.yml"), encoding: .utf8)
        #expect(shipped.contains("basic_auth:"))
        let job = shipped.components(separatedBy: "scrape_configs:\n")[1]
            .replacing("127.0.0.1:9090", with: "127.0.0.1:\(adminPort)")
            .replacing("/etc/prometheus/atsgate-admin.password", with: right)
        let wrongJob = job.replacing("job_name: atsgate", with: "job_name: atsgate-wrong").replacing(right, with: wrong)
        let config = try directory.write("prometheus.yml", "global:\n  scrape_interval: 1s\nscrape_configs:\n" + job + wrongJob)
        let checked = try Subprocess.run("/usr/bin/promtool", ["check", "config", config])
        #expect(checked.status == 0, "\(checked.stdout)\(checked.stderr)")

        let webPort = try freePort()
        let prometheus = try BackgroundProcess("/usr/bin/prometheus", [
            "--config.file=\(config)", "--storage.tsdb.path=\(directory.url.appendingPathComponent("tsdb").path)",
            "--web.listen-address=127.0.0.1:\(webPort)",
        ])
        defer { prometheus.stop() }
        // Both targets scraped at least once (bounded: Prometheus starts slowly on a loaded machine).
        var health: [String: (String, String)] = [:]
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            if let targets = try? Subprocess.curl(["http://127.0.0.1:\(webPort)/api/v1/targets"]),
               let object = try? JSONSerialization.jsonObject(with: Data(targets.stdout.utf8)) as? [String: Any],
               let active = (object["data"] as? [String: Any])?["activeTargets"] as? [[String: Any]] {
                for target in active {
                    let job = (target["labels"] as? [String: Any])?["job"] as? String ?? "?"
                    health[job] = (target["health"] as? String ?? "?", target["lastError"] as? String ?? "")
                }
                if health.count == 2, health.values.allSatisfy({ $0.0 != "unknown" }) { break }
            }
            usleep(250_000)
        }
        #expect(health["atsgate"]?.0 == "up", "\(health)")
        #expect(health["atsgate-wrong"]?.0 == "down", "\(health)")
        #expect(health["atsgate-wrong"]?.1.contains("401") == true, "\(health)")
        _ = daemon.process.stop()
    }
}
