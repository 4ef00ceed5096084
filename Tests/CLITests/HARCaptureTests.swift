import Foundation
import Glibc
import Testing
import TestSupport

/// `atsgate report` on HAR captures written by real tools (ISSUE 21): Playwright's `recordHar` driving
/// Debian's headless Chromium through a running atsgate (the capture a UI-test suite already makes),
/// and mitmproxy's `mitmdump --set hardump=` in front of loopback origins. The tools come from PyPI,
/// pinned, in the environment scripts/install-test-tools makes (scripts/test runs it).
@Suite(.serialized) struct HARCaptureTests {
    static let tools = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent(".build/test-tools/bin")

    static func tool(_ name: String) throws -> String {
        let path = tools.appendingPathComponent(name).path
        return try #require(FileManager.default.isExecutableFile(atPath: path) ? path : nil,
                            "\(path) is missing: scripts/install-test-tools installs the pinned PyPI test tools")
    }

    static let policy = #"{"NSExceptionDomains": {"legacy.example.com": {"NSExceptionAllowsInsecureHTTPLoads": true}}}"#
    /// 127.0.0.1 counts as an external address for the daemon and the report alike.
    static let network = ["--local-network", "192.0.2.0/24"]

    static func json(_ run: AtsgateRun) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], "\(run.stderr)")
    }

    static func destinations(_ document: [String: Any]) -> [String: [String: Any]] {
        var all: [String: [String: Any]] = [:]
        for app in document["apps"] as? [[String: Any]] ?? [] {
            for destination in app["destinations"] as? [[String: Any]] ?? [] { all[destination["url"] as! String] = destination }
        }
        return all
    }

    /// Chromium (Debian's, headless) browses through atsgate while Playwright records the HAR; the report
    /// on the HAR finds what the report on atsgate's own log finds, and says what the HAR cannot show.
    @Test func aPlaywrightCaptureOfChromiumThroughAtsgateIsJudgedLikeTheProxysLog() throws {
        let python = try Self.tool("python")
        let chromium = try #require(LivePageTests.chromium, "scripts/install-deps installs chromium")
        let directory = try TemporaryDirectory()
        let policy = try directory.write("policy.json", Self.policy)
        let origin = try Origin()
        let tls = try TLSTestOrigin(leaf: "good-rsa", arguments: ["--min", "TLSv1_2", "--max", "TLSv1_2"])
        let names = ["api.example.com", "legacy.example.com"]
        var arguments = ["--mode", "report", "--policy", policy, "--connect-port", "\(tls.port)",
                         "--ca-file", try TestPKI.shared.path("ca.pem")] + Self.network
        for name in names { arguments += ["--resolve", "\(name)=127.0.0.1"] }
        let daemon = try Daemon(arguments)
        let har = directory.url.appendingPathComponent("browse.har").path
        let urls = ["http://api.example.com:\(origin.httpPort)/small", "http://legacy.example.com:\(origin.httpPort)/small",
                    "https://127.0.0.1:\(tls.port)/"]
        let script = """
            import json, sys
            from playwright.sync_api import sync_playwright
            chromium, proxy, har = sys.argv[1], sys.argv[2], sys.argv[3]
            with sync_playwright() as p:
                # Chromium sends loopback names to the proxy only when told to (<-loopback>).
                browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--proxy-bypass-list=<-loopback>"],
                                            proxy={"server": proxy})
                context = browser.new_context(record_har_path=har, ignore_https_errors=True)
                page = context.new_page()
                for url in sys.argv[4:]:
                    response = page.goto(url)
                    print(url, response.status if response else None, flush=True)
                context.close()
                browser.close()
            """
        let run = try Subprocess.run(python, ["-c", script, chromium, daemon.proxy, har] + urls, timeout: 120)
        #expect(run.status == 0, "\(run.stderr.suffix(800))")
        for url in urls { #expect(run.stdout.contains("\(url) 200"), "loaded through atsgate: \(run.stdout)") }
        let (_, records) = try daemon.stop(expected: urls.count)
        let log = try directory.write("decisions.log", records.map {
            String(decoding: try JSONSerialization.data(withJSONObject: $0), as: UTF8.self)
        }.joined(separator: "\n"))

        let fromHAR = try Self.json(try Atsgate.run(["report", "--policy", policy, "--format", "json"] + Self.network + [har]))
        let fromLog = try Self.json(try Atsgate.run(["report", "--policy", policy, "--format", "json"] + Self.network + [log]))
        let captured = Self.destinations(fromHAR), logged = Self.destinations(fromLog)
        let input = try #require((fromHAR["inputs"] as? [[String: Any]])?.first)
        #expect(input["kind"] as? String == "har")
        #expect((input["creator"] as? String)?.hasPrefix("Playwright ") == true, "\(input)")
        let api = "http://api.example.com:\(origin.httpPort)", legacy = "http://legacy.example.com:\(origin.httpPort)"
        // The leaf is for localhost and 127.0.0.1: the certificate passes, so both verdicts can agree.
        let secure = "https://127.0.0.1:\(tls.port)"
        for url in [api, legacy, secure] {
            #expect(captured[url] != nil, "\(url) in the capture: \(captured.keys.sorted())")
            #expect(captured[url]?["blocked"] as? Bool == logged[url]?["blocked"] as? Bool, "\(url): the same verdict from both")
        }
        #expect(captured[api]?["blocked"] as? Bool == true)
        #expect((captured[api]?["findings"] as? [[String: Any]])?.first?["reason"] as? String == "cleartext-http")
        #expect(captured[legacy]?["blocked"] as? Bool == false, "the exception allows it")
        #expect(captured[secure]?["tls_versions"] as? [String] == ["TLSv1.2"], "Playwright's _securityDetails.protocol")
        #expect((captured[secure]?["not_checked"] as? String)?.hasPrefix("TLS version only") == true,
                "Playwright's capture has no cipher suite: \(captured[secure]?["not_checked"] ?? "nil")")
        #expect(logged[secure]?["not_checked"] is NSNull, "the proxy saw the handshake")
        #expect((captured[api]?["actions"] as? [String: Any])?["captured"] as? Int ?? 0 >= 1)
    }

    /// mitmdump as the capture tool: its HAR has no TLS details, so HTTPS destinations are "not checked",
    /// never passed; cleartext is judged. The same capture gzipped, named for an app, and cut short.
    @Test func aMitmdumpCaptureIsJudgedAndItsHandshakesAreNotCheckedNeverPassed() throws {
        let mitmdump = try Self.tool("mitmdump")
        let directory = try TemporaryDirectory()
        let policy = try directory.write("policy.json", Self.policy)
        let origin = try Origin()
        let tls = try TLSTestOrigin(leaf: "good-rsa", arguments: ["--min", "TLSv1_2"])
        let har = directory.url.appendingPathComponent("mitm.har").path
        let port = try freePort()
        // The test runner's threads block SIGINT, and a spawned child inherits the mask: mitmdump is
        // started with it unblocked, so its own handler runs and writes the HAR on shutdown.
        let unblock = "import os, signal, sys; signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM}); "
            + "os.execv(sys.argv[1], sys.argv[1:])"
        let proxy = try BackgroundProcess(try Self.tool("python"), ["-c", unblock, mitmdump, "--listen-host", "127.0.0.1",
                                                                    "--listen-port", "\(port)", "--set", "hardump=\(har)",
                                                                    "--set", "confdir=\(directory.url.path)/mitm",
                                                                    "--ssl-insecure", "--set", "termlog_verbosity=warn"])
        try waitUntilListening(port, timeout: 30)
        let plain = try Subprocess.curl(["-x", "http://127.0.0.1:\(port)", "http://127.0.0.1:\(origin.httpPort)/small"])
        #expect(plain.stdout.count == 100, "\(plain.stderr)")
        let secure = try Subprocess.curl(["-k", "-x", "http://127.0.0.1:\(port)", "https://127.0.0.1:\(tls.port)/"])
        #expect(secure.stdout == "ok from tls_origin\n", "\(secure.stderr)")
        // mitmdump writes the HAR when it shuts down.
        #expect(proxy.stop(signal: SIGINT) == 0, "\(proxy.stderr.suffix(500))")
        let text = try String(contentsOfFile: har, encoding: .utf8)
        #expect(text.contains("\"creator\""), "a HAR was written")

        let run = try Atsgate.run(["report", "--policy", policy, "--format", "json"] + Self.network + [har])
        #expect(run.status == 1, "cleartext to 127.0.0.1 is blocked under full ATS: \(run.stderr)")
        let document = try Self.json(run)
        let all = Self.destinations(document)
        let cleartext = "http://127.0.0.1:\(origin.httpPort)", https = "https://127.0.0.1:\(tls.port)"
        #expect(all[cleartext]?["blocked"] as? Bool == true)
        #expect(all[https]?["blocked"] as? Bool == false)
        #expect(all[https]?["not_checked"] as? String == "no handshake in the capture")
        let input = try #require((document["inputs"] as? [[String: Any]])?.first)
        #expect(input["creator"] as? String == "mitmproxy 11.0.2")
        let textRun = try Atsgate.run(["report", "--policy", policy] + Self.network + [har])
        #expect(textRun.stdout.contains("NOT CHECKED (1):\n    \(https)  no handshake in the capture\n"), "\(textRun.stdout)")
        let junit = try Atsgate.run(["report", "--policy", policy, "--format", "junit"] + Self.network + [har])
        #expect(junit.stdout.contains("<skipped message=\"not checked: no handshake in the capture\"/>"))

        // Gzipped and named for an app: the same verdict, under that app.
        #expect(try Subprocess.run("/bin/gzip", ["-k", har]).status == 0)
        let zipped = try Self.json(try Atsgate.run(["report", "--policy", policy, "--format", "json"] + Self.network
                                                   + ["com.example.shop=\(har).gz"]))
        #expect((zipped["apps"] as? [[String: Any]])?.map { $0["app"] as? String } == ["com.example.shop"])
        #expect(Self.destinations(zipped).mapValues { $0["blocked"] as? Bool } == all.mapValues { $0["blocked"] as? Bool })

        // Cut short: exit 2, one line with the file and the byte offset.
        let bytes = try Data(contentsOf: URL(fileURLWithPath: har))
        let cut = try directory.write("cut.har", bytes.prefix(bytes.count * 2 / 3))
        let truncated = try Atsgate.run(["report", "--policy", policy, cut])
        #expect(truncated.status == 2)
        #expect(truncated.stdout.isEmpty)
        #expect(truncated.stderr.hasPrefix("atsgate: \(cut): truncated HAR at byte "), "\(truncated.stderr)")
        #expect(truncated.stderr.split(separator: "\n").count == 1)
    }
}
