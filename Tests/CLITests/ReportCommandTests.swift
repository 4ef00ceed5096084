import Foundation
import Testing
import TestSupport

/// `atsgate report` on a log the real daemon wrote in report mode (INTERFACE "atsgate report"): cleartext
/// to hosts with and without exceptions, several subdomains of one parent, a TLS 1.0 server, a server
/// without forward secrecy, an expired certificate, an unused exception and one a built-in shadows. The
/// artefacts are read back by other programs: `atsgate check` and the daemon itself for the suggested
/// dictionary, python3's xml.etree for JUnit, jsonschema for SARIF, headless Chromium for the HTML.
@Suite(.serialized) struct ReportCommandTests {
    /// The app's policy, pretty-printed so each key has its own line (SARIF regions point at lines).
    static let policy = """
        {
          "NSExceptionDomains": {
            "legacy.example.com": {
              "NSExceptionAllowsInsecureHTTPLoads": true
            },
            "unused.example.org": {
              "NSExceptionAllowsInsecureHTTPLoads": true
            },
            "icloud.com": {
              "NSIncludesSubdomains": true,
              "NSExceptionAllowsInsecureHTTPLoads": true
            }
          }
        }
        """
    static let names = ["legacy.example.com", "api.example.com", "a.media.example.net", "b.media.example.net",
                        "setup.icloud.com"]
    /// 127.0.0.1 is an external IP for the daemon and the report alike, so full ATS applies to it.
    static let network = ["--local-network", "192.0.2.0/24"]

    /// What the daemon logged, and the ports it went to.
    struct Recorded {
        let directory: TemporaryDirectory
        let log: String
        let policy: String
        let httpPort: Int
        let tls10: Int
        let noForwardSecrecy: Int
        let expired: Int
    }

    /// Runs the traffic through a report-mode daemon once per test run (the origins and the daemon
    /// take seconds; every test reads the same log).
    nonisolated(unsafe) static let recorded: Result<Recorded, HarnessError> = {
        do {
            let directory = try TemporaryDirectory()
            let policy = try directory.write("Info-ats.json", Self.policy)
            let origin = try Origin()
            let tls10 = try TLSTestOrigin(leaf: "good-rsa", arguments: ["--max", "TLSv1"])
            let noFS = try TLSTestOrigin(leaf: "good-rsa", arguments: ["--max", "TLSv1_2", "--ciphers", "AES128-SHA"])
            let expired = try TLSTestOrigin(leaf: "expired", arguments: ["--min", "TLSv1_2", "--max", "TLSv1_2"])
            var arguments = ["--mode", "report", "--policy", policy, "--ca-file", try TestPKI.shared.path("ca.pem")]
                + network
            for port in [tls10.port, noFS.port, expired.port] { arguments += ["--connect-port", "\(port)"] }
            for name in names { arguments += ["--resolve", "\(name)=127.0.0.1"] }
            let daemon = try Daemon(arguments)
            for name in names {
                let run = try Subprocess.curl(["-x", daemon.proxy, "http://\(name):\(origin.httpPort)/small"])
                guard run.stdout.count == 100 else { throw HarnessError("http://\(name): \(run.stderr)") }
            }
            for port in [tls10.port, noFS.port, expired.port] {
                let run = try Subprocess.curl(["-k", "-p", "-x", daemon.proxy, "--tlsv1.0", "--ciphers", "DEFAULT:@SECLEVEL=0",
                                               "https://127.0.0.1:\(port)/"])
                guard run.stdout == "ok from tls_origin\n" else { throw HarnessError("https :\(port): \(run.stderr)") }
            }
            try daemon.waitForRecords(names.count + 3)
            daemon.process.stop()
            let log = try directory.write("decisions.log", daemon.process.stdout)
            return .success(Recorded(directory: directory, log: log, policy: policy, httpPort: origin.httpPort,
                                     tls10: tls10.port, noForwardSecrecy: noFS.port, expired: expired.port))
        } catch let error as HarnessError {
            return .failure(error)
        } catch {
            return .failure(HarnessError("\(error)"))
        }
    }()

    static func report(_ format: String, _ extra: [String] = []) throws -> (Recorded, AtsgateRun) {
        let recorded = try Self.recorded.get()
        let run = try Atsgate.run(["report", "--policy", recorded.policy, "--format", format] + network + extra + [recorded.log])
        return (recorded, run)
    }

    // MARK: the verdict

    @Test func theJSONSaysWhatWouldBreakWithTheNarrowestFix() throws {
        let (recorded, run) = try Self.report("json")
        #expect(run.status == 1, "something would be blocked: \(run.stderr)")
        let document = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        let app = try #require((document["apps"] as? [[String: Any]])?.first)
        let destinations = try #require(app["destinations"] as? [[String: Any]])
        func destination(_ url: String) throws -> [String: Any] {
            try #require(destinations.first { $0["url"] as? String == url }, "\(url) in \(destinations.map { $0["url"]! })")
        }
        func changes(_ url: String) throws -> [String] {
            let fix = try #require(try destination(url)["fix"] as? [String: Any], "\(url) has a fix")
            return (fix["changes"] as? [[String: Any]] ?? []).compactMap { $0["change"] as? String }
        }
        let port = recorded.httpPort
        #expect(destinations.count == 8)
        let blocked = destinations.filter { $0["blocked"] as? Bool == true }.compactMap { $0["url"] as? String }.sorted()
        #expect(blocked == ["http://a.media.example.net:\(port)", "http://api.example.com:\(port)",
                            "http://b.media.example.net:\(port)", "https://127.0.0.1:\(recorded.expired)",
                            "https://127.0.0.1:\(recorded.noForwardSecrecy)", "https://127.0.0.1:\(recorded.tls10)"].sorted())
        // Cleartext with an exception, and to a host a built-in covers: allowed.
        #expect(try destination("http://legacy.example.com:\(port)")["exception"] as? String == "legacy.example.com")
        #expect(try destination("http://setup.icloud.com:\(port)")["exception"] as? String == "builtin:setup.icloud.com")
        // Cleartext without: an entry for the host; two subdomains of one parent: each its own entry, and
        // the parent as the alternative, with what it covers and what else it opens.
        #expect(try changes("http://api.example.com:\(port)") == ["NSExceptionAllowsInsecureHTTPLoads=YES for api.example.com"])
        #expect(try changes("http://a.media.example.net:\(port)") == ["NSExceptionAllowsInsecureHTTPLoads=YES for a.media.example.net"])
        let alternative = try #require((try destination("http://b.media.example.net:\(port)")["fix"] as? [String: Any])?["alternative"]
            as? [String: Any])
        #expect(alternative["parent"] as? String == "media.example.net")
        #expect((alternative["changes"] as? [[String: Any]])?.compactMap { $0["change"] as? String }
                == ["NSIncludesSubdomains=YES for media.example.net", "NSExceptionAllowsInsecureHTTPLoads=YES for media.example.net"])
        #expect(alternative["destinations"] as? Int == 2)
        #expect((alternative["opens"] as? String)?.contains("every other subdomain") == true)
        // The handshakes: the version seen, forward secrecy off; both on the one entry for 127.0.0.1.
        #expect(try changes("https://127.0.0.1:\(recorded.tls10)").contains("NSExceptionMinimumTLSVersion=TLSv1.0 for 127.0.0.1"))
        #expect(try changes("https://127.0.0.1:\(recorded.noForwardSecrecy)").contains("NSExceptionRequiresForwardSecrecy=NO for 127.0.0.1"))
        let tls10Fix = try #require(try destination("https://127.0.0.1:\(recorded.tls10)")["fix"] as? [String: Any])
        #expect(tls10Fix["verified"] as? Bool == true)
        #expect(tls10Fix["justification"] as? Bool == true)
        // The expired certificate: no key, fix the server.
        let expired = try destination("https://127.0.0.1:\(recorded.expired)")
        #expect((expired["findings"] as? [[String: Any]])?.compactMap { $0["reason"] as? String } == ["certificate-expired"])
        let noKey = try #require(((expired["fix"] as? [String: Any])?["no_key"] as? [[String: Any]])?.first?["advice"] as? String)
        #expect(noKey.hasPrefix("fix the server") && noKey.contains("turns certificate checks off"))
        // Unused: the entry nothing used, and the one the built-in shadows.
        let unused = (app["unused"] as? [[String: Any]] ?? []).compactMap { ($0["key_path"] as? [String])?.joined(separator: ".") }
        #expect(unused == ["NSExceptionDomains.icloud.com", "NSExceptionDomains.unused.example.org"])
        let shadowed = (app["unused"] as? [[String: Any]])?.first?["note"] as? String ?? ""
        #expect(shadowed.contains("the built-in exception 'setup.icloud.com' decides setup.icloud.com before it"))
    }

    @Test func theTextIsCountsThenWhatBreaksThenUnused() throws {
        let (_, run) = try Self.report("text")
        #expect(run.status == 1)
        #expect(run.stdout.contains("8 destinations, 8 records"), "\(run.stdout)")
        #expect(run.stdout.contains("WOULD BREAK (6):"))
        #expect(run.stdout.contains("UNUSED (2, candidates to remove):"))
        #expect(run.stdout.contains("[App Review asks for a justification]"))
        #expect(run.stdout.hasSuffix("verdict: 6 destinations were or would be blocked\n"))
        let never = try Self.report("text", ["--fail-on", "never"]).1
        #expect(never.status == 0, "--fail-on never only wants the artefacts")
    }

    // MARK: the suggested dictionary, checked by atsgate check and by the daemon

    @Test func theSuggestedDictionaryAllowsEverythingRecordedButTheBadCertificate() throws {
        let (recorded, run) = try Self.report("plist")
        #expect(run.status == 1, "the expired certificate cannot be proven away")
        #expect(run.stdout.contains("<!-- NOT proven: https://127.0.0.1:\(recorded.expired) is still blocked (certificate-expired) -->"))
        let suggested = try recorded.directory.write("suggested.plist", run.stdout)
        #expect(!run.stdout.contains("unused.example.org") || run.stdout.contains("removed NSExceptionDomains.unused.example.org"))

        let port = recorded.httpPort
        let urls = Self.names.map { "http://\($0):\(port)/" }
        let check = try Atsgate.run(["check", "--policy", suggested] + Self.network + urls)
        #expect(check.status == 0, "every recorded cleartext load is allowed: \(check.stdout)")
        let tls = try Atsgate.run(["check", "--policy", suggested] + Self.network + ["https://127.0.0.1:\(recorded.tls10)/"])
        let requirements = try #require(try tls.jsonLines().first?["requirements"] as? [String: Any])
        #expect(requirements["minimumTLSVersion"] as? String == "TLSv1.0")
        #expect(requirements["forwardSecrecy"] as? Bool == false)
        #expect(requirements["certificateChecks"] as? Bool == true, "no key turned the certificate checks off")
        let before = try Atsgate.run(["check", "--policy", recorded.policy] + Self.network + urls)
        #expect(before.status == 1, "the app's own policy blocks them")

        // The daemon, enforcing the suggestion, lets the recorded traffic through, and still refuses the
        // expired certificate.
        let tls10 = try TLSTestOrigin(leaf: "good-rsa", arguments: ["--max", "TLSv1"])
        let noFS = try TLSTestOrigin(leaf: "good-rsa", arguments: ["--max", "TLSv1_2", "--ciphers", "AES128-SHA"])
        let expired = try TLSTestOrigin(leaf: "expired", arguments: ["--min", "TLSv1_2", "--max", "TLSv1_2"])
        let origin = try Origin()
        var arguments = ["--policy", suggested, "--ca-file", try TestPKI.shared.path("ca.pem")] + Self.network
        for port in [tls10.port, noFS.port, expired.port] { arguments += ["--connect-port", "\(port)"] }
        for name in Self.names { arguments += ["--resolve", "\(name)=127.0.0.1"] }
        let daemon = try Daemon(arguments)
        for name in Self.names {
            let run = try Subprocess.curl(["-x", daemon.proxy, "http://\(name):\(origin.httpPort)/small"])
            #expect(run.stdout.count == 100, "\(name) is let through: \(run.stdout)")
        }
        for (port, passes) in [(tls10.port, true), (noFS.port, true), (expired.port, false)] {
            let run = try Subprocess.curl(["-k", "-p", "-x", daemon.proxy, "--tlsv1.0", "--ciphers", "DEFAULT:@SECLEVEL=0",
                                           "https://127.0.0.1:\(port)/"])
            #expect((run.stdout == "ok from tls_origin\n") == passes, "port \(port): \(run.stderr)")
        }
        let (_, records) = try daemon.stop(expected: Self.names.count + 3)
        #expect(records.filter { $0["action"] as? String == "block" }.compactMap { $0["reason"] as? String } == ["certificate-expired"])
    }

    // MARK: CI formats, read by other programs

    @Test func junitParsesWithOneCasePerDestinationAndAFailurePerBlock() throws {
        let path = try Self.recorded.get().directory.url.appendingPathComponent("report.xml").path
        let (_, run) = try Self.report("junit", ["--output", path])
        #expect(run.status == 1)
        #expect(run.stdout.isEmpty, "the report went to the file")
        let script = """
            import sys, xml.etree.ElementTree as ET
            root = ET.parse(sys.argv[1]).getroot()
            cases = root.findall(".//testcase")
            failures = [c for c in cases if c.find("failure") is not None]
            skipped = [c for c in cases if c.find("skipped") is not None]
            print(root.tag, len(cases), len(failures), len(skipped), root.get("failures"))
            for c in failures:
                print(c.get("name"), c.find("failure").get("type"))
            """
        let parsed = try Subprocess.run(Origin.python, ["-c", script, path])
        #expect(parsed.status == 0, "\(parsed.stderr)")
        let lines = parsed.stdout.split(separator: "\n")
        // The daemon records each watched handshake's key exchange: curl on OpenSSL 3.0 offers no
        // post-quantum group, so its three TLS destinations are quantum-secure "unknown" (skipped).
        #expect(lines.first == "testsuites 13 6 5 6", "8 destinations + 2 unused keys + 3 quantum-secure: \(parsed.stdout)")
        #expect(lines.contains { $0.hasPrefix("http://api.example.com:") && $0.hasSuffix(" cleartext-http") })
        #expect(lines.contains { $0.hasSuffix(" certificate-expired") })
    }

    /// SARIF 2.1.0's required structure (sarif-schema-2.1.0.json's `required` lists for sarifLog, run,
    /// tool, toolComponent, result, message, location, physicalLocation, artifactLocation, region and
    /// reportingDescriptor), kept small here rather than vendoring the 3,000-line schema.
    static let sarifSchema = #"""
        {"type": "object", "required": ["version", "runs"],
         "properties": {
           "version": {"const": "2.1.0"},
           "runs": {"type": "array", "items": {"$ref": "#/definitions/run"}}},
         "definitions": {
           "message": {"type": "object", "anyOf": [{"required": ["text"]}, {"required": ["id"]}]},
           "run": {"type": "object", "required": ["tool"], "properties": {
             "tool": {"type": "object", "required": ["driver"], "properties": {
               "driver": {"type": "object", "required": ["name"], "properties": {
                 "name": {"type": "string"},
                 "rules": {"type": "array", "items": {"type": "object", "required": ["id"]}}}}}},
             "results": {"type": "array", "items": {"$ref": "#/definitions/result"}}}},
           "result": {"type": "object", "required": ["message"], "properties": {
             "message": {"$ref": "#/definitions/message"},
             "ruleIndex": {"type": "integer", "minimum": -1},
             "level": {"enum": ["none", "note", "warning", "error"]},
             "locations": {"type": "array", "items": {"type": "object", "properties": {
               "physicalLocation": {"type": "object", "anyOf": [{"required": ["address"]}, {"required": ["artifactLocation"]}],
                 "properties": {
                   "artifactLocation": {"type": "object", "properties": {"uri": {"type": "string", "format": "uri-reference"}}},
                   "region": {"type": "object", "properties": {"startLine": {"type": "integer", "minimum": 1}}}}}}}}}}}}
        """#

    @Test func sarifMatchesTheSchemaAndPointsAtThePolicyFilesKeys() throws {
        let (recorded, run) = try Self.report("sarif")
        #expect(run.status == 1)
        let sarif = try recorded.directory.write("report.sarif", run.stdout)
        let schema = try recorded.directory.write("sarif-required.json", Self.sarifSchema)
        let script = """
            import json, sys, jsonschema
            log = json.load(open(sys.argv[1]))
            jsonschema.validate(log, json.load(open(sys.argv[2])))
            for result in log["runs"][0]["results"]:
                location = result["locations"][0]["physicalLocation"]
                print(result["ruleId"], location["artifactLocation"]["uri"], location.get("region", {}).get("startLine"),
                      result["locations"][0]["logicalLocations"][0]["fullyQualifiedName"])
            """
        // The interpreter that has jsonschema: pip's, or Debian's python3-jsonschema (scripts/install-deps).
        let python = try #require([Origin.python, "/usr/bin/python3"].first {
            (try? Subprocess.run($0, ["-c", "import jsonschema"]).status) == 0
        }, "python3 with jsonschema (scripts/install-deps installs python3-jsonschema)")
        let checked = try Subprocess.run(python, ["-c", script, sarif, schema])
        #expect(checked.status == 0, "\(checked.stderr)")
        let lines = Self.policy.split(separator: "\n", omittingEmptySubsequences: false)
        let unusedLine = lines.firstIndex { $0.contains("\"unused.example.org\"") }! + 1
        #expect(checked.stdout.contains("unused-key \(recorded.policy) \(unusedLine) NSExceptionDomains.unused.example.org"), "\(checked.stdout)")
        #expect(checked.stdout.split(separator: "\n").filter { $0.hasPrefix("would-block ") }.count == 6)
    }

    @Test func theHTMLRendersInChromium() throws {
        let (recorded, run) = try Self.report("html", ["--output", try Self.recorded.get().directory.url.appendingPathComponent("report.html").path])
        #expect(run.status == 1)
        let page = recorded.directory.url.appendingPathComponent("report.html").path
        let html = try String(contentsOfFile: page, encoding: .utf8)
        for external in ["<script", "<link", "src=", "url("] { #expect(!html.contains(external), "self-contained: \(external)") }
        let chromium = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].first { FileManager.default.isExecutableFile(atPath: $0) }
        let browser = try #require(chromium, "scripts/install-deps installs chromium")
        let flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]
        let dom = try Subprocess.run(browser, flags + ["--dump-dom", "file://\(page)"], timeout: 60)
        #expect(dom.stdout.contains("6 destinations were or would be blocked"), "\(dom.stderr.suffix(500))")
        #expect(dom.stdout.components(separatedBy: "<svg").count - 1 == 3, "two charts and the quantum-secure share")
        let png = recorded.directory.url.appendingPathComponent("report.png").path
        let shot = try Subprocess.run(browser, flags + ["--screenshot=\(png)", "--window-size=1280,2000", "file://\(page)"],
                                      timeout: 60)
        let size = (try? FileManager.default.attributesOfItem(atPath: png)[.size] as? Int) ?? 0
        #expect(size > 50_000, "a screenshot with content: \(shot.stderr.suffix(300))")
    }

    // MARK: the gate: baselines, --consolidate, incomplete evidence, quantum-secure

    @Test func aBaselineMakesOnlyNewFindingsFailTheGate() throws {
        let recorded = try Self.recorded.get()
        let baseline = recorded.directory.url.appendingPathComponent("baseline.json").path
        #expect(try Self.report("json", ["--output", baseline]).1.status == 1)
        // The same log against its own report: every finding unchanged, the gate passes.
        let again = try Self.report("text", ["--baseline", baseline]).1
        #expect(again.status == 0, "nothing new: \(again.stdout)")
        #expect(again.stdout.contains("WOULD BREAK, UNCHANGED since the baseline (6):"))
        #expect(again.stdout.hasSuffix("verdict: 6 destinations were or would be blocked (0 new since the baseline)\n"))
        let sarif = try Self.report("sarif", ["--baseline", baseline]).1
        let results = try #require(((try JSONSerialization.jsonObject(with: Data(sarif.stdout.utf8)) as? [String: Any])?["runs"]
            as? [[String: Any]])?.first?["results"] as? [[String: Any]])
        #expect(results.count == 8 && results.allSatisfy { $0["baselineState"] as? String == "unchanged" }, "\(results.map { $0["baselineState"] ?? "-" })")
        let junit = try Self.report("junit", ["--baseline", baseline]).1
        #expect(junit.stdout.contains("failures=\"0\" errors=\"0\" skipped=\"11\""), "6 blocks, 2 unused keys and 3 quantum-secure unknowns skipped")

        // A new block in another log: it alone fails the gate; in this log alone the old ones are absent.
        let app = try #require(try Atsgate.run(["report", "--format", "json"] + Self.network + [recorded.log]).stdout
            .firstMatch(of: /"app": "([^"]+)"/)?.1)
        let newRecord = #"{"time":"2026-11-23T09:00:00.000Z","app":"\#(app)","policy":"\#(recorded.policy)","scheme":"http","host":"new.example.com","port":80,"action":"block","reason":"cleartext-http","enforced":false}"#
        let newLog = try recorded.directory.write("new.log", newRecord + "\n")
        let both = try Atsgate.run(["report", "--policy", recorded.policy, "--baseline", baseline] + Self.network + [recorded.log, newLog])
        #expect(both.status == 1)
        #expect(both.stdout.contains("WOULD BREAK, NEW since the baseline (1):\n    http://new.example.com:80  cleartext-http"))
        let alone = try Atsgate.run(["report", "--policy", recorded.policy, "--baseline", baseline] + Self.network + [newLog])
        #expect(alone.status == 1)
        #expect(alone.stdout.contains("ABSENT since the baseline (6):"), "the six blocks are gone: \(alone.stdout)")
        let html = try Atsgate.run(["report", "--policy", recorded.policy, "--baseline", baseline, "--format", "html"]
                                   + Self.network + [recorded.log, newLog])
        #expect(html.stdout.contains("<h3 class=\"new\">New since the baseline") && html.stdout.contains("<h3 class=\"unchanged\">"))
    }

    @Test func theSameAppsCapturesAreOneAppAndABaselineOfOneMatchesTheNext() throws {
        let directory = try TemporaryDirectory()
        let info = try directory.write("Info.plist", """
            <?xml version="1.0" encoding="UTF-8"?>
            <plist version="1.0"><dict><key>CFBundleIdentifier</key><string>com.example.shop</string>
            <key>NSAppTransportSecurity</key><dict/></dict></plist>
            """)
        func capture(_ name: String, _ urls: [String]) throws -> String {
            let entries = urls.map { url in
                #"{"startedDateTime":"2026-11-22T06:21:01.792Z","time":1,"request":{"method":"GET","url":"\#(url)","#
                    + #""httpVersion":"HTTP/1.1","headers":[],"queryString":[],"cookies":[],"headersSize":-1,"bodySize":0},"#
                    + #""response":{"status":200,"statusText":"OK","httpVersion":"HTTP/1.1","headers":[],"cookies":[],"#
                    + #""content":{"size":0,"mimeType":"text/plain"},"redirectURL":"","headersSize":-1,"bodySize":0},"#
                    + #""cache":{},"timings":{"send":0,"wait":1,"receive":0}}"#
            }
            return try directory.write(name, #"{"log":{"version":"1.2","creator":{"name":"test","version":"1"},"entries":["#
                                        + entries.joined(separator: ",") + "]}}")
        }
        let run1 = try capture("run1.har", ["http://api.example.com/v1"])
        let run2 = try capture("run2.har", ["http://api.example.com/v1", "http://new.example.com/"])
        let baseline = directory.url.appendingPathComponent("baseline.json").path
        let first = try Atsgate.run(["report", "--policy", info, "--format", "json", "--output", baseline, run1])
        #expect(first.status == 1, "\(first.stderr)")
        #expect(try String(contentsOfFile: baseline, encoding: .utf8).contains(#""app": "com.example.shop""#),
                "the app is its bundle identifier, not the capture's file name")
        let next = try Atsgate.run(["report", "--policy", info, "--baseline", baseline, run2])
        #expect(next.stdout.contains("WOULD BREAK, NEW since the baseline (1):\n    http://new.example.com:80  cleartext-http"),
                "\(next.stdout)")
        #expect(next.stdout.contains("WOULD BREAK, UNCHANGED since the baseline (1):\n    http://api.example.com:80"),
                "the same finding in the next capture is unchanged: \(next.stdout)")
    }

    @Test func consolidatedPlistUsesTheParentEntryAndStillAllowsEverythingRecorded() throws {
        let (recorded, narrow) = try Self.report("plist")
        #expect(narrow.stdout.contains("<key>a.media.example.net</key>") && !narrow.stdout.contains("<key>media.example.net</key>"),
                "the narrowest by default")
        let (_, run) = try Self.report("plist", ["--consolidate"])
        #expect(run.stdout.contains("<key>media.example.net</key>") && !run.stdout.contains("<key>a.media.example.net</key>"))
        let suggested = try recorded.directory.write("consolidated.plist", run.stdout)
        let urls = ["a.media.example.net", "b.media.example.net"].map { "http://\($0):\(recorded.httpPort)/" }
        #expect(try Atsgate.run(["check", "--policy", suggested] + Self.network + urls).status == 0)
    }

    @Test func aLogThatLostDecisionsExits2UnlessAllowedAndEveryFormatSaysSo() throws {
        let recorded = try Self.recorded.get()
        let overflow = #"{"time":"2026-11-23T09:00:00.000Z","client":null,"policy":"\#(recorded.policy)","scheme":null,"host":null,"port":null,"action":"error","reason":"log-overflow","message":"the decision log could not keep up","dropped":250}"#
        let log = try recorded.directory.write("overflowed.log",
                                               try String(contentsOfFile: recorded.log, encoding: .utf8) + overflow + "\n" + overflow + "\n")
        let missing = "\(log): 500 decisions missing (2 log-overflow records: the proxy made them but could not write them)"
        let run = try Atsgate.run(["report", "--policy", recorded.policy] + Self.network + [log])
        #expect(run.status == 2)
        #expect(run.stderr == "atsgate: incomplete evidence: \(missing); --allow-incomplete judges the rest anyway\n")
        #expect(run.stdout.contains("  INCOMPLETE: \(missing)\n"), "the report is still written")
        let allowed = try Atsgate.run(["report", "--policy", recorded.policy, "--allow-incomplete"] + Self.network + [log])
        #expect(allowed.status == 1, "judged: the blocks fail it")
        #expect(allowed.stdout.contains("INCOMPLETE: 500 decisions missing from the logs\n"))
        for (format, expected) in [("json", "\"missing_decisions\": 500"), ("html", "Incomplete evidence"),
                                   ("sarif", "\"ruleId\": \"incomplete-evidence\""), ("junit", "type=\"log-overflow\"")] {
            let output = try Atsgate.run(["report", "--policy", recorded.policy, "--format", format] + Self.network + [log])
            #expect(output.status == 2)
            #expect(output.stdout.contains(expected), "\(format) says so")
        }
    }

    @Test func theQuantumSecureSectionChangesTheExitStatusOnlyWhenRequired() throws {
        let directory = try TemporaryDirectory()
        func record(_ host: String, _ group: String) -> String {
            #"{"time":"2026-11-23T09:00:00.000Z","policy":"p.json","scheme":"https","host":"\#(host)","port":443,"action":"allow","reason":null,"tls_version":"TLSv1.3","cipher":"TLS_AES_128_GCM_SHA256","key_exchange":"\#(group)","pq_offered":true}"#
        }
        let log = try directory.write("pq.log", [record("pq.example.com", "X25519MLKEM768"), record("classic.example.com", "x25519")]
            .joined(separator: "\n"))
        let plain = try Atsgate.run(["report", log])
        #expect(plain.status == 0, "nothing blocked: \(plain.stdout)")
        #expect(plain.stdout.contains("quantum-secure (2 TLS destinations): 1 post-quantum, 1 answered a post-quantum offer with a classical group"))
        let sarif = try Atsgate.run(["report", "--format", "sarif", log])
        #expect(sarif.status == 0)
        #expect(sarif.stdout.contains("\"ruleId\": \"not-quantum-secure\"") && sarif.stdout.contains("\"level\": \"note\""))
        let required = try Atsgate.run(["report", "--require-quantum-secure", log])
        #expect(required.status == 1)
        #expect(required.stdout.contains("NOT QUANTUM-SECURE (required): https://classic.example.com:443 chose x25519"))
    }

    // MARK: inputs

    @Test func gzipStdinAndDirectoriesGiveTheSameVerdict() throws {
        let (recorded, plain) = try Self.report("json")
        try FileManager.default.createDirectory(at: recorded.directory.url.appendingPathComponent("logs"),
                                                withIntermediateDirectories: true)
        let copy = try recorded.directory.write("logs/one.log", try String(contentsOfFile: recorded.log, encoding: .utf8))
        let zipped = try Subprocess.run("/bin/gzip", ["-k", "-f", copy])
        #expect(zipped.status == 0)
        let gz = try Atsgate.run(["report", "--policy", recorded.policy, "--format", "json"] + Self.network + [copy + ".gz"])
        #expect(gz.stdout.replacingOccurrences(of: copy + ".gz", with: recorded.log) == plain.stdout)
        let stdin = try Atsgate.run(["report", "--policy", recorded.policy, "--format", "json"] + Self.network + ["-"],
                                    stdin: try String(contentsOfFile: recorded.log, encoding: .utf8))
        #expect(stdin.status == 1)
        #expect(stdin.stdout.replacingOccurrences(of: "\"path\": \"-\"", with: "\"path\": \"\(recorded.log)\"") == plain.stdout)
        // The directory holds the plain copy and the .gz: every record counted twice, same verdict.
        let directory = try Atsgate.run(["report", "--policy", recorded.policy] + Self.network
                                        + [recorded.directory.url.appendingPathComponent("logs").path])
        #expect(directory.status == 1)
        #expect(directory.stdout.contains("8 destinations, 16 records"), "\(directory.stdout)")
    }
}

/// Bad input: exit 2 with one line naming the file, or lines counted and reported, never fatal.
@Suite struct ReportBadInputTests {
    static let record = #"{"time":"2026-11-22T06:21:01.792Z","client":"127.0.0.1:58102","policy":"p.json","method":"GET","scheme":"https","host":"api.example.com","port":443,"class":"public","direct":false,"exception":null,"ats":"on","action":"allow","reason":null,"message":"ok","enforced":false,"tls_version":"TLSv1.3","cipher":"TLS_AES_128_GCM_SHA256","upstream_ip":null,"bytes_up":0,"bytes_down":0,"duration_ms":0.12}"#

    @Test(arguments: [
        ("empty.log", ""),
        ("nginx.log", "127.0.0.1 - - [22/Nov/2026:06:21:01 +0000] \"GET / HTTP/1.1\" 200 612 \"-\" \"curl/7.88\"\n"),
        ("objects.log", "{\"level\":\"info\",\"msg\":\"started\"}\n{\"level\":\"warn\"}\n"),
    ])
    func aLogWithoutDecisionRecordsExits2NamingIt(name: String, contents: String) throws {
        let directory = try TemporaryDirectory()
        let path = try directory.write(name, contents)
        let run = try Atsgate.run(["report", path])
        #expect(run.status == 2)
        #expect(run.stdout.isEmpty)
        #expect(run.stderr.hasPrefix("atsgate: \(path): no atsgate decision records"), "\(run.stderr)")
        #expect(run.stderr.split(separator: "\n").count == 1)
    }

    @Test func recordsWithMissingFieldsAndBrokenLinesAreCountedNotFatal() throws {
        let directory = try TemporaryDirectory()
        let log = ["atsgate: listening on 127.0.0.1:3128", Self.record, #"{"host":"api.example.com","port":80}"#,
                   #"{"time":"yesterday","action":"block"}"#, String(Self.record.prefix(60))].joined(separator: "\n")
        let path = try directory.write("mixed.log", log)
        let run = try Atsgate.run(["report", path])
        #expect(run.status == 0, "the one record is allowed: \(run.stderr)")
        #expect(run.stdout.contains("\(path): 4 of 5 lines skipped (line 1: not a JSON object; in all: 2 not a JSON object, "
                                    + "1 no time, action, 1 time is not an RFC 3339 UTC timestamp)"), "each kind named: \(run.stdout)")
        let json = try Atsgate.run(["report", "--format", "json", path])
        let input = try #require(((try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])?["inputs"]
            as? [[String: Any]])?.first)
        #expect(input["not_records"] as? Int == 2)
        #expect(input["missing_fields"] as? Int == 2)
    }

    @Test func aTruncatedGzipExits2NamingTheFile() throws {
        let directory = try TemporaryDirectory()
        let path = try directory.write("cut.log", Array(repeating: Self.record, count: 3000).joined(separator: "\n"))
        #expect(try Subprocess.run("/bin/gzip", ["-f", path]).status == 0)
        let data = try Data(contentsOf: URL(fileURLWithPath: path + ".gz"))
        try data.prefix(data.count - 100).write(to: URL(fileURLWithPath: path + ".gz"))
        let run = try Atsgate.run(["report", path + ".gz"])
        #expect(run.status == 2)
        #expect(run.stderr == "atsgate: \(path).gz: truncated gzip stream (the file ends inside compressed data)\n")
    }

    @Test(arguments: [("broken.json", "{\"NSExceptionDomains\": "), ("list.plist", "<plist><array/></plist>")])
    func aPolicyThatDoesNotParseExits2NamingIt(name: String, contents: String) throws {
        let directory = try TemporaryDirectory()
        let policy = try directory.write(name, contents)
        let log = try directory.write("ok.log", Self.record + "\n")
        let run = try Atsgate.run(["report", "--policy", policy, log])
        #expect(run.status == 2)
        #expect(run.stderr.hasPrefix("atsgate: \(policy):"), "\(run.stderr)")  // `FILE:LINE:COLUMN:` where it breaks
        #expect(run.stderr.split(separator: "\n").count == 1)
        #expect(run.stdout.isEmpty)
    }

    @Test func aBaselineFromAnotherToolExits2NamingIt() throws {
        let directory = try TemporaryDirectory()
        let log = try directory.write("ok.log", Self.record + "\n")
        let sarif = try directory.write("report.sarif", try Atsgate.run(["report", "--format", "sarif", log]).stdout)
        let lint = try directory.write("lint.json", #"{"NSAppTransportSecurity": {}}"#)
        for path in [sarif, lint] {
            let run = try Atsgate.run(["report", "--baseline", path, log])
            #expect(run.status == 2)
            #expect(run.stderr.hasPrefix("atsgate: \(path): not an atsgate report --format json document"), "\(run.stderr)")
            #expect(run.stdout.isEmpty)
        }
        let missing = try Atsgate.run(["report", "--baseline", "/nonexistent/baseline.json", log])
        #expect(missing.status == 2)
        #expect(missing.stderr == "atsgate: /nonexistent/baseline.json: cannot read the baseline\n")
    }

    @Test func aHARThatIsNotJSONExits2WithTheOffset() throws {
        let directory = try TemporaryDirectory()
        let path = try directory.write("capture.har", "<html>not a capture</html>")
        let run = try Atsgate.run(["report", path])
        #expect(run.status == 2)
        #expect(run.stderr == "atsgate: \(path): not valid HAR JSON at byte 0: expected the HAR document (a JSON object)\n")
        let empty = try directory.write("empty.har", #"{"log": {"version": "1.2", "entries": []}}"#)
        let none = try Atsgate.run(["report", empty])
        #expect(none.status == 2)
        #expect(none.stderr == "atsgate: \(empty): no HAR entries with an http(s) load (0 entries read)\n")
    }

    @Test func aMissingLogOrAnEmptyDirectoryExits2() throws {
        let run = try Atsgate.run(["report", "/nonexistent/decisions.log"])
        #expect(run.status == 2)
        #expect(run.stderr == "atsgate: /nonexistent/decisions.log: no such file or directory\n")
        let directory = try TemporaryDirectory()
        let empty = try Atsgate.run(["report", directory.url.path])
        #expect(empty.status == 2)
        #expect(empty.stderr == "atsgate: \(directory.url.path): no log files in the directory\n")
    }
}
