import Foundation
import Testing

/// R15a through the running daemon: on the wire (TLS 1.2, the chain in the Certificate message) and by
/// probe (TLS 1.3), refused under full ATS and tolerated (logged) where the host allows cleartext.
@Suite(.serialized) struct AppleLeafDaemonTests {
    static let leaves: [(leaf: String, reason: String)] = [
        ("life-1000", "certificate-lifetime"), ("eku-client", "certificate-usage"), ("no-san", "certificate-hostname"),
    ]

    @Test(arguments: ["TLSv1_2", "TLSv1_3"])
    func appleLeafRulesRefuseTheHandshake(version: String) throws {
        for (leaf, reason) in Self.leaves {
            let origin = try TLSTestOrigin(leaf: leaf, arguments: ["--min", version, "--max", version])
            let (daemon, _) = try TLSInspectionTests.daemon(port: origin.port)
            let run = try TLSInspectionTests.curl(daemon, "https://127.0.0.1:\(origin.port)/")
            #expect(run.status != 0, "\(leaf) over \(version) got through")
            let (_, records) = try daemon.stop()
            let record = try #require(records.first)
            #expect(record["action"] as? String == "block", "\(leaf) \(version)")
            #expect(record["reason"] as? String == reason, "\(leaf) \(version): \(record["message"] ?? "")")
            #expect(record["rule"] as? String == "R15a", "\(leaf) \(version): the record names the rule that refused")
            #expect((record["message"] as? String ?? "").contains("R15a"), "\(record["message"] ?? "")")
        }
    }

    @Test(arguments: ["TLSv1_2", "TLSv1_3"])
    func anAcceptableLeafOfThe825DayRulePasses(version: String) throws {
        let origin = try TLSTestOrigin(leaf: "life-800", arguments: ["--min", version, "--max", version])
        let (daemon, _) = try TLSInspectionTests.daemon(port: origin.port)
        #expect(try TLSInspectionTests.curl(daemon, "https://127.0.0.1:\(origin.port)/").stdout == "ok from tls_origin\n")
        let (_, records) = try daemon.stop()
        #expect(records.first?["action"] as? String == "allow")
    }

    @Test func aHostThatAllowsCleartextToleratesTheAppleLeafRulesAndLogsThem() throws {
        let origin = try TLSTestOrigin(leaf: "life-1000", arguments: ["--max", "TLSv1_2"])
        let (daemon, _) = try TLSInspectionTests.daemon(
            port: origin.port, policy: TLSInspectionTests.exception(#"{"NSExceptionAllowsInsecureHTTPLoads": true}"#))
        #expect(try TLSInspectionTests.curl(daemon, "https://127.0.0.1:\(origin.port)/").stdout == "ok from tls_origin\n")
        let (_, records) = try daemon.stop()
        let record = try #require(records.first)
        #expect(record["action"] as? String == "allow")
        #expect(record["cert_tolerated"] as? [String] == ["certificate-lifetime"], "\(record)")
    }

    @Test func theUpgradePathRefusesALeafOfOneThousandDays() throws {
        let origin = try TLSTestOrigin(leaf: "life-1000", arguments: [])
        let (daemon, _) = try TLSInspectionTests.daemon(port: origin.port,
                                                        ["--cleartext", "upgrade", "--upgrade-port", "8080=\(origin.port)"])
        let run = try Subprocess.curl(["-x", daemon.proxy, "-D", "-", "http://127.0.0.1:8080/"])
        #expect(run.stdout.hasPrefix("HTTP/1.1 502"), "\(run.stdout)")
        #expect(run.stdout.contains("X-ATS-Reason: certificate-lifetime\r\n"))
        let (_, records) = try daemon.stop()
        #expect(records.first?["reason"] as? String == "certificate-lifetime")
    }
}
