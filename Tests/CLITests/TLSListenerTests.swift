import Foundation
import Glibc
import Testing
import TestSupport

/// TLS to the proxy (`--listen-tls`, `--listen-cert`, `--listen-key`): real clients that speak TLS to
/// their proxy (curl's --proxy https://, headless Chromium's --proxy-server=https://, openssl
/// s_client, Python's ssl), checking the proxy's certificate against the test CA; then the same
/// proxy protocol inside (CONNECT, forwarding, 407, the PAC file), the certificate re-read on SIGHUP,
/// and the clients that never finish a handshake.
@Suite(.serialized) struct TLSListenerTests {
    static let pki = TestPKI.shared

    /// A daemon with a TLS listener beside its plain one, presenting a copy of a test leaf (its own
    /// files, which a test may break or rotate).
    final class Listener {
        let daemon: Daemon
        let directory: TemporaryDirectory
        let certificate: String
        let key: String
        let tlsPort: Int

        init(leaf: String = "good-rsa", _ extra: [String] = []) throws {
            directory = try TemporaryDirectory()
            certificate = directory.url.appendingPathComponent("proxy.pem").path
            key = directory.url.appendingPathComponent("proxy.key").path
            try Listener.install(leaf: leaf, certificate: certificate, key: key)
            daemon = try Daemon(["--listen-tls", "127.0.0.1:0", "--listen-cert", certificate, "--listen-key", key] + extra)
            let line = daemon.process.stderr.split(separator: "\n").first { $0.contains("listening on ") } ?? ""
            guard let match = line.firstMatch(of: /127\.0\.0\.1:(\d+) \(TLS\)/), let port = Int(match.1) else {
                throw HarnessError("no TLS port in: \(line)")
            }
            tlsPort = port
        }

        /// Copies a test leaf (with its chain) and its key over the files the daemon reads.
        static func install(leaf: String, certificate: String, key: String) throws {
            for (source, target) in [(try pki.path("\(leaf)-chain.pem"), certificate), (try pki.path("\(leaf).key"), key)] {
                try? FileManager.default.removeItem(atPath: target)
                try FileManager.default.copyItem(atPath: source, toPath: target)
            }
        }

        /// curl with the TLS listener as its proxy, trusting the test CA for it.
        func curl(_ arguments: [String]) throws -> AtsgateRun {
            try Subprocess.curl(["--proxy", "https://127.0.0.1:\(tlsPort)", "--proxy-cacert", try pki.path("ca.pem")]
                                + arguments)
        }
    }

    // MARK: curl

    /// The point of TLS to the proxy: the login travels encrypted. Forwarding and CONNECT both, the
    /// 407 that asks for it, and the inner TLS handshake still watched (and judged) by the proxy.
    @Test func curlWithProxyCredentialsForwardsAndTunnelsOverTheTLSListener() throws {
        let origin = try Origin()
        let secure = try TLSTestOrigin(leaf: "good-rsa", arguments: [])
        let directory = try TemporaryDirectory()
        let auth = try directory.write("users", try DeviceLabTests.sha512Line("lab", "hunter2") + "\n")
        let listener = try Listener(["--auth-file", auth, "--connect-port", "\(secure.port)",
                                     "--ca-file", try Self.pki.path("ca.pem")])
        let page = "http://127.0.0.1:\(origin.httpPort)/small"

        let refused = try listener.curl(["-o", "/dev/null", "-w", "%{http_code}", page])
        #expect(refused.stdout == "407", "\(refused.stderr)")
        let forwarded = try listener.curl(["--proxy-user", "lab:hunter2", page])
        #expect(forwarded.stdout == String(repeating: "a", count: 100), "\(forwarded.stderr)")
        let tunneled = try listener.curl(["--proxy-user", "lab:hunter2", "--cacert", try Self.pki.path("ca.pem"),
                                          "https://localhost:\(secure.port)/"])
        #expect(tunneled.stdout == "ok from tls_origin\n", "\(tunneled.stderr)")
        // The plain listener beside it serves as before, and its records carry no client_tls.
        #expect(try Subprocess.curl(["-x", listener.daemon.proxy, "--proxy-user", "lab:hunter2", page]).stdout.count == 100)

        let (_, records) = try listener.daemon.stop(expected: 4)
        #expect(records.count == 4)
        let overTLS = records.filter { $0["client_tls"] as? Bool == true }
        #expect(overTLS.count == 3, "\(records)")
        #expect(records.filter { $0["client_tls"] != nil }.count == 3, "client_tls is written only when true")
        #expect(overTLS.first { $0["reason"] as? String == "auth-required" }?["status"] as? Int == 407)
        let get = try #require(overTLS.first { $0["method"] as? String == "GET" && $0["action"] as? String == "allow" })
        #expect(get["proxy_user"] as? String == "lab")
        #expect(get["status"] as? Int == 200)
        let connect = try #require(overTLS.first { $0["method"] as? String == "CONNECT" })
        #expect(connect["proxy_user"] as? String == "lab")
        #expect(connect["tls_version"] as? String == "TLSv1.3", "the tunnel's own handshake was watched: \(connect)")
        #expect(connect["sni"] as? String == "localhost")
        #expect((connect["cert_subject"] as? String ?? "").contains("localhost good-rsa"))
    }

    /// Inside a TLS client's tunnel the origin's handshake is judged exactly as in a plain one: a
    /// TLS 1.0 server is refused with a protocol_version alert, which reaches the client through the
    /// outer TLS.
    @Test func aRefusedInnerHandshakeIsAnAlertThroughTheOuterTLS() throws {
        let origin = try TLSTestOrigin(leaf: "good-rsa", arguments: ["--max", "TLSv1"])
        let listener = try Listener(["--local-network", "192.0.2.0/24", "--ca-file", try Self.pki.path("ca.pem"),
                                     "--connect-port", "\(origin.port)"])
        let run = try listener.curl(["-k", "--tlsv1.0", "--ciphers", "DEFAULT:@SECLEVEL=0", "https://127.0.0.1:\(origin.port)/"])
        #expect(run.status != 0)
        #expect(run.stderr.contains("alert protocol version"), "the client hears why: \(run.stderr)")
        let (_, records) = try listener.daemon.stop()
        let record = try #require(records.first)
        #expect(record["reason"] as? String == "tls-version")
        #expect(record["action"] as? String == "block")
        #expect(record["client_tls"] as? Bool == true)
    }

    /// A client outside --allow-client on the TLS listener gets an access_denied alert (what a client
    /// waiting for a ServerHello can read), and no handshake is spent on it.
    @Test func aClientOutsideAllowClientGetsAnAccessDeniedAlert() throws {
        let listener = try Listener(["--allow-client", "10.0.0.0/8"])
        let run = try listener.curl(["http://127.0.0.1:9/"])
        #expect(run.status != 0)
        #expect(run.stderr.contains("alert access denied"), "\(run.stderr)")
        let (_, records) = try listener.daemon.stop()
        #expect(records.first?["reason"] as? String == "client-not-allowed")
        #expect(records.first?["client_tls"] as? Bool == true)
    }

    /// The PAC file asked of the TLS listener names it as an HTTPS proxy.
    @Test func thePACFileOfTheTLSListenerSaysHTTPS() throws {
        let listener = try Listener()
        let run = try Subprocess.curl(["--cacert", try Self.pki.path("ca.pem"), "https://127.0.0.1:\(listener.tlsPort)/proxy.pac"])
        #expect(run.stdout.contains("return \"HTTPS 127.0.0.1:\(listener.tlsPort)\";"), "\(run.stdout) \(run.stderr)")
        _ = try listener.daemon.stop()
    }

    /// A TLS client that is done sending half-closes; the origin's answer still comes back through
    /// the user-space relay, then the proxy's close_notify ends the stream.
    @Test func aHalfCloseCrossesTheTLSClientsRelay() throws {
        let origin = try Origin()
        let listener = try Listener(["--connect-port", "\(origin.eofPort)"])
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/tls_proxy_client.py").path
        let run = try Subprocess.run(Origin.python, [script, "--port", "\(listener.tlsPort)", "--cafile",
                                                     try Self.pki.path("ca.pem"), "--connect", "127.0.0.1:\(origin.eofPort)",
                                                     "--bytes", "300000"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout == "got 300000 bytes\n")
        let (_, records) = try listener.daemon.stop()
        #expect(records.first?["bytes_up"] as? Int == 300_000)
        #expect(records.first?["bytes_down"] as? Int == "got 300000 bytes\n".utf8.count)
        #expect(records.first?["client_tls"] as? Bool == true)
    }

    // MARK: Chromium

    /// Headless Chromium with --proxy-server=https://: it refuses a proxy whose certificate it cannot
    /// check, and with the proxy's key pinned as trusted (--ignore-certificate-errors-spki-list, which
    /// trusts that key only) it forwards a plain page and tunnels an https one through the proxy.
    @Test func chromiumUsesTheTLSListenerAndChecksItsCertificate() throws {
        let browser = try #require(LivePageTests.chromium, "chromium is not installed (scripts/install-deps installs it)")
        let origin = try Origin()
        let secure = try TLSTestOrigin(leaf: "good-ec", arguments: [])
        let listener = try Listener(["--connect-port", "\(secure.port)", "--ca-file", try Self.pki.path("ca.pem")])
        let page = "http://127.0.0.1:\(origin.httpPort)/small"
        func dump(_ url: String, trusting keys: [String]) throws -> (dom: String, log: String) {
            let profile = try TemporaryDirectory()
            var arguments = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                             "--disable-background-networking", "--disable-component-update", "--disable-sync",
                             "--user-data-dir=\(profile.url.path)", "--proxy-server=https://127.0.0.1:\(listener.tlsPort)",
                             // Chromium sends loopback destinations around the proxy unless told not to.
                             "--proxy-bypass-list=<-loopback>", "--virtual-time-budget=3000", "--dump-dom", url]
            if !keys.isEmpty { arguments.insert("--ignore-certificate-errors-spki-list=" + keys.joined(separator: ","), at: 0) }
            let run = try Subprocess.run(browser, arguments, timeout: 90)
            return (run.stdout, run.stderr)
        }

        let untrusted = try dump(page, trusting: [])
        #expect(!untrusted.dom.contains("aaaa"), "no page without trust in the proxy's certificate")
        #expect(untrusted.log.contains("ERR_PROXY_CERTIFICATE_INVALID"), "\(untrusted.log.suffix(800))")

        let keys = [try Self.pki.spkiHash("good-rsa.pem"), try Self.pki.spkiHash("good-ec.pem")]
        let forwarded = try dump(page, trusting: keys)
        #expect(forwarded.dom.contains(String(repeating: "a", count: 100)), "\(forwarded.dom) \(forwarded.log.suffix(800))")
        let tunneled = try dump("https://127.0.0.1:\(secure.port)/", trusting: keys)
        #expect(tunneled.dom.contains("ok from tls_origin"), "\(tunneled.dom) \(tunneled.log.suffix(800))")

        try listener.daemon.waitForRecords(3)
        let (_, records) = try listener.daemon.stop(expected: 3)
        let ours = records.filter { $0["host"] as? String == "127.0.0.1" || $0["method"] as? String == "-" }
        #expect(ours.allSatisfy { $0["client_tls"] as? Bool == true }, "\(ours)")
        #expect(ours.contains { $0["reason"] as? String == "client-tls" }, "Chromium's refusal is logged: \(ours)")
        #expect(ours.contains { $0["method"] as? String == "GET" && $0["port"] as? Int == origin.httpPort
                                && $0["status"] as? Int == 200 }, "\(ours)")
        #expect(ours.contains { $0["method"] as? String == "CONNECT" && $0["port"] as? Int == secure.port
                                && $0["action"] as? String == "allow" && $0["cert_key"] as? String == "EC-P-256" }, "\(ours)")
    }

    // MARK: files and reloads

    /// A wrong or missing certificate or key stops the start with exit status 2 and the file's name.
    @Test(arguments: [
        ("missing.pem", "good-rsa.key", "--listen-cert DIR/missing.pem: no such file"),
        ("good-rsa.key", "good-rsa.key", "--listen-cert DIR/good-rsa.key: holds no PEM certificate"),
        ("good-rsa-chain.pem", "missing.key", "--listen-key DIR/missing.key: no such file"),
        ("good-rsa-chain.pem", "good-ec.key", "--listen-key DIR/good-ec.key: is not the private key of the certificate in DIR/good-rsa-chain.pem"),
    ])
    func aWrongOrMissingFileExitsTwoNamingIt(certificate: String, key: String, message: String) throws {
        let directory = try Self.pki.path("")
        let run = try Atsgate.run(["run", "--listen", "127.0.0.1:0", "--listen-tls", "127.0.0.1:0",
                                   "--listen-cert", directory + certificate, "--listen-key", directory + key], timeout: 30)
        #expect(run.status == 2)
        let expected = message.replacingOccurrences(of: "DIR/", with: directory)
        #expect(run.stderr.contains(expected), "\(run.stderr)")
    }

    @Test(arguments: [
        (["--listen-tls", "127.0.0.1:0"], "--listen-tls needs --listen-cert FILE and --listen-key FILE"),
        (["--listen-cert", "x.pem"], "--listen-cert needs --listen-key FILE"),
        (["--listen-key", "x.key"], "--listen-key needs --listen-cert FILE"),
    ])
    func theFlagsGoTogether(arguments: [String], message: String) throws {
        let run = try Atsgate.run(["run", "--listen", "127.0.0.1:0"] + arguments, timeout: 30)
        #expect(run.status == 2)
        #expect(run.stderr.contains(message), "\(run.stderr)")
    }

    /// SIGHUP re-reads the pair (here from config file keys). A broken certificate, or a key of
    /// another certificate, is refused with a log line saying so, and new connections keep being
    /// given the last good pair; a good new pair is given to new connections while a tunnel opened
    /// before keeps working.
    @Test func sighupRotatesThePairKeepsTheLastGoodOneAndOpenTunnels() throws {
        let origin = try Origin()
        let directory = try TemporaryDirectory()
        let certificate = directory.url.appendingPathComponent("proxy.pem").path
        let key = directory.url.appendingPathComponent("proxy.key").path
        try Listener.install(leaf: "good-rsa", certificate: certificate, key: key)
        let config = try directory.write("atsgate.conf", """
            listen-tls = 127.0.0.1:0
            listen-cert = \(certificate)
            listen-key = \(key)
            connect-port = \(origin.httpPort)

            """)
        let daemon = try Daemon(["--config", config])
        let line = daemon.process.stderr.split(separator: "\n").first { $0.contains("listening on ") } ?? ""
        let tlsPort = try #require(line.firstMatch(of: /127\.0\.0\.1:(\d+) \(TLS\)/).flatMap { Int($0.1) }, "\(line)")
        #expect(line.contains("with the certificate of CN=localhost good-rsa"), "\(line)")
        let probe = Probe(port: tlsPort)
        #expect(try probe.subject().contains("CN = localhost good-rsa"))

        // A tunnel through the TLS listener, opened before any reload, with one exchange in it.
        let tunnel = try BackgroundProcess("/usr/bin/openssl", ["s_client", "-connect", "127.0.0.1:\(tlsPort)", "-CAfile",
                                                                try Self.pki.path("ca.pem"), "-verify_return_error", "-quiet"])
        let get = "GET /small HTTP/1.1\r\nHost: 127.0.0.1:\(origin.httpPort)\r\n\r\n"
        tunnel.send("CONNECT 127.0.0.1:\(origin.httpPort) HTTP/1.1\r\nHost: 127.0.0.1:\(origin.httpPort)\r\n\r\n")
        try tunnel.wait { out, _ in out.contains("200 Connection Established") }
        tunnel.send(get)
        try tunnel.wait { out, _ in out.components(separatedBy: "HTTP/1.1 200 OK").count == 2 }

        // A file that holds no certificate: refused, logged, the last good pair stays.
        try "not a certificate\n".write(toFile: certificate, atomically: true, encoding: .utf8)
        kill(daemon.process.process.processIdentifier, SIGHUP)
        try daemon.process.wait { _, err in err.contains("reload failed") }
        #expect(daemon.process.stderr.contains(
            "reload failed, keeping configuration 1: --listen-cert \(certificate): holds no PEM certificate"), "\(daemon.process.stderr)")
        #expect(try probe.subject().contains("CN = localhost good-rsa"), "the last good pair is still given")

        // A certificate with the key of another: refused the same way.
        try Listener.install(leaf: "good-ec", certificate: certificate, key: key)
        try FileManager.default.removeItem(atPath: key)
        try FileManager.default.copyItem(atPath: try Self.pki.path("good-rsa.key"), toPath: key)
        kill(daemon.process.process.processIdentifier, SIGHUP)
        try daemon.process.wait { _, err in err.components(separatedBy: "reload failed").count == 3 }
        #expect(daemon.process.stderr.contains("--listen-key \(key): is not the private key of the certificate in \(certificate)"))
        #expect(try probe.subject().contains("CN = localhost good-rsa"))

        // The new pair: new connections get it; the open tunnel goes on with its own.
        try Listener.install(leaf: "good-ec", certificate: certificate, key: key)
        kill(daemon.process.process.processIdentifier, SIGHUP)
        try daemon.process.wait { _, err in err.contains("new TLS connections get the certificate of CN=localhost good-ec") }
        #expect(try probe.subject().contains("CN = localhost good-ec"))
        tunnel.send(get)
        try tunnel.wait { out, _ in out.components(separatedBy: "HTTP/1.1 200 OK").count == 3 }
        tunnel.stop()
        let (_, records) = try daemon.stop(expected: 1)
        let connect = try #require(records.first { $0["method"] as? String == "CONNECT" })
        #expect(connect["client_tls"] as? Bool == true)
        #expect((connect["bytes_down"] as? Int ?? 0) > 2 * 100, "both answers went down the tunnel: \(connect)")
    }

    /// New connections to the TLS listener, each asked for the certificate it is given.
    struct Probe {
        let port: Int

        func subject() throws -> String {
            let run = try Subprocess.run("/usr/bin/openssl", ["s_client", "-connect", "127.0.0.1:\(port)",
                                                              "-CAfile", try TestPKI.shared.path("ca.pem")], stdin: "")
            guard let subject = run.stdout.firstMatch(of: /subject=(.*)/)?.1 else {
                throw HarnessError("s_client showed no certificate: \(run.stdout) \(run.stderr)")
            }
            return String(subject)
        }
    }

    // MARK: clients that never finish a handshake

    /// Clients that stall mid-handshake (half a ClientHello; a whole one, then silence after the
    /// server's flight), send garbage, or send plain HTTP to the TLS port: while the stalled ones are
    /// held, more of them than the handshake pool has threads, a plain client and a TLS client are
    /// served as usual; then each bad client is closed within the head timeout, with a record.
    @Test func stalledGarbageAndPlainClientsAreClosedWithRecordsAndDelayNoOne() throws {
        let origin = try Origin()
        let listener = try Listener(["--head-timeout", "10"])
        let hello = Self.firstRecord(CapturedHandshakes.curl.clientToServer)
        var stalled: [RawClient] = []
        for _ in 0..<4 {
            let client = try RawClient(port: listener.tlsPort, timeout: 40)
            client.send(Array(hello.prefix(hello.count / 2)))
            stalled.append(client)
        }
        for _ in 0..<4 {
            let client = try RawClient(port: listener.tlsPort, timeout: 40)
            client.send(hello)
            // The server's flight comes back (a step ran on the pool); the client never answers it.
            #expect(Self.readSome(client.fd).first == 0x16, "a handshake record from the proxy")
            stalled.append(client)
        }
        let garbage = try RawClient(port: listener.tlsPort, timeout: 40)
        garbage.send(Array("\u{01}\u{02}\u{03}\u{04}not tls at all".utf8))
        let badRecord = try RawClient(port: listener.tlsPort, timeout: 40)
        badRecord.send([0x16, 0x03, 0x01, 0x00, 0x08, 1, 2, 3, 4, 5, 6, 7, 8])
        let plain = try RawClient(port: listener.tlsPort, timeout: 40)
        plain.send("GET http://127.0.0.1:\(origin.httpPort)/small HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")

        // Meanwhile: a plain client and a TLS client, each served.
        let page = "http://127.0.0.1:\(origin.httpPort)/small"
        #expect(try Subprocess.curl(["-x", listener.daemon.proxy, page]).stdout.count == 100)
        let overTLS = try listener.curl([page])
        #expect(overTLS.stdout.count == 100, "\(overTLS.stderr)")
        #expect(stalled.allSatisfy { Self.isOpen($0.fd) }, "the stalled handshakes were still held meanwhile")

        #expect(plain.readAll().hasPrefix("HTTP/1.1 400 "), "a plain request is told in cleartext")
        for client in [garbage, badRecord] + stalled {
            #expect(Self.readUntilClosed(client.fd), "each bad client is closed, not left open")
        }
        let (_, records) = try listener.daemon.stop(expected: 13)
        func count(_ reason: String) -> Int { records.filter { $0["reason"] as? String == reason }.count }
        #expect(count("client-timeout") == 8, "\(records)")
        #expect(records.first { $0["reason"] as? String == "client-timeout" }?["message"] as? String
                == "the TLS handshake with the proxy did not complete in 10 s")
        #expect(count("client-tls") == 2)
        #expect(records.contains { ($0["message"] as? String ?? "").hasPrefix("not a TLS handshake: the first byte is 0x01") })
        #expect(count("bad-request") == 1)
        #expect(records.contains { ($0["message"] as? String ?? "").hasPrefix("a plain HTTP request on the TLS listener") })
        #expect(records.filter { $0["action"] as? String == "allow" }.count == 2)
        #expect(records.filter { $0["client_tls"] as? Bool == true }.count == 12, "all but the plain listener's client")
    }

    /// The first TLS record of captured client bytes (the ClientHello).
    static func firstRecord(_ bytes: [UInt8]) -> [UInt8] {
        let length = Int(bytes[3]) << 8 | Int(bytes[4])
        return Array(bytes[..<(5 + length)])
    }

    /// What arrives first (up to 16 KiB), waiting up to the socket's receive timeout.
    static func readSome(_ fd: Int32) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: 16384)
        let count = recv(fd, &buffer, buffer.count, 0)
        return count > 0 ? Array(buffer[..<count]) : []
    }

    /// Whether the peer has not closed: nothing to read now, and no end.
    static func isOpen(_ fd: Int32) -> Bool {
        var byte: UInt8 = 0
        let count = recv(fd, &byte, 1, Int32(MSG_DONTWAIT | MSG_PEEK))
        return count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)
    }

    /// Reads until the peer closes (true) or the receive timeout passes (false).
    static func readUntilClosed(_ fd: Int32) -> Bool {
        var buffer = [UInt8](repeating: 0, count: 16384)
        while true {
            let count = recv(fd, &buffer, buffer.count, 0)
            if count > 0 { continue }
            return count == 0 || errno == ECONNRESET
        }
    }
}
