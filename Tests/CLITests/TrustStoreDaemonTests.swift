import Foundation
import Glibc
import Testing
import TestSupport

/// Trust as iOS trusts, through the running daemon (ATS-SPEC R15, R16): `--trust-store DIR` with the
/// test PKI of Tests/Fixtures/make-trust-store.py (Apple's layout, its own CT logs), real TLS origins
/// serving its chains, curl through the proxy with CONNECT (`-k`: the proxy is the judge), the
/// caIssuers server of aia_server.py on loopback. 127.0.0.1 is made an external address
/// (`--local-network` elsewhere), so full ATS applies to it.
@Suite(.serialized) struct TrustStoreDaemonTests {
    /// A copy of the test store with distrust.json naming root-distrusted (atsgate's addition to
    /// Apple's layout); removed when the test ends.
    final class StoreCopy {
        let directory: TemporaryDirectory
        let path: String

        init(distrust: Bool = true) throws {
            directory = try TemporaryDirectory()
            path = directory.url.appendingPathComponent("store").path
            try FileManager.default.copyItem(atPath: try AppleLayoutTestStore.storePath(), toPath: path)
            if distrust { try write("distrust.json", try AppleLayoutTestStore.distrustJSON()) }
        }

        func write(_ relative: String, _ text: String) throws {
            try Data(text.utf8).write(to: URL(fileURLWithPath: path).appendingPathComponent(relative))
        }
    }

    /// tls_origin.py serving `certificate` (PEM) with `chain` after it (nil: the leaf alone).
    final class ChainOrigin {
        let process: BackgroundProcess
        let port: Int

        init(certificate: String, key: String, chain: String?, maximum: String = "TLSv1_2") throws {
            var arguments = [fixturePath("tls_origin.py"), "--cert", certificate, "--key", key, "--max", maximum]
            if let chain { arguments += ["--chain", chain] }
            process = try BackgroundProcess(pythonExecutable, arguments)
            try process.wait { out, _ in out.contains("port=") }
            guard let match = process.stdout.firstMatch(of: /port=(\d+)/), let port = Int(match.1) else {
                throw HarnessError("tls_origin.py: \(process.stderr)")
            }
            self.port = port
        }

        /// A leaf of the test store and its issuer ("int-a"), as the server sends them.
        convenience init(leaf: String, issuer: String?, maximum: String = "TLSv1_2") throws {
            try self.init(certificate: try AppleLayoutTestStore.path("\(leaf).pem"),
                          key: try AppleLayoutTestStore.path("\(leaf).key"),
                          chain: try issuer.map { try AppleLayoutTestStore.path("\($0).pem") }, maximum: maximum)
        }
    }

    static func daemon(store: String, port: Int, _ extra: [String] = []) throws -> Daemon {
        try Daemon(["--local-network", "192.0.2.0/24", "--trust-store", store, "--connect-port", "\(port)"] + extra)
    }

    static func curl(_ daemon: Daemon, port: Int) throws -> AtsgateRun {
        try Subprocess.curl(["-k", "-p", "-x", daemon.proxy, "https://127.0.0.1:\(port)/"])
    }

    /// One tunnel through a daemon judging against `store`: its record.
    static func judge(leaf: String, issuer: String?, store: String, maximum: String = "TLSv1_2",
                      _ extra: [String] = []) throws -> (record: [String: Any], run: AtsgateRun) {
        let origin = try ChainOrigin(leaf: leaf, issuer: issuer, maximum: maximum)
        let daemon = try daemon(store: store, port: origin.port, extra)
        let run = try curl(daemon, port: origin.port)
        let records = try daemon.stop().records
        return (try #require(records.first), run)
    }

    // MARK: the whole chain (R15)

    @Test(arguments: [("leaf-weak-int", "int-weak-key", "certificate-key-size"),
                      ("leaf-sha1-int", "int-sha1", "certificate-signature-hash")])
    func aWeakIntermediateIsRefusedAndItsDepthRecorded(leaf: String, issuer: String, reason: String) throws {
        let store = try StoreCopy()
        for version in ["TLSv1_2", "TLSv1_3"] {
            let (record, run) = try Self.judge(leaf: leaf, issuer: issuer, store: store.path, maximum: version)
            #expect(run.status != 0, "\(leaf) over \(version) got through")
            #expect(record["action"] as? String == "block", "\(leaf) \(version)")
            #expect(record["reason"] as? String == reason, "\(leaf) \(version): \(record["message"] ?? "")")
            #expect(record["certificate_depth"] as? Int == 1, "\(leaf) \(version): the intermediate")
            #expect(record["rule"] as? String == "R15")
            #expect((record["message"] as? String ?? "").contains("intermediate certificate"), "\(record["message"] ?? "")")
            #expect(record["aia_fetched"] is NSNull, "a complete chain needs no fetch")
        }
    }

    @Test func aRootConstrainedAwayFromTLSAnchorsNoChain() throws {
        let store = try StoreCopy()
        let (record, _) = try Self.judge(leaf: "leaf-smime", issuer: "int-smime", store: store.path)
        #expect(record["reason"] as? String == "certificate-untrusted")
        #expect((record["message"] as? String ?? "").contains("holds for other uses only"), "\(record["message"] ?? "")")
    }

    @Test func aDistrustedRootRefusesLeavesIssuedAfterItsDate() throws {
        let store = try StoreCopy()
        let (record, run) = try Self.judge(leaf: "leaf-distrusted", issuer: "int-distrusted", store: store.path)
        #expect(run.stderr.contains("alert insufficient security"), "\(run.stderr)")
        #expect(record["reason"] as? String == "certificate-distrusted", "\(record["message"] ?? "")")
        #expect(record["certificate_depth"] as? Int == 2, "the root")
        #expect((record["message"] as? String ?? "").contains("which Apple distrusts (atsgate Distrusted Root)"))
    }

    // MARK: Certificate Transparency (R16), on by default with a store that has a log list

    @Test func aLeafWithSCTsFromTheStoresLogsPassesAndOneWithoutIsRefused() throws {
        let store = try StoreCopy()
        let (good, run) = try Self.judge(leaf: "leaf-good", issuer: "int-a", store: store.path)
        #expect(run.stdout == "ok from tls_origin\n", "\(run.stderr)")
        #expect(good["action"] as? String == "allow", "\(good["message"] ?? "")")
        #expect(good["certificate_depth"] == nil, "no failure, no depth")
        let (bare, _) = try Self.judge(leaf: "leaf-no-sct", issuer: "int-a", store: store.path)
        #expect(bare["reason"] as? String == "certificate-transparency", "\(bare["message"] ?? "")")
        #expect(bare["rule"] as? String == "R16")
        let (off, _) = try Self.judge(leaf: "leaf-no-sct", issuer: "int-a", store: store.path,
                                      ["--certificate-transparency", "off"])
        #expect(off["action"] as? String == "allow", "--certificate-transparency off: \(off["message"] ?? "")")
    }

    // MARK: incomplete chains (AIA)

    @Test(arguments: ["TLSv1_2", "TLSv1_3"])
    func anIncompleteChainIsCompletedFromItsCaIssuersURL(version: String) throws {
        let server = try AIAServer.shared.get()
        let store = try StoreCopy()
        let leaves = try AppleLayoutTestStore.path("aia-leaves")
        let origin = try ChainOrigin(certificate: leaves + "/aia-der.pem", key: leaves + "/aia-der.key", chain: nil,
                                     maximum: version)
        // The aia leaves carry no SCTs: R16 is not what this test is about.
        let daemon = try Self.daemon(store: store.path, port: origin.port, ["--certificate-transparency", "off"])
        let run = try Self.curl(daemon, port: origin.port)
        #expect(run.stdout == "ok from tls_origin\n", "\(version): \(run.stderr)")
        let record = try #require(try daemon.stop().records.first)
        #expect(record["action"] as? String == "allow", "\(version): \(record["message"] ?? "")")
        #expect(record["aia_fetched"] as? String == "\(server.base)/int-a.cer")
        #expect(!server.requests(containing: "/int-a.cer").isEmpty, "the intermediate was fetched from the caIssuers server")

        let refusing = try Self.daemon(store: store.path, port: origin.port,
                                       ["--certificate-transparency", "off", "--aia-fetch", "off"])
        #expect(try Self.curl(refusing, port: origin.port).status != 0)
        let refused = try #require(try refusing.stop().records.first)
        #expect(refused["reason"] as? String == "certificate-untrusted", "\(version): \(refused["message"] ?? "")")
        #expect(refused["aia_fetched"] is NSNull)
    }

    @Test func theUpgradePathCompletesAnIncompleteChainToo() throws {
        let server = try AIAServer.shared.get()
        let store = try StoreCopy()
        let leaves = try AppleLayoutTestStore.path("aia-leaves")
        let origin = try ChainOrigin(certificate: leaves + "/aia-two.pem", key: leaves + "/aia-two.key", chain: nil)
        let daemon = try Self.daemon(store: store.path, port: origin.port,
                                     ["--certificate-transparency", "off", "--cleartext", "upgrade",
                                      "--upgrade-port", "8080=\(origin.port)"])
        let run = try Subprocess.curl(["-x", daemon.proxy, "http://127.0.0.1:8080/"])
        #expect(run.stdout == "ok from tls_origin\n", "\(run.stdout)\(run.stderr)")
        let record = try #require(try daemon.stop().records.first)
        #expect(record["action"] as? String == "upgrade", "\(record["message"] ?? "")")
        // The first URL answers 404; the second gives the intermediate.
        #expect(record["aia_fetched"] as? String == "\(server.base)/int-a.cer")
    }

    /// The origin's network may be reachable only through the parent: the fetch goes where the tunnel
    /// went, with the parent's credentials.
    @Test func behindAParentTheMissingIntermediateIsFetchedThroughIt() throws {
        let server = try AIAServer.shared.get()
        let store = try StoreCopy()
        let leaves = try AppleLayoutTestStore.path("aia-leaves")
        let origin = try ChainOrigin(certificate: leaves + "/aia-redirect.pem", key: leaves + "/aia-redirect.key", chain: nil)
        let squid = try SquidParent(connectPorts: [origin.port], user: ParentProxyTests.user)
        let daemon = try Self.daemon(store: store.path, port: origin.port,
                                     ["--certificate-transparency", "off",
                                      "--parent", "http://\(ParentProxyTests.credentials)@\(squid.address)"])
        let run = try Self.curl(daemon, port: origin.port)
        #expect(run.stdout == "ok from tls_origin\n", "\(run.stderr)")
        let record = try #require(try daemon.stop().records.first)
        #expect(record["parent"] as? String == squid.address)
        #expect(record["aia_fetched"] as? String == "\(server.base)/redirect/int-a.cer")
        let fetch = try #require(squid.waitForAccess("GET \(server.base)/redirect/int-a.cer"), "\(squid.accessLog)")
        #expect(fetch.contains(" lab "), "the parent saw its own user: \(fetch)")
    }

    @Test func aCaIssuersURLThatFailsRefusesTheChainAndSaysWhy() throws {
        _ = try AIAServer.shared.get()
        let store = try StoreCopy()
        let leaves = try AppleLayoutTestStore.path("aia-leaves")
        let origin = try ChainOrigin(certificate: leaves + "/aia-garbage.pem", key: leaves + "/aia-garbage.key", chain: nil)
        let daemon = try Self.daemon(store: store.path, port: origin.port, ["--certificate-transparency", "off"])
        #expect(try Self.curl(daemon, port: origin.port).status != 0)
        let record = try #require(try daemon.stop().records.first)
        #expect(record["reason"] as? String == "certificate-untrusted")
        #expect((record["message"] as? String ?? "").contains("fetching the missing issuer from its caIssuers URL failed"),
                "\(record["message"] ?? "")")
    }

    // MARK: a Certificate message larger than the device reads

    @Test func aChainWithTenThousandNamesIsRefusedAsTheDeviceRefusesIt() throws {
        let directory = try AppleLayoutTestStore.directory().path
        if !FileManager.default.fileExists(atPath: directory + "/leaf-sans.pem") {
            let made = try Shell.run(pythonExecutable, [fixturePath("make-trust-store.py"), directory, "sans", "10000"],
                                     timeout: 120)
            #expect(made.status == 0, "\(made.stderr)")
        }
        let store = try StoreCopy()
        for version in ["TLSv1_2", "TLSv1_3"] {
            let origin = try ChainOrigin(certificate: directory + "/leaf-sans-chain.pem", key: directory + "/leaf-sans.key",
                                         chain: nil, maximum: version)
            let daemon = try Self.daemon(store: store.path, port: origin.port)
            let run = try Self.curl(daemon, port: origin.port)
            #expect(run.stderr.contains("handshake failure"), "\(version): \(run.stderr)")
            let record = try #require(try daemon.stop().records.first)
            #expect(record["reason"] as? String == "upstream-tls", "\(version)")
            let message = record["message"] as? String ?? ""
            #expect(!message.contains("not TLS"), "\(version): \(message)")
            if version == "TLSv1_2" {
                // On the wire: the reader stops at the message's length.
                #expect(record["action"] as? String == "error")
                #expect(message.contains("Certificate message of") && message.contains("exceeds the 102400 bytes"), "\(message)")
            } else {
                // Encrypted: the proxy's own probe, on OpenSSL, has the same limit.
                #expect(message.contains("excessive message size"), "\(message)")
            }
        }
    }

    // MARK: the store itself

    @Test func theDaemonJudgesAgainstApplesStoreByDefaultAndSaysSo() throws {
        let daemon = try Daemon(["--admin", "127.0.0.1:0"])
        let line = daemon.process.stderr.split(separator: "\n").first { $0.contains("listening on ") } ?? ""
        #expect(line.contains("trust store apple (security_certificates-55349.0.11, "), "\(line)")
        #expect(line.contains(" TLS roots, CT verified, AIA on)"), "\(line)")
        let metrics = try daemon.admin("/metrics")
        #expect(metrics.contains("atsgate_trust_store_info{name=\"apple\",version=\"security_certificates-55349.0.11\"} 1\n"))
        _ = try daemon.stop(expected: 0)
    }

    @Test func aReloadTakesTheNewStoreAndABrokenStoreKeepsTheLastGoodOne() throws {
        let store = try StoreCopy(distrust: false)
        let origin = try ChainOrigin(leaf: "leaf-distrusted", issuer: "int-distrusted")
        let daemon = try Self.daemon(store: store.path, port: origin.port, ["--admin", "127.0.0.1:0"])
        #expect(daemon.process.stderr.contains("trust store \(store.path) (atsgate-test-store, 3 TLS roots, CT verified, AIA on)"))
        _ = try Self.curl(daemon, port: origin.port)
        // The same chain after the store distrusts its root: judged again, not answered from the cache.
        try store.write("distrust.json", try AppleLayoutTestStore.distrustJSON())
        try daemon.reload()
        _ = try Self.curl(daemon, port: origin.port)
        // A broken constraints.json: the reload is refused, naming the flag, the file and the key.
        try store.write("certificates/constraints.json", #"{"system": {"0CB9": ["1.2.3"]}}"#)
        try daemon.reload(expecting: "reload failed")
        let failure = daemon.process.stderr.split(separator: "\n").first { $0.contains("reload failed") } ?? ""
        #expect(failure.contains("--trust-store \(store.path): trust store \(store.path)/certificates/constraints.json:"
            + " system.0CB9: expected a root's SHA-256 in hex"), "\(failure)")
        _ = try Self.curl(daemon, port: origin.port)
        #expect(try daemon.admin("/metrics").contains("atsgate_trust_store_info{name=\"\(store.path)\",version=\"atsgate-test-store\"} 1\n"))
        let records = try daemon.stopInTimeOrder(expected: 3)
        #expect(records.map { $0["reason"] as? String } == ["certificate-transparency", "certificate-distrusted",
                                                            "certificate-distrusted"], "the last good store still judges")
    }

    @Test(arguments: [
        (["--trust-store", "/nonexistent/store"], "atsgate: --trust-store /nonexistent/store: trust store /nonexistent/store: no such directory"),
        (["--ct-log-list", "/nonexistent/logs.json"], "atsgate: --ct-log-list: CT log list /nonexistent/logs.json: cannot read it"),
        (["--certificate-transparency", "off", "--ct-log-list", "/tmp/x.json"], "--ct-log-list verifies SCTs"),
        (["--aia-fetch", "sometimes"], "--aia-fetch"),
    ])
    func badTrustFlagsStopTheStartNamingTheFlag(arguments: [String], message: String) throws {
        let run = try Atsgate.run(["run", "--listen", "127.0.0.1:0"] + arguments, timeout: 20)
        #expect(run.status == 2)
        #expect(run.stderr.contains(message), "\(run.stderr)")
    }

    @Test func theConfigFileTakesTheTrustKeys() throws {
        let store = try StoreCopy()
        let origin = try ChainOrigin(leaf: "leaf-weak-int", issuer: "int-weak-key")
        let directory = try TemporaryDirectory()
        let config = try directory.write("atsgate.conf", """
            trust-store = \(store.path)
            aia-fetch = off
            certificate-transparency = off
            """)
        let daemon = try Daemon(["--config", config, "--local-network", "192.0.2.0/24", "--connect-port", "\(origin.port)"])
        #expect(daemon.process.stderr.contains("trust store \(store.path) (atsgate-test-store, 3 TLS roots, CT off, AIA off)"))
        _ = try Self.curl(daemon, port: origin.port)
        #expect(try daemon.stop().records.first?["reason"] as? String == "certificate-key-size")
    }
}

/// `atsgate diagnose` under `--trust-store DIR`: the store named, the depth of a failure and the
/// caIssuers URL a chain was completed from, in text and JSON.
@Suite(.serialized) struct TrustStoreDiagnoseTests {
    static func diagnose(store: String, port: Int, _ extra: [String]) throws -> AtsgateRun {
        try Atsgate.run(["diagnose", "--resolve", "localhost=127.0.0.1", "--trust-store", store] + extra
                        + ["https://localhost:\(port)/"])
    }

    @Test func aWeakIntermediateFailsWithItsDepthAndTheStoreNamed() throws {
        let store = try TrustStoreDaemonTests.StoreCopy()
        let origin = try TrustStoreDaemonTests.ChainOrigin(leaf: "leaf-weak-int", issuer: "int-weak-key")
        let json = try Self.diagnose(store: store.path, port: origin.port, ["--format", "json"])
        #expect(json.status == 1)
        let first = try #require(try json.jsonLines().first)
        #expect(first["reason"] as? String == "certificate-key-size")
        #expect(first["certificate_depth"] as? Int == 1)
        #expect(first["trust_store"] as? String == store.path)
        #expect(first["trust_store_version"] as? String == "atsgate-test-store")
        #expect(first["aia_fetched"] is NSNull)
        let text = try Self.diagnose(store: store.path, port: origin.port, ["--format", "text"]).stdout
        #expect(text.contains("Trust store: \(store.path) (atsgate-test-store, 3 TLS roots, CT verified, AIA on).\n"), "\(text)")
        #expect(text.contains("  Depth     : 1 (certificate_depth: the certificate the failure is about; 0 = the leaf)\n"), "\(text)")
        #expect(text.contains(", \(store.path) trust store\n"), "the chain ends in the store: \(text)")
    }

    @Test func anIncompleteChainIsCompletedAndTheURLShown() throws {
        let server = try AIAServer.shared.get()
        let store = try TrustStoreDaemonTests.StoreCopy()
        let leaves = try AppleLayoutTestStore.path("aia-leaves")
        let origin = try TrustStoreDaemonTests.ChainOrigin(certificate: leaves + "/aia-p7c.pem", key: leaves + "/aia-p7c.key",
                                                           chain: nil)
        let json = try Self.diagnose(store: store.path, port: origin.port,
                                     ["--certificate-transparency", "off", "--format", "json"])
        #expect(json.status == 0, "\(json.stdout)\(json.stderr)")
        let first = try #require(try json.jsonLines().first)
        #expect(first["result"] as? String == "PASS")
        #expect(first["aia_fetched"] as? String == "\(server.base)/int-a.p7c")
        let text = try Self.diagnose(store: store.path, port: origin.port, ["--certificate-transparency", "off"]).stdout
        #expect(text.contains("  AIA       : the missing intermediate was fetched from \(server.base)/int-a.p7c\n"), "\(text)")
        let off = try Self.diagnose(store: store.path, port: origin.port,
                                    ["--certificate-transparency", "off", "--aia-fetch", "off", "--format", "json"])
        #expect(try off.jsonLines().first?["reason"] as? String == "certificate-untrusted")
    }
}
