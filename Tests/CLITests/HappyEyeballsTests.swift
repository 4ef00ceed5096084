import Foundation
import Testing
import TestSupport

/// Happy Eyeballs (RFC 8305) against dual-stack origins: Tests/Fixtures/dualstack.sh builds an origin's
/// network namespace joined to the proxy's by a veth pair, inside an outer `unshare -n` (nothing leaves
/// the machine), and runs the daemon and curl there. Each case's answer and record are asserted here.
/// The proxy's --connect-timeout is 5 s and curl's --max-time 10 s: trying the addresses one after the
/// other would fail the black-holed cases, racing them does not.
@Suite(.serialized) struct HappyEyeballsTests {
    struct Outcome {
        var status: [String: String] = [:]
        var body: [String: String] = [:]
        var records: [String: [String: Any]] = [:]
    }

    static func run() throws -> Outcome {
        let directory = try TemporaryDirectory()
        let run = try Subprocess.run("/usr/bin/unshare", ["-n", "bash", fixturePath("dualstack.sh"), Atsgate.binary.path,
                                                          pythonExecutable, fixturePath(""), directory.url.path],
                                     timeout: 120)
        guard run.status == 0 else {
            throw HarnessError("dualstack.sh failed (\(run.status)): \(run.stderr)\n\(run.stdout)")
        }
        var outcome = Outcome()
        for line in run.stdout.split(separator: "\n") {
            guard let match = line.firstMatch(of: /^case (\S+) http=(\d+) body=(.*)$/) else { continue }
            outcome.status[String(match.1)] = String(match.2)
            outcome.body[String(match.1)] = String(match.3)
        }
        let log = try String(contentsOf: directory.url.appendingPathComponent("atsgate.log"), encoding: .utf8)
        for line in log.split(separator: "\n") {
            guard let record = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  let host = record["host"] as? String else { continue }
            let key = (record["method"] as? String == "CONNECT" ? "" : "forward:") + host
            outcome.records[key] = record
        }
        return outcome
    }

    @Test func eachOriginIsReachedOverTheFamilyThatAnswers() throws {
        let outcome = try Self.run()
        // name in the script -> (the record's key, the address that must win)
        let cases: [(String, String, String)] = [
            ("both", "both.test", "fd00::2"),          // both work: IPv6 first
            ("silent", "silent.test", "198.18.0.2"),   // IPv6 black-holed silently: IPv4 after 250 ms
            ("nobody", "nobody.test", "198.18.0.2"),   // IPv6 address nobody has (3 s of neighbour discovery)
            ("route", "route.test", "198.18.0.2"),     // IPv6 through a blackhole route: fails at once
            ("nobody4", "nobody4.test", "fd00::2"),    // IPv4 address nobody has, IPv6 fine
            ("hole", "hole.test", "198.18.0.2"),       // from the resolver: AAAA black-holed, A fine
            ("lateaaaa", "lateaaaa.test", "198.18.0.2"), // the AAAA answer never comes in time: A is raced alone
            ("forward", "forward:silent.test", "198.18.0.2"), // a forwarded request races the same way
        ]
        for (name, key, winner) in cases {
            #expect(outcome.status[name] == "200", "\(name): \(outcome.status[name] ?? "no answer")")
            let reachedAt = winner.contains(":") ? "reached at \(winner)" : "reached at ::ffff:\(winner)"
            #expect(outcome.body[name] == reachedAt, "\(name): \(outcome.body[name] ?? "")")
            let record = try #require(outcome.records[key], "no record for \(key)")
            #expect(record["action"] as? String == "allow")
            #expect(record["upstream_ip"] as? String == winner, "\(name): upstream_ip is the winner: \(record)")
        }
        #expect(outcome.records["hole.test"]?["dns_cached"] as? Bool == false, "AAAA and A were looked up")
    }
}
