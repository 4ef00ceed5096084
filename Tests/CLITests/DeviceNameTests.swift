import Foundation
import Glibc
import Testing
import TestSupport

/// Devices by name (`--device NAME=CIDR|user:NAME`) through the real daemon: loopback addresses
/// (127.0.0.2, .3, .4: curl --interface) and a proxy login stand for a lab's phones; the first
/// matching --device names the record's `device`, the per-app metrics' `device` label, and the
/// report's devices per destination.
@Suite(.serialized) struct DeviceNameTests {
    @Test func theFirstMatchingDeviceNamesTheRecordTheMetricsAndTheReport() throws {
        let origin = try Origin()
        let directory = try TemporaryDirectory()
        let users = try directory.write("users", try DeviceLabTests.sha512Line("ann", "s3cret") + "\n")
        let log = directory.url.appendingPathComponent("decisions.log").path
        let daemon = try Daemon(DeviceLabTests.pins + ["--auth-file", users, "--admin", "127.0.0.1:0", "--log-file", log,
                                                       "--device", "iphone-15=127.0.0.2", "--device", "ipad air=user:ann",
                                                       "--device", "lab-rest=127.0.0.0/8"])
        let url = "http://legacy.example.com:\(origin.httpPort)/small"
        func get(from source: String, _ credentials: [String]) throws -> String {
            try DeviceLabTests.curlStatus(daemon, ["--interface", source] + credentials + [url])
        }
        // 127.0.0.2 is iphone-15 whoever logs in (its rule comes first); ann elsewhere is the iPad;
        // before a login, 127.0.0.3 is only in the lab's range.
        #expect(try get(from: "127.0.0.2", ["-U", "ann:s3cret"]) == "403")
        #expect(try get(from: "127.0.0.3", ["-U", "ann:s3cret"]) == "403")
        #expect(try get(from: "127.0.0.4", ["-U", "ann:s3cret"]) == "403")
        #expect(try get(from: "127.0.0.3", []) == "407")
        try daemon.process.wait { _, _ in (try? DecisionLogLines(contentsOf: log))?.records.count == 4 }
        let metrics = try daemon.admin("/metrics")
        daemon.process.stop()
        let records = try DecisionLogLines(contentsOf: log).records
            .sorted { ($0["time"] as? String ?? "") < ($1["time"] as? String ?? "") }
        #expect(records.map { $0["device"] as? String } == ["iphone-15", "ipad air", "ipad air", "lab-rest"], "\(records)")
        #expect(records.last?["reason"] as? String == "auth-required")

        let block = #"atsgate_decisions_total{app="embedded",device="ipad air",action="block",reason="cleartext-http",enforced="true"} 2"#
        #expect(metrics.contains(block + "\n"), "\(metrics)")
        #expect(metrics.contains(#"atsgate_decisions_total{app="embedded",device="iphone-15",action="block",reason="cleartext-http",enforced="true"} 1"#))
        #expect(metrics.contains(#"device="lab-rest",action="block",reason="auth-required""#))

        let report = try Atsgate.run(["report", "--format", "json", log])
        let root = try #require(try JSONSerialization.jsonObject(with: Data(report.stdout.utf8)) as? [String: Any], "\(report.stderr)")
        let app = try #require((root["apps"] as? [[String: Any]])?.first)
        // (The 407 names no destination: the breakdown is of the destinations' records.)
        #expect(app["devices"] as? [String: Int] == ["ipad air": 2, "iphone-15": 1], "\(app["devices"] ?? "")")
        let destination = try #require((app["destinations"] as? [[String: Any]])?.first { $0["host"] as? String == "legacy.example.com" })
        #expect(destination["devices"] as? [String: Int] == ["ipad air": 2, "iphone-15": 1])
        let text = try Atsgate.run(["report", log]).stdout
        #expect(text.contains("  devices: ipad air (2 records), iphone-15 (1 record)\n"), "\(text)")
        #expect(text.contains(", devices: ipad air, iphone-15\n"), "the blocked destination names its devices: \(text)")
    }

    @Test func withoutADeviceTheFieldIsNullAndTheMetricsHaveNoDeviceLabel() throws {
        let origin = try Origin()
        let daemon = try Daemon(DeviceLabTests.pins + ["--admin", "127.0.0.1:0", "--device", "iphone-15=127.0.0.2"])
        #expect(try DeviceLabTests.curlStatus(daemon, ["http://legacy.example.com:\(origin.httpPort)/small"]) == "403")
        try daemon.waitForRecords(1)
        let metrics = try daemon.admin("/metrics")
        let record = try #require(try daemon.stop().records.first)
        #expect(record.keys.contains("device") && record["device"] is NSNull, "no device matched 127.0.0.1: \(record)")
        #expect(metrics.contains(#"atsgate_decisions_total{app="embedded",action="block",reason="cleartext-http",enforced="true"} 1"#),
                "\(metrics)")
    }

    @Test func aConfigFileNamesDevicesAndABadOneNamesItsLine() throws {
        let origin = try Origin()
        let directory = try TemporaryDirectory()
        let config = try directory.write("lab.conf", "device = phone-a=127.0.0.2\ndevice = rest=127.0.0.0/8\n")
        let good = try Daemon(DeviceLabTests.pins + ["--config", config])
        #expect(try DeviceLabTests.curlStatus(good, ["--interface", "127.0.0.2", "http://legacy.example.com:\(origin.httpPort)/small"]) == "403")
        #expect(try good.stop().records.first?["device"] as? String == "phone-a")

        for (line, words) in [("device = phone\n", "expected NAME=CIDR or NAME=user:USER"),
                              ("device = phone=300.1.1.1\n", "'300.1.1.1' is neither a CIDR"),
                              ("device = =127.0.0.2\n", "the device name must be non-empty")] {
            let bad = try directory.write("bad.conf", "listen = 127.0.0.1:0\n" + line)
            let run = try Atsgate.run(["run", "--config", bad], timeout: 10)
            #expect(run.status == 2, "\(line)")
            #expect(run.stderr.contains("bad.conf:2:") && run.stderr.contains(words), "\(run.stderr)")
        }
    }
}
