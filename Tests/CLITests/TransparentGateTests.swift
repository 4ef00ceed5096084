import Foundation
import Glibc
import Testing
import TestSupport

/// The transparent gate end to end (issue 30): a lab device with no proxy setting behind the shipped
/// nftables ruleset (deploy/gateway/atsgate-gateway.nft) reaches its origins only through atsgate, and
/// every connection it makes (TCP and QUIC) is judged by the proxy path's rules and recorded with its
/// path and original destination. Real clients: curl, headless Chromium, aioquic. Each test builds its
/// own lab (GatewayBench) and takes a few seconds.
@Suite(.serialized) struct TransparentGateTests {
    @Test func tlsFromADeviceWithNoProxySettingIsJudgedAsACONNECTToItsServerName() throws {
        let bench = try GatewayBench()
        let good = try bench.curl(["https://good.test/"])
        #expect(good.status == 0 && good.stdout.contains("lab origin: GET / HTTP/1.1 host=good.test served=good"), "\(good.stderr)")
        // TLS 1.0 only: refused at the ServerHello with the CONNECT path's alert.
        let old = try bench.curl(["--tlsv1.0", "--ciphers", "DEFAULT:@SECLEVEL=0", "https://tls10.test/"])
        #expect(old.status != 0 && old.stderr.contains("alert protocol version"), "\(old.stderr)")
        // The certificate names another host.
        let wrong = try bench.curl(["--insecure", "https://wrong.test/"])
        #expect(wrong.status != 0, "\(wrong.stdout)")
        // IPv6, and no server name at all (curl sends none for an address): the address is the host.
        let v6 = try bench.curl(["-6", "https://[\(GatewayBench.goodV6)]/"])
        #expect(v6.status == 0 && v6.stdout.contains("host=[\(GatewayBench.goodV6)]"), "\(v6.stderr)")

        let records = try bench.records(atLeast: 4)
        let byHost = Dictionary(records.map { ($0["host"] as? String ?? "-", $0) }, uniquingKeysWith: { first, _ in first })
        let allowed = try #require(byHost["good.test"])
        #expect(allowed["path"] as? String == "transparent")
        #expect(allowed["original_dst"] as? String == "\(GatewayBench.good):443")
        #expect(allowed["sni"] as? String == "good.test")
        #expect(allowed["action"] as? String == "allow" && allowed["reason"] is NSNull)
        #expect(allowed["tls_version"] as? String == "TLSv1.3")
        #expect(allowed["upstream_ip"] as? String == GatewayBench.good, "the original address, never another")
        #expect(allowed["device"] as? String == "phone" && allowed["client"] as? String != nil)
        #expect(allowed["method"] as? String == "-" && allowed["scheme"] as? String == "https" && allowed["port"] as? Int == 443)
        let refused = try #require(byHost["tls10.test"])
        #expect(refused["action"] as? String == "block" && refused["reason"] as? String == "tls-version", "\(refused)")
        #expect(refused["path"] as? String == "transparent" && refused["original_dst"] as? String == "\(GatewayBench.tls10):443")
        let misnamed = try #require(byHost["wrong.test"])
        #expect(misnamed["action"] as? String == "block" && misnamed["reason"] as? String == "certificate-hostname", "\(misnamed)")
        let address = try #require(byHost[GatewayBench.goodV6])
        #expect(address["class"] as? String == "ip" && address["sni"] == nil)
        #expect(address["original_dst"] as? String == "[\(GatewayBench.goodV6)]:443" && address["action"] as? String == "allow")
    }

    @Test func plainHTTPGetsTheProxyPathsAnswersAndIsForwardedToItsOriginalDestination() throws {
        let files = try TemporaryDirectory()
        let policy = try files.write("policy.json", """
            {"NSExceptionDomains": {"allowed.test": {"NSExceptionAllowsInsecureHTTPLoads": true}}}
            """)
        let bench = try GatewayBench(["--policy", "lab=\(policy)", "--head-timeout", "2"])
        // Blocked: the proxy path's 403, with its headers.
        let blocked = try bench.curl(["--include", "http://plain.test/page"])
        #expect(blocked.stdout.hasPrefix("HTTP/1.1 403 "), "\(blocked.stdout)\(blocked.stderr)")
        #expect(blocked.stdout.contains("X-ATS-Reason: cleartext-http"))
        // Allowed by the app's exception: forwarded to the address the device was going to, its Host
        // kept, although the gateway's resolver does not know the name.
        let allowed = try bench.curl(["--include", "--resolve", "allowed.test:80:\(GatewayBench.good)", "http://allowed.test/x?y=1"])
        #expect(allowed.stdout.contains("lab origin: GET /x?y=1 HTTP/1.1 host=allowed.test served=http"), "\(allowed.stdout)\(allowed.stderr)")
        // Two requests on one kept-alive connection: both judged.
        let two = try bench.curl(["--resolve", "allowed.test:80:\(GatewayBench.good)", "http://allowed.test/1", "http://allowed.test/2"])
        #expect(two.stdout.contains("GET /1 ") && two.stdout.contains("GET /2 "), "\(two.stdout)\(two.stderr)")
        let records = try bench.records(atLeast: 4)
        let block = try #require(records.first { $0["host"] as? String == "plain.test" })
        #expect(block["action"] as? String == "block" && block["reason"] as? String == "cleartext-http" && block["status"] as? Int == 403)
        #expect(block["path"] as? String == "transparent" && block["original_dst"] as? String == "\(GatewayBench.good):80")
        #expect(block["app"] as? String == "lab" && block["method"] as? String == "GET")
        let forwarded = records.filter { $0["host"] as? String == "allowed.test" }
        #expect(forwarded.count == 3)
        #expect(forwarded.allSatisfy { $0["action"] as? String == "allow" && $0["upstream_ip"] as? String == GatewayBench.good
                                       && $0["path"] as? String == "transparent" && $0["status"] as? Int == 200 })
        #expect(forwarded.allSatisfy { $0["user_agent"] as? String != nil }, "HTTP carries a User-Agent, so agent routes apply")
    }

    @Test func underCleartextRedirectPlainHTTPGetsThe308() throws {
        let bench = try GatewayBench(["--cleartext", "redirect"])
        let redirected = try bench.curl(["--include", "http://plain.test/page?q=1"])
        #expect(redirected.stdout.hasPrefix("HTTP/1.1 308 "), "\(redirected.stdout)\(redirected.stderr)")
        #expect(redirected.stdout.contains("Location: https://plain.test/page?q=1\r\n"))
        // Followed, the https URL is the transparent TLS path.
        let followed = try bench.curl(["--location", "--resolve", "plain.test:443:\(GatewayBench.good)", "http://plain.test/"])
        #expect(followed.status != 0 || followed.stdout.contains("served=good"), "\(followed.stderr)")
        let record = try #require(try bench.records(atLeast: 1).first { $0["status"] as? Int == 308 })
        #expect(record["action"] as? String == "upgrade" && record["path"] as? String == "transparent" && record["host"] as? String == "plain.test")
    }

    @Test func theExplicitProxyPathStillWorksAndADeviceThatUsesBothIsOutsideTheSystemProxyInTheReport() throws {
        let bench = try GatewayBench()
        // The same device: once through the proxy it was given, twice around it.
        let proxied = try bench.curl(["--proxy", "http://\(GatewayBench.proxy)", "https://good.test/"])
        #expect(proxied.status == 0 && proxied.stdout.contains("served=good"), "\(proxied.stderr)")
        #expect(try bench.curl(["https://good.test/"]).status == 0)
        #expect(try bench.curl(["https://[\(GatewayBench.goodV6)]/"]).status == 0)
        let records = try bench.records(atLeast: 3)
        let proxy = try #require(records.first { $0["method"] as? String == "CONNECT" })
        #expect(proxy["path"] as? String == "proxy" && proxy["original_dst"] is NSNull && proxy["action"] as? String == "allow")
        #expect(records.filter { $0["path"] as? String == "transparent" }.count == 2)
        let log = try bench.directory.write("decisions.log", records.map { record in
            String(decoding: try JSONSerialization.data(withJSONObject: record), as: UTF8.self)
        }.joined(separator: "\n") + "\n")
        let report = try Atsgate.run(["report", log])
        #expect(report.stdout.contains("device phone: outside the system proxy: 2 connections to 2 destinations (an app or API "
                                       + "that ignores the system proxy, which ATS does not protect): "
                                       + "[\(GatewayBench.goodV6)]:443, good.test:443\n"), "\(report.stdout)\(report.stderr)")
        let json = try Atsgate.run(["report", "--format", "json", log])
        #expect(json.stdout.contains("\"outside_system_proxy\""))
    }

    @Test func anotherProtocolIsClosedAndRecordedAndALoopNeverRelayed() throws {
        let bench = try GatewayBench()
        let line = try bench.lab[.device].call([pythonExecutable, "-c", """
            import socket
            s = socket.create_connection(("\(GatewayBench.good)", 5222), timeout=5)
            s.sendall(b"HELLO xmpp\\r\\n")
            print(repr(s.recv(100)))
            """])
        #expect(line.stdout == "b''\n", "closed without a byte from the origin: \(line.stdout)\(line.stderr)")
        // Straight to the gateway's transparent port: no redirect, so nowhere to go.
        let direct = try bench.lab[.device].call([pythonExecutable, "-c", """
            import socket
            s = socket.create_connection(("\(GatewayLab.gatewayLabIPv4)", \(GatewayBench.transparentPort)), timeout=5)
            s.sendall(b"GET / HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n")
            print(repr(s.recv(100)))
            """])
        #expect(direct.stdout.hasPrefix("b''") || direct.stderr.contains("ConnectionResetError"), "\(direct.stdout)\(direct.stderr)")
        let records = try bench.records(atLeast: 2)
        let other = try #require(records.first { $0["reason"] as? String == "other-protocol" })
        #expect(other["action"] as? String == "block" && other["path"] as? String == "transparent")
        #expect(other["original_dst"] as? String == "\(GatewayBench.good):5222" && other["host"] is NSNull)
        #expect((other["message"] as? String)?.contains("48 45 4c 4c 4f 20 78 6d 70 70 0d 0a (\"HELLO xmpp..\")") == true, "\(other)")
        #expect(other["app"] as? String == "embedded" && other["device"] as? String == "phone")
        let loop = try #require(records.first { $0["reason"] as? String == "transparent-loop" })
        #expect(loop["action"] as? String == "block" && loop["original_dst"] as? String == "\(GatewayLab.gatewayLabIPv4):\(GatewayBench.transparentPort)")
        #expect((loop["message"] as? String)?.contains("no firewall rule redirected it") == true, "\(loop)")
    }

    @Test func withOtherAllowedItIsRelayedAndAServerNameElsewhereIsBlockedUnderSNICheckBlock() throws {
        let bench = try GatewayBench(["--transparent-other", "allow", "--sni-check", "block"])
        let relayed = try bench.lab[.device].call([pythonExecutable, "-c", """
            import socket
            s = socket.create_connection(("\(GatewayBench.good)", 5222), timeout=5)
            s.sendall(b"HELLO xmpp\\r\\n")
            print(repr(s.recv(100)))
            """])
        #expect(relayed.stdout == "b'raw: HELLO xmpp\\r\\n'\n", "\(relayed.stdout)\(relayed.stderr)")
        // alias.test is on the good origin's certificate, but the gateway resolves it elsewhere.
        let forged = try bench.curl(["https://alias.test/"])
        #expect(forged.status != 0 && forged.stderr.contains("alert access denied"), "\(forged.stderr)")
        let records = try bench.records(atLeast: 2)
        let other = try #require(records.first { $0["reason"] as? String == "other-protocol" })
        #expect(other["action"] as? String == "allow" && other["upstream_ip"] as? String == GatewayBench.good)
        #expect((other["message"] as? String)?.hasSuffix("relayed (--transparent-other allow)") == true)
        let mismatch = try #require(records.first { $0["reason"] as? String == "sni-mismatch-address" })
        #expect(mismatch["action"] as? String == "block" && mismatch["sni"] as? String == "alias.test")
        #expect(mismatch["message"] as? String == "the TLS server name alias.test resolves to 198.18.2.99, not to the "
                + "connection's original destination \(GatewayBench.good) (--sni-check block)")
    }

    @Test func underSNICheckReportAServerNameElsewhereIsRecordedAndGoesOn() throws {
        let bench = try GatewayBench()
        let forged = try bench.curl(["https://alias.test/"])
        #expect(forged.status == 0 && forged.stdout.contains("host=alias.test served=good"), "\(forged.stderr)")
        let record = try #require(try bench.records(atLeast: 1).first)
        #expect(record["action"] as? String == "allow" && record["reason"] as? String == "sni-mismatch-address", "\(record)")
        #expect(record["host"] as? String == "alias.test" && record["upstream_ip"] as? String == GatewayBench.good)
        #expect((record["message"] as? String)?.hasSuffix("(--sni-check report)") == true)
        #expect(record["dns_ms"] is NSNull && record["dns_cached"] as? Bool == true, "the name came from --resolve")
    }

    @Test func headlessChromiumLoadsAnHTTPSPageThroughTheGate() throws {
        let browser = try #require(LivePageTests.chromium, "chromium is not installed (scripts/install-deps installs it)")
        let bench = try GatewayBench()
        let profile = try TemporaryDirectory()
        let page = try bench.lab[.device].call([browser, "--headless", "--no-sandbox", "--disable-gpu",
                                                "--user-data-dir=\(profile.url.path)", "--ignore-certificate-errors",
                                                "--host-resolver-rules=MAP good.test \(GatewayBench.good), MAP * ~NOTFOUND",
                                                "--dump-dom", "https://good.test/page"], timeout: 60)
        #expect(page.stdout.contains("lab origin: GET /page HTTP/1.1 host=good.test served=good"), "\(page.stdout)\(page.stderr.suffix(2000))")
        let records = try bench.records(atLeast: 1)
        let load = try #require(records.first { $0["host"] as? String == "good.test" })
        #expect(load["action"] as? String == "allow" && load["path"] as? String == "transparent" && load["sni"] as? String == "good.test")
        #expect(load["pq_offered"] as? Bool == true, "Chromium offers X25519MLKEM768: \(load)")
        #expect(records.allSatisfy { $0["path"] as? String == "transparent" }, "every connection the browser made is recorded")
    }

    @Test func aQUICClientsInitialIsRecordedAndDroppedThenItsTCPFallbackTunnelled() throws {
        let bench = try GatewayBench()
        // aioquic tries QUIC with no proxy setting; nothing answers, as for a client behind the gateway.
        let quic = try bench.lab[.device].call(try QUICClient.command(connect: "\(GatewayBench.good):443", serverName: "good.test",
                                                                      timeout: 1), timeout: 30)
        #expect(quic.stdout.contains("quic: no answer"), "\(quic.stdout)\(quic.stderr)")
        // A long ClientHello in several datagrams, version 2, and IPv6.
        let split = try bench.lab[.device].call(try QUICClient.command(connect: "[\(GatewayBench.goodV6)]:443", serverName: "split.good.test",
                                                                       version: 2, alpnPadding: 30, timeout: 1), timeout: 30)
        #expect(split.stdout.contains("quic: no answer"), "\(split.stderr)")
        // Then TCP, as a browser falls back.
        #expect(try bench.curl(["https://good.test/"]).status == 0)
        let records = try bench.records(atLeast: 3)
        let attempts = records.filter { $0["path"] as? String == "quic" }
        #expect(attempts.count == 2, "one record per attempt, not per retransmission: \(attempts)")
        let attempt = try #require(attempts.first { $0["sni"] as? String == "good.test" })
        #expect(attempt["action"] as? String == "block" && attempt["reason"] as? String == "quic-fallback")
        #expect(attempt["host"] as? String == "good.test" && attempt["port"] as? Int == 443 && attempt["original_dst"] is NSNull)
        #expect(attempt["device"] as? String == "phone" && attempt["app"] as? String == "embedded")
        #expect(attempt["message"] as? String == "QUIC version 1 attempt dropped so that the client falls back to TCP; TCP to "
                + "good.test:443 is judged by its TLS handshake")
        #expect(attempts.contains { $0["sni"] as? String == "split.good.test" && ($0["message"] as? String)?.hasPrefix("QUIC version 2") == true })
        #expect(records.contains { $0["path"] as? String == "transparent" && $0["host"] as? String == "good.test"
                                   && $0["action"] as? String == "allow" })
        let metrics = try bench.metrics()
        #expect(metrics.contains(#"atsgate_quic_datagrams_total{result="client-hello"} 2"#), "\(metrics)")
        #expect(metrics.contains(#"atsgate_transparent_connections_total{path="quic",result="block"} 2"#))
        #expect(metrics.contains(#"atsgate_transparent_connections_total{path="transparent",result="allow"} 1"#))
    }

    @Test func badInputGetsARecordOrACounterAndTheDaemonKeepsServing() throws {
        let bench = try GatewayBench(["--head-timeout", "1"])
        // Datagrams to UDP/443 that are no QUIC Initial: garbage, and a real Initial cut short.
        let initial = CapturedQUICInitials.aioquicVersion1.datagrams[0]
        let cut = initial.prefix(40).map { String(format: "%02x", $0) }.joined()
        try bench.lab[.device].check([pythonExecutable, "-c", """
            import socket
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            for datagram in [b"\\x40garbage", bytes.fromhex("\(cut)"), b"\\xc0" * 1300]:
                s.sendto(datagram, ("\(GatewayBench.good)", 443))
            """])
        // A ClientHello one byte per TCP segment: put together, then judged as usual.
        let split = try bench.lab[.device].call([pythonExecutable, fixturePath("split_hello_client.py"), GatewayBench.good, "443",
                                                 "good.test", bench.ca], timeout: 30)
        #expect(split.stdout == "HTTP/1.1 200 OK\n", "\(split.stdout)\(split.stderr)")
        // A client that sends nothing (the head timeout, 1 s here), one that closes at once, one that
        // sends half a ClientHello and closes its side (a half-open redirect).
        let quiet = try bench.lab[.device].call([pythonExecutable, "-c", """
            import socket
            s = socket.create_connection(("\(GatewayBench.good)", 443), timeout=5)
            print(repr(s.recv(100)))
            socket.create_connection(("\(GatewayBench.good)", 443), timeout=5).close()
            h = socket.create_connection(("\(GatewayBench.good)", 443), timeout=5)
            h.sendall(bytes.fromhex("160301020001"))
            h.shutdown(socket.SHUT_WR)
            print(repr(h.recv(100)))
            """], timeout: 20)
        #expect(quiet.stdout == "b''\nb''\n", "\(quiet.stdout)\(quiet.stderr)")
        // And the gate still serves.
        #expect(try bench.curl(["https://good.test/"]).status == 0)
        let records = try bench.records(atLeast: 5)
        #expect(records.contains { $0["sni"] as? String == "good.test" && $0["action"] as? String == "allow"
                                   && ($0["message"] as? String)?.contains("closed") != true && $0["bytes_down"] as? Int ?? 0 > 0 })
        let silent = try #require(records.first { $0["reason"] as? String == "client-timeout" })
        #expect(silent["message"] as? String == "the client sent nothing in 1 s" && silent["path"] as? String == "transparent")
        #expect(records.contains { $0["reason"] as? String == "other-protocol" && ($0["message"] as? String)?
            .hasPrefix("the client closed the connection before sending a byte; transparent connection to 198.18.2.2:443") == true })
        let half = try #require(records.first { ($0["message"] as? String)?.hasPrefix("the client closed after") == true })
        #expect(half["reason"] as? String == "other-protocol")
        #expect((half["message"] as? String)?.hasPrefix("the client closed after 16 03 01 02 00 01 (") == true, "\(half)")
        let metrics = try bench.metrics()
        #expect(metrics.contains(#"atsgate_quic_datagrams_total{result="not-long-header"} 1"#), "\(metrics)")
        #expect(metrics.contains(#"atsgate_quic_datagrams_total{result="too-short"} 1"#))
        #expect(metrics.contains(#"atsgate_quic_datagrams_total{result="unsupported-version"} 1"#) 
                || metrics.contains(#"atsgate_quic_datagrams_total{result="too-short"} 2"#), "\(metrics)")
    }

    @Test func withAtsgateStoppedTheDeviceReachesNothing() throws {
        let bench = try GatewayBench()
        #expect(try bench.curl(["https://good.test/"]).status == 0)
        _ = try bench.stopDaemon()
        let refused = try bench.curl(["https://good.test/"])
        // The gateway itself refuses (curl's "could not connect"): the connection went to its empty port.
        #expect(refused.status == 7, "\(refused.stderr)")
        let http = try bench.curl(["http://plain.test/"])
        #expect(http.status == 7, "the lab fails closed: \(http.stderr)")
    }

    @Test func doctorGatewaySaysWhatTheGatewayDoesAndAProbeFromTheLabReachesAtsgate() throws {
        let bench = try GatewayBench()
        let env = try bench.directory.write("gateway.env", "LAB_IF=lab0\nTRANSPARENT_PORT=\(GatewayBench.transparentPort)\nQUIC_PORT=\(GatewayBench.quicPort)\n")
        let doctor = try bench.lab[.gateway].call([Atsgate.binary.path, "doctor", "gateway", "--env", env, "--admin", GatewayBench.admin,
                                                   "--probe-from", bench.lab[.device].name], timeout: 30)
        #expect(doctor.status == 0, "\(doctor.stdout)\(doctor.stderr)")
        let lines = doctor.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first == "info: forwarding: IPv4 on, IPv6 on (not needed: redirected connections end at atsgate on the gateway; "
                + "the ruleset's forward chain drops lab packets either way)", "\(lines)")
        #expect(lines.contains("ok: ruleset: table inet atsgate_gateway is loaded (chains prerouting, input, forward) for LAB_IF lab0"))
        #expect(lines.contains("ok: redirects: TCP from lab0 to port 3130, UDP/443 (QUIC) to port 3443"))
        #expect(lines.contains { $0.hasPrefix("ok: forward: nothing from lab0 is forwarded (") })
        #expect(lines.contains { $0.hasPrefix("ok: interface: lab0 is up with 198.18.1.1/24") })
        #expect(lines.contains { $0.hasPrefix("ok: listener: atsgate (pid ") && $0.hasSuffix(" listens on TCP port 3130") })
        #expect(lines.contains { $0.hasPrefix("ok: listener: atsgate (pid ") && $0.hasSuffix(" listens on UDP port 3443") })
        #expect(lines.contains("ok: probe from \(bench.lab[.device].name): a connection to 192.0.2.1:80 reached atsgate, not the origin "
                               + "(atsgate answered 508, loop-detected)"), "\(lines)")
        #expect(lines.contains { $0.hasPrefix("info: atsgate has recorded 1 transparent connections and 0 QUIC attempts") }, "\(lines)")
        // The probe's record names no destination, so no app's verdict counts it.
        let probe = try #require(try bench.records(atLeast: 1).first)
        #expect(probe["reason"] as? String == "loop-detected" && probe["host"] is NSNull && probe["user_agent"] as? String == "atsgate-doctor")

        // What is wrong is said, with exit status 1: a gateway.env the ruleset was not loaded with, and
        // atsgate stopped.
        let other = try bench.directory.write("other.env", "LAB_IF=eth1\n")
        _ = try bench.stopDaemon()
        let broken = try bench.lab[.gateway].call([Atsgate.binary.path, "doctor", "gateway", "--env", other,
                                                   "--probe-from", bench.lab[.device].name], timeout: 30)
        #expect(broken.status == 1)
        #expect(broken.stdout.contains("FAIL: ruleset: loaded with LAB_IF=lab0, but \(other) says eth1: systemctl reload atsgate-gateway"))
        #expect(broken.stdout.contains("FAIL: listener: nothing listens on TCP port 3130: atsgate --listen-transparent (or its socket unit) "
                                       + "is not running, so lab devices are refused"), "\(broken.stdout)")
        #expect(broken.stdout.contains("FAIL: probe from \(bench.lab[.device].name): a connection to 192.0.2.1:80 was refused: the "
                                       + "gateway took the connection, but nothing listens on the transparent port"), "\(broken.stdout)")
        // Without the ruleset, the device's connection is forwarded (the lab's gateway forwards):
        // what answers is not atsgate, or nothing does.
        try bench.lab[.gateway].check(["nft", "delete", "table", "inet", "atsgate_gateway"])
        let bare = try bench.lab[.gateway].call([Atsgate.binary.path, "doctor", "gateway", "--env", env], timeout: 30)
        #expect(bare.status == 1 && bare.stdout.contains("FAIL: ruleset: table inet atsgate_gateway is not loaded: systemctl start "
                                                         + "atsgate-gateway (deploy/gateway/README.md, section 3)"), "\(bare.stdout)")
    }
}
