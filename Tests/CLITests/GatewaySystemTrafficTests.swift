import Foundation
import Testing
import TestSupport

/// The device's own traffic behind the transparent gate (issue 35): a device with no proxy setting
/// reaches Apple's push service (TLS on 5223), iCloud (TLS on 443) and the captive-portal probe
/// (cleartext), all recorded as app `system` and let through whatever the app's policy; the same
/// device's app traffic is judged as before; the report keeps the two apart.
@Suite(.serialized) struct GatewaySystemTrafficTests {
    /// curl from the device to `url`, reaching `name:port` at the lab's good origin.
    static func curl(_ bench: GatewayBench, _ name: String, _ port: Int, _ url: String, _ extra: [String] = []) throws
        -> LabCommand.Result {
        try bench.curl(["--insecure", "--resolve", "\(name):\(port):\(GatewayBench.good)"] + extra + [url])
    }

    @Test func theDevicesOwnTrafficIsTheSystemsAndItsAppTrafficIsJudgedAsBefore() throws {
        let bench = try GatewayBench(["--system-dest", "\(GatewayBench.good):5222"],
                                     services: ["--tls", "\(GatewayBench.good):5223", "good.pem", "good.key"])
        // System: APNs by its server name on 5223, iCloud on 443, the captive probe in the clear.
        let push = try Self.curl(bench, "1-courier.push.apple.com", 5223, "https://1-courier.push.apple.com:5223/")
        #expect(push.status == 0 && push.stdout.contains("host=1-courier.push.apple.com:5223"), "\(push.stdout)\(push.stderr)")
        let icloud = try Self.curl(bench, "gateway.icloud.com", 443, "https://gateway.icloud.com/")
        #expect(icloud.status == 0 && icloud.stdout.contains("served=good"), "\(icloud.stderr)")
        let captive = try Self.curl(bench, "captive.apple.com", 80, "http://captive.apple.com/hotspot-detect.html",
                                    ["-A", "CaptiveNetworkSupport-407.0.1 wispr"])
        #expect(captive.stdout.contains("lab origin: GET /hotspot-detect.html"), "\(captive.stdout)\(captive.stderr)")
        // Another protocol to an operator's --system-dest address: relayed, although --transparent-other is block.
        let raw = try bench.lab[.device].call([pythonExecutable, "-c", """
            import socket
            s = socket.create_connection(("\(GatewayBench.good)", 5222), timeout=5)
            s.sendall(b"HELLO\\r\\n")
            print(s.recv(100).decode().strip())
            """])
        #expect(raw.stdout == "raw: HELLO\n", "\(raw.stdout)\(raw.stderr)")
        // The app's own: cleartext blocked, TLS to its server allowed and watched.
        let blocked = try bench.curl(["--include", "http://plain.test/page"])
        #expect(blocked.stdout.hasPrefix("HTTP/1.1 403 "), "\(blocked.stdout)")
        #expect(try bench.curl(["https://good.test/"]).status == 0)

        let records = try bench.records(atLeast: 6)
        let system = records.filter { $0["app"] as? String == "system" }
        #expect(Set(system.compactMap { $0["host"] as? String })
                == ["1-courier.push.apple.com", "gateway.icloud.com", "captive.apple.com", GatewayBench.good], "\(system)")
        for record in system {
            #expect(record["action"] as? String == "allow" && record["reason"] as? String == "system-traffic", "\(record)")
            #expect(record["path"] as? String == "transparent" && record["ats"] as? String == "off", "\(record)")
        }
        let pushRecord = try #require(system.first { $0["host"] as? String == "1-courier.push.apple.com" })
        #expect(pushRecord["original_dst"] as? String == "\(GatewayBench.good):5223")
        #expect((pushRecord["message"] as? String ?? "").contains("Apple Push Notifications"), "\(pushRecord)")
        #expect(pushRecord["tls_version"] is NSNull || pushRecord["tls_version"] == nil, "the device's own TLS is not watched")
        let app = records.filter { $0["app"] as? String != "system" }
        #expect(Set(app.compactMap { $0["host"] as? String }) == ["plain.test", "good.test"], "\(app)")
        #expect(app.first { $0["host"] as? String == "plain.test" }?["reason"] as? String == "cleartext-http")

        // The report: the app's destinations only, and the system's apart.
        let log = try bench.directory.write("decisions.log", records.map { record in
            String(decoding: try JSONSerialization.data(withJSONObject: record), as: UTF8.self)
        }.joined(separator: "\n") + "\n")
        let json = try Atsgate.run(["report", "--format", "json", log])
        let report = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let urls = (report["apps"] as? [[String: Any]] ?? [])
            .flatMap { ($0["destinations"] as? [[String: Any]] ?? []).compactMap { $0["url"] as? String } }
        #expect(Set(urls) == ["http://plain.test:80", "https://good.test:443"], "\(urls)")
        let section = (report["system"] as? [[String: Any]] ?? []).compactMap { $0["url"] as? String }
        #expect(section.contains("https://1-courier.push.apple.com:5223") && section.contains("http://captive.apple.com:80"),
                "\(section)")
    }

    @Test func judgeModeJudgesTheDevicesTrafficWithTheAppsPolicy() throws {
        let bench = try GatewayBench(["--system-traffic", "judge", "--no-builtin-exceptions"])
        let captive = try Self.curl(bench, "captive.apple.com", 80, "http://captive.apple.com/hotspot-detect.html",
                                    ["--include", "-A", "CaptiveNetworkSupport-407.0.1 wispr"])
        #expect(captive.stdout.hasPrefix("HTTP/1.1 403 "), "\(captive.stdout)")
        let record = try #require(try bench.records(atLeast: 1).first)
        #expect(record["app"] as? String != "system" && record["reason"] as? String == "cleartext-http", "\(record)")
    }
}
