import Foundation
import Glibc
import Testing
import TestSupport

/// Many apps through one proxy (INTERFACE.md "Many apps through one proxy"), through the real daemon:
/// policies from .ipa files the tests build (binary Info.plists, an extension), every route kind,
/// proxy authentication on a raw connection, the PAC file, reload, and the records and metrics per app.
@Suite(.serialized) struct DeviceLabTests {
    static let pins = ["--resolve", "legacy.example.com=127.0.0.1"]
    static let lab = "com.example.lab", share = "com.example.lab.share", other = "com.example.other"

    /// Builds an .ipa (or a defective archive) with Tests/Fixtures/make_ipa.py.
    static func ipa(_ kind: String, in directory: TemporaryDirectory, name: String? = nil, app: String? = nil) throws -> String {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/make_ipa.py").path
        let path = directory.url.appendingPathComponent(name ?? "\(kind).ipa").path
        let made = try Subprocess.run(Origin.python, [script, path, kind] + (app.map { [$0] } ?? []))
        guard made.status == 0 else { throw HarnessError("make_ipa.py \(kind): \(made.stderr)") }
        return path
    }

    /// An htpasswd line in SHA-512 crypt, made by openssl.
    static func sha512Line(_ user: String, _ password: String) throws -> String {
        let run = try Subprocess.run("/usr/bin/openssl", ["passwd", "-6", "-salt", "labsalt1", password])
        guard run.status == 0 else { throw HarnessError("openssl passwd: \(run.stderr)") }
        return "\(user):\(run.stdout.trimmingCharacters(in: .whitespacesAndNewlines))"
    }

    static func basic(_ user: String, _ password: String) -> String {
        "Proxy-Authorization: Basic \(Data("\(user):\(password)".utf8).base64EncodedString())\r\n"
    }

    /// A plain request for legacy.example.com through the proxy on `client`; the status line's code.
    static func get(_ client: RawClient, port: Int, agent: String?, extra: String = "") -> String {
        let agentField = agent.map { "User-Agent: \($0)\r\n" } ?? ""
        client.send("GET http://legacy.example.com:\(port)/small HTTP/1.1\r\nHost: legacy.example.com:\(port)\r\n"
                    + agentField + extra + "\r\n")
        let answer = client.read(until: "\r\n\r\n")
        return String(answer.dropFirst("HTTP/1.1 ".count).prefix(3))
    }

    /// One whole response (head and Content-Length body) from `client`.
    static func response(_ client: RawClient) -> String {
        var text = client.read(until: "\r\n\r\n")
        guard let match = text.firstMatch(of: /Content-Length: (\d+)\r\n/), let length = Int(match.1),
              let end = text.range(of: "\r\n\r\n") else { return text }
        var want = length - text[end.upperBound...].utf8.count
        var buffer = [UInt8](repeating: 0, count: 4096)
        while want > 0 {
            let n = recv(client.fd, &buffer, min(want, buffer.count), 0)
            if n <= 0 { break }
            text += String(decoding: buffer[..<n], as: UTF8.self)
            want -= n
        }
        return text
    }

    static func stop(_ daemon: Daemon, expected: Int) throws -> [[String: Any]] {
        try daemon.stopInTimeOrder(expected: expected)
    }

    static func curlStatus(_ daemon: Daemon, _ arguments: [String]) throws -> String {
        try Subprocess.curl(["-x", daemon.proxy, "-o", "/dev/null", "-w", "%{http_code}"] + arguments).stdout
    }

    // MARK: routing

    @Test func eachRouteKindAndTheUserAgentsOfAnAppAndItsExtension() throws {
        let origin = try Origin()
        let directory = try TemporaryDirectory()
        let lab = try Self.ipa("lab", in: directory)
        let other = try Self.ipa("other", in: directory)
        let auth = try directory.write("users", try Self.sha512Line("ann", "s3cret") + "\n" + Self.sha512Line("olly", "pw") + "\n")
        let secondPort = try freePort()
        let daemon = try Daemon(Self.pins + [
            "--policy", lab, "--policy", other, "--auth-file", auth, "--listen", "127.0.0.1:\(secondPort)",
            "--connect-port", "\(origin.httpPort)",
            "--route", "user:olly=\(Self.other)", "--route", "client:127.0.0.2/32=\(Self.other)",
            "--route", "port:\(secondPort)=\(Self.other)", "--route", "agent:Tester=\(Self.share)",
        ])
        let url = "http://legacy.example.com:\(origin.httpPort)/small"
        let ann = ["-U", "ann:s3cret"]
        // The lab app allows cleartext to legacy.example.com, its extension allows anything, the other app nothing.
        #expect(try Self.curlStatus(daemon, ["-U", "olly:pw", "-A", "Lab/1 CFNetwork/1490 Darwin/23", url]) == "403")
        #expect(try Self.curlStatus(daemon, ann + ["-A", "Tester/2.0", url]) == "200")
        #expect(try Self.curlStatus(daemon, ann + ["-A", "Lab/1.0 CFNetwork/1490.0.4 Darwin/23.2.0", url]) == "200")
        #expect(try Self.curlStatus(daemon, ann + ["-A", "Lab%20App/1.0 CFNetwork/1490 Darwin/23", url]) == "200",
                "the product is percent-decoded and matched against CFBundleName")
        #expect(try Self.curlStatus(daemon, ann + ["-A", "Share/1.0 CFNetwork/1490 Darwin/23", url]) == "200")
        #expect(try Self.curlStatus(daemon, ann + ["-A", "curl/8", url]) == "200", "unrouted: the first policy")
        let fromSecond = try Subprocess.curl(["-x", "http://127.0.0.1:\(secondPort)", "-o", "/dev/null", "-w", "%{http_code}",
                                              "-U", "ann:s3cret", "-A", "Lab/1 CFNetwork/1 Darwin/1", url])
        #expect(fromSecond.stdout == "403", "port routing comes before agent routing")
        let client = try RawClient(port: daemon.port, source: 0x7F00_0002)
        #expect(Self.get(client, port: origin.httpPort, agent: "Lab/1 CFNetwork/1 Darwin/1", extra: Self.basic("ann", "s3cret")) == "403")
        client.close()
        // The CONNECT's own User-Agent routes the tunnel (iOS sends it there).
        let tunnel = try Subprocess.curl(["-x", daemon.proxy, "-p", "-U", "ann:s3cret", "--proxy-header",
                                          "User-Agent: Share/1 CFNetwork/1490 Darwin/23", "-o", "/dev/null",
                                          "-w", "%{http_code}", "--connect-to", "::127.0.0.1:\(origin.httpPort)",
                                          "http://127.0.0.1:\(origin.httpPort)/small"])
        #expect(tunnel.stdout == "200", "\(tunnel.stderr)")

        let records = try Self.stop(daemon, expected: 9)
        let routed = records.map { [$0["app"] as? String ?? "-", $0["route"] as? String ?? "-"] }
        #expect(routed == [[Self.other, "user"], [Self.share, "agent"], [Self.lab, "agent-auto"], [Self.lab, "agent-auto"],
                           [Self.share, "agent-auto"], [Self.lab, "default"], [Self.other, "port"], [Self.other, "client"],
                           [Self.share, "agent-auto"]], "\(routed)")
        #expect(records[0]["reason"] as? String == "cleartext-http")
        // Each app's own message: one loop formats a destination's message once per app, not once for all.
        for record in records where record["method"] as? String == "GET" {
            let message = record["message"] as? String ?? ""
            #expect(message.contains("is allowed") == (record["action"] as? String == "allow"), "\(record)")
        }
        #expect(records[0]["proxy_user"] as? String == "olly")
        #expect(records[1]["user_agent"] as? String == "Tester/2.0")
        #expect(records[2]["policy"] as? String == "\(lab):Payload/Lab.app")
        #expect(records[4]["policy"] as? String == "\(lab):Payload/Lab.app/PlugIns/Share.appex")
        #expect(records[7]["client"] as? String ?? "" == "127.0.0.2:" + (records[7]["client"] as? String ?? "").split(separator: ":").last!)
        #expect(records[8]["method"] as? String == "CONNECT")
    }

    @Test func unroutedBlockAnswers403WithNoPolicy() throws {
        let origin = try Origin()
        let directory = try TemporaryDirectory()
        let daemon = try Daemon(Self.pins + ["--policy", try Self.ipa("lab", in: directory), "--unrouted", "block"])
        let url = "http://legacy.example.com:\(origin.httpPort)/small"
        let run = try Subprocess.curl(["-x", daemon.proxy, "-D", "-", "-o", "/dev/null", "-A", "Unknown/1", url])
        #expect(run.stdout.hasPrefix("HTTP/1.1 403 "))
        #expect(run.stdout.contains("X-ATS-Reason: no-policy\r\n"))
        #expect(try Self.curlStatus(daemon, ["-A", "Lab/1 CFNetwork/1 Darwin/1", url]) == "200")
        let records = try Self.stop(daemon, expected: 2)
        #expect(records[0]["action"] as? String == "block")
        #expect(records[0]["reason"] as? String == "no-policy")
        #expect(records[0]["app"] is NSNull)
        #expect(records[0]["route"] as? String == "default")
        #expect(records[1]["app"] as? String == Self.lab)
    }

    // MARK: authentication

    @Test func a407KeepsTheConnectionForTheRetryAndBadCredentialsAreLoggedWithoutThePassword() throws {
        let origin = try Origin()
        let directory = try TemporaryDirectory()
        let auth = try directory.write("users", "# lab users\n" + (try Self.sha512Line("ann", "s3cret")) + "\n")
        let daemon = try Daemon(["--policy", try Self.ipa("lab", in: directory), "--auth-file", auth,
                                 "--connect-port", "\(origin.httpPort)"])
        let client = try RawClient(port: daemon.port)
        let connect = "CONNECT 127.0.0.1:\(origin.httpPort) HTTP/1.1\r\nHost: 127.0.0.1:\(origin.httpPort)\r\n"
        client.send(connect + "\r\n")
        let challenge = Self.response(client)
        #expect(challenge.hasPrefix("HTTP/1.1 407 Proxy Authentication Required\r\n"), "\(challenge)")
        #expect(challenge.contains("Proxy-Authenticate: Basic realm=\"atsgate\"\r\n"))
        #expect(!challenge.contains("Connection: close"))
        // The retry, on the same connection.
        client.send(connect + Self.basic("ann", "s3cret") + "\r\n")
        #expect(client.read(until: "\r\n\r\n").hasPrefix("HTTP/1.1 200 "))
        client.send("GET /small HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        #expect(client.read(until: String(repeating: "a", count: 100)).hasPrefix("HTTP/1.1 200 OK"))
        client.close()

        let wrong = try RawClient(port: daemon.port)
        wrong.send(connect + Self.basic("ann", "not-the-password") + "\r\n")
        #expect(Self.response(wrong).hasPrefix("HTTP/1.1 407 "))
        wrong.send(connect + Self.basic("mallory", "guess") + "\r\n")
        #expect(Self.response(wrong).hasPrefix("HTTP/1.1 407 "), "still open after a wrong password")
        wrong.close()

        let records = try Self.stop(daemon, expected: 4)
        #expect(records.map { $0["reason"] as? String ?? "-" } == ["auth-required", "-", "auth-required", "auth-required"])
        #expect(records[1]["proxy_user"] as? String == "ann")
        #expect(records[1]["app"] as? String == Self.lab)
        #expect(records[2]["proxy_user"] as? String == "ann")
        #expect((records[2]["message"] as? String ?? "").contains("wrong password"))
        #expect((records[3]["message"] as? String ?? "").contains("unknown proxy user 'mallory'"))
        #expect(records.allSatisfy { $0["status"] as? Int == 407 || $0["action"] as? String == "allow" })
        #expect(!daemon.process.stdout.contains("s3cret") && !daemon.process.stdout.contains("not-the-password"),
                "passwords are never logged")
    }

    @Test func bcryptHashesAreCheckedByLibcrypt() throws {
        // Python's crypt module (libcrypt too) makes the bcrypt line; skipped where it is gone (3.13).
        let made = try Subprocess.run(Origin.python, ["-W", "ignore", "-c",
            "import crypt; print(crypt.crypt('hunter2', crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=1<<5)))"])
        guard made.status == 0, made.stdout.hasPrefix("$2b$") else { return }
        let origin = try Origin()
        let directory = try TemporaryDirectory()
        let auth = try directory.write("users", "bob:\(made.stdout.trimmingCharacters(in: .whitespacesAndNewlines))\n")
        let daemon = try Daemon(Self.pins + ["--policy", try Self.ipa("lab", in: directory), "--auth-file", auth])
        let url = "http://legacy.example.com:\(origin.httpPort)/small"
        #expect(try Self.curlStatus(daemon, ["-U", "bob:hunter2", url]) == "200")
        #expect(try Self.curlStatus(daemon, ["-U", "bob:hunter3", url]) == "407")
        _ = try daemon.stop(expected: 2)
    }

    // MARK: PAC

    @Test func thePACFileIsServedWithoutCredentials() throws {
        let directory = try TemporaryDirectory()
        let auth = try directory.write("users", try Self.sha512Line("ann", "s3cret") + "\n")
        let daemon = try Daemon(["--auth-file", auth])
        for path in ["/proxy.pac", "/wpad.dat"] {
            let run = try Subprocess.curl(["-D", "-", "http://127.0.0.1:\(daemon.port)\(path)"])
            #expect(run.stdout.hasPrefix("HTTP/1.1 200 OK\r\n"))
            #expect(run.stdout.contains("Content-Type: application/x-ns-proxy-autoconfig\r\n"))
            #expect(run.stdout.contains("function FindProxyForURL(url, host)"))
            #expect(run.stdout.contains("return \"PROXY 127.0.0.1:\(daemon.port)\";"), "\(run.stdout)")
        }
        let byName = try Subprocess.curl(["-H", "Host: proxy.lab.test:\(daemon.port)", "http://127.0.0.1:\(daemon.port)/proxy.pac"])
        #expect(byName.stdout.contains("PROXY proxy.lab.test:\(daemon.port)"), "the address the client used")
        let body = try Subprocess.curl(["http://127.0.0.1:\(daemon.port)/proxy.pac"]).stdout
        let head = try Subprocess.curl(["-I", "http://127.0.0.1:\(daemon.port)/proxy.pac"])
        #expect(head.stdout.contains("Content-Length: \(body.utf8.count)\r\n"), "a HEAD has the GET's length: \(head.stdout)")
        let records = try Self.stop(daemon, expected: 5)
        #expect(records.allSatisfy { $0["action"] as? String == "allow" && $0["status"] as? Int == 200 })

        let own = try directory.write("lab.pac", "function FindProxyForURL(url, host) { return \"PROXY lab:3128\"; }\n")
        let custom = try Daemon(["--pac", own])
        #expect(try Subprocess.curl(["http://127.0.0.1:\(custom.port)/wpad.dat"]).stdout.contains("PROXY lab:3128"))
        _ = try custom.stop(expected: 1)
    }

    // MARK: reload, metrics

    @Test func reloadReadsPoliciesRoutesAndTheAuthFileAgain() throws {
        let origin = try Origin()
        let directory = try TemporaryDirectory()
        let apps = try Self.ipa("lab", in: directory, name: "apps.ipa")
        let auth = try directory.write("users", try Self.sha512Line("ann", "s3cret") + "\n")
        let daemon = try Daemon(Self.pins + ["--policy", apps, "--auth-file", auth, "--admin", "127.0.0.1:0"])
        let url = "http://legacy.example.com:\(origin.httpPort)/small"
        #expect(try Self.curlStatus(daemon, ["-U", "ann:s3cret", "-A", "Lab/1", url]) == "200")

        // The same path now holds another build (full ATS), and ann's password changed.
        _ = try Self.ipa("other", in: directory, name: "apps.ipa")
        try directory.write("users", try Self.sha512Line("ann", "n3w") + "\n")
        try daemon.reload()
        #expect(try Self.curlStatus(daemon, ["-U", "ann:s3cret", url]) == "407")
        #expect(try Self.curlStatus(daemon, ["-U", "ann:n3w", url]) == "403")

        // A broken auth file keeps the running set.
        try directory.write("users", "ann:{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=\n")
        try daemon.reload(expecting: "reload failed")
        #expect(daemon.process.stderr.contains("users:1: user 'ann': SHA-1 hashes are not accepted"), "\(daemon.process.stderr)")
        #expect(try Self.curlStatus(daemon, ["-U", "ann:n3w", url]) == "403")

        let metrics = try daemon.admin("/metrics")
        #expect(metrics.contains("atsgate_decisions_total{app=\"\(Self.lab)\",action=\"allow\",reason=\"\",enforced=\"true\"} 1\n"), "\(metrics)")
        #expect(metrics.contains("atsgate_decisions_total{app=\"\(Self.other)\",action=\"block\",reason=\"cleartext-http\",enforced=\"true\"} 2\n"))
        #expect(metrics.contains("atsgate_decisions_total{app=\"\",action=\"block\",reason=\"auth-required\",enforced=\"true\"} 1\n"))
        let records = try Self.stop(daemon, expected: 4)
        #expect(records.map { $0["app"] as? String ?? "-" } == [Self.lab, "-", Self.other, Self.other])
    }

    // MARK: check and lint

    @Test func checkAndLintReadTheBundlesOfAnIPA() throws {
        let directory = try TemporaryDirectory()
        let lab = try Self.ipa("lab", in: directory)
        let check = try Atsgate.run(["check", "--policy", lab, "http://legacy.example.com/"])
        #expect(check.status == 0 && check.stdout.contains("\"exception\":\"legacy.example.com\""), "\(check.stdout)")
        let lint = try Atsgate.run(["lint", "--format", "json", lab])
        #expect(lint.status == 1, "the extension's NSAllowsArbitraryLoads is a high finding")
        #expect(lint.stdout.contains("\"Payload/Lab.app.NSAppTransportSecurity.NSExceptionDomains.legacy.example.com.NSExceptionAllowsInsecureHTTPLoads\""),
                "\(lint.stdout)")
        #expect(lint.stdout.contains("\"Payload/Lab.app/PlugIns/Share.appex.NSAppTransportSecurity.NSAllowsArbitraryLoads\""))
        let sarif = try Atsgate.run(["lint", "--format", "sarif", lab])
        #expect(sarif.stdout.contains("Payload/Lab.app/PlugIns/Share.appex.NSAppTransportSecurity.NSAllowsArbitraryLoads"))
        #expect(sarif.stdout.contains("\"uri\": \"\(lab)\""), "the location is the .ipa as given")
        let broken = try Atsgate.run(["lint", try Self.ipa("escape", in: directory)])
        #expect(broken.status == 2 && broken.stderr.contains("escapes the archive"))
    }

    @Test func everyBundleOfAnIPAOrAnAppDirectoryHasItsOwnPolicy() throws {
        let directory = try TemporaryDirectory()
        let archive = try Self.ipa("full", in: directory)
        let app = try Self.ipa("appdir", in: directory, name: "Full.app")
        let bundles = ["Payload/Full.app", "Payload/Full.app/Extensions/Intents.appex", "Payload/Full.app/Watch/FullWatch.app",
                       "Payload/Full.app/Watch/FullWatch.app/PlugIns/Complication.appex", "Payload/Full.app/AppClips/Clip.app"]
        for path in [archive, app] {
            let lint = try Atsgate.run(["lint", "--format", "json", path])
            let found = lint.stdout.matches(of: /"keyPath" *: *"([^"]+)\.NSAppTransportSecurity\.NSAllowsArbitraryLoads"/).map { String($0.1) }
            #expect(found.sorted() == bundles.sorted(), "\(path): \(lint.stdout.prefix(600))")
            let daemon = try Daemon(["--policy", path, "--route", "agent:Watch=com.example.full.watchkitapp.complication"])
            #expect(daemon.process.stderr.contains("and 4 more"), "\(daemon.process.stderr)")
            _ = try daemon.stop(expected: 0)
        }
    }

    // MARK: bad input

    @Test(arguments: [
        ("corrupt", "not a valid zip archive"),
        ("noapp", "no app in it (expected Payload/NAME.app/Info.plist)"),
        ("escape", "entry 'Payload/../../evil.sh' escapes the archive"),
        ("bomb", "declares 4194304 bytes, over the Info.plist limit"),
        ("liar", "inflates past the Info.plist limit"),
    ])
    func defectiveArchivesAreRefusedNamingTheFile(kind: String, problem: String) throws {
        let directory = try TemporaryDirectory()
        let path = try Self.ipa(kind, in: directory)
        for arguments in [["run", "--listen", "127.0.0.1:0", "--policy", path], ["check", "--policy", path, "http://a.example/"]] {
            let run = try Atsgate.run(arguments)
            #expect(run.status != 0)
            let lines = run.stderr.split(separator: "\n")
            #expect(lines.count == 1, "one line: \(run.stderr)")
            #expect(run.stderr.hasPrefix("atsgate: \(path): ") && run.stderr.contains(problem), "\(run.stderr)")
        }
    }

    @Test func badAuthFilesRoutesAndDuplicateIDsStopTheStart() throws {
        let directory = try TemporaryDirectory()
        let lab = try Self.ipa("lab", in: directory)
        let cases: [([String], String)] = [
            (["--auth-file", try directory.write("md5", "ok:$6$salt$abc\nold:$apr1$abc$def\n")],
             "md5:2: user 'old': MD5 hashes are not accepted"),
            (["--auth-file", try directory.write("plain", "pat:secret\n")], "plain:1: user 'pat': plain-text passwords"),
            (["--policy", lab, "--route", "agent:Lab=com.example.nope"], "no policy has the ID 'com.example.nope'"),
            (["--policy", lab, "--unrouted", "com.example.gone"], "--unrouted: no policy has the ID 'com.example.gone'"),
            (["--policy", lab, "--policy", lab], "duplicate policy ID 'com.example.lab'"),
            (["--policy", "a=" + (try directory.write("a.json", "{}")), "--policy", "a=" + (try directory.write("b.json", "{}"))],
             "duplicate policy ID 'a'"),
            (["--route", "planet:mars=embedded"], "expected user:NAME, client:CIDR, port:N or agent:NAME"),
        ]
        for (arguments, problem) in cases {
            let run = try Atsgate.run(["run", "--listen", "127.0.0.1:0"] + arguments)
            #expect(run.status != 0 && run.stderr.contains(problem), "\(arguments): \(run.stderr)")
        }
    }
}
