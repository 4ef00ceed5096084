import Foundation
import Testing

/// `atsgate lint` as a script sees it: exit codes, stderr, and the three output formats (INTERFACE.md).
@Suite struct LintCommandTests {
    static func plist(_ atsBody: String) -> String {
        """
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
        <plist version="1.0">
        <dict>
        \t<key>CFBundleIdentifier</key>
        \t<string>com.example.app</string>
        \t<key>NSAppTransportSecurity</key>
        \t<dict>
        \(atsBody)
        \t</dict>
        </dict>
        </plist>
        """
    }

    /// Line 9: NSAllowsArbitraryLoads (high); line 13: 'Example.com' (error); line 15:
    /// NSExceptionAllowsInsecureHTTPLoads (medium).
    static let dirty = plist("""
        \t\t<key>NSAllowsArbitraryLoads</key>
        \t\t<true/>
        \t\t<key>NSExceptionDomains</key>
        \t\t<dict>
        \t\t\t<key>Example.com</key>
        \t\t\t<dict>
        \t\t\t\t<key>NSExceptionAllowsInsecureHTTPLoads</key>
        \t\t\t\t<true/>
        \t\t\t</dict>
        \t\t</dict>
        """)

    static let clean = plist("""
        \t\t<key>NSExceptionDomains</key>
        \t\t<dict>
        \t\t\t<key>example.com</key>
        \t\t\t<dict>
        \t\t\t\t<key>NSIncludesSubdomains</key>
        \t\t\t\t<true/>
        \t\t\t\t<key>NSExceptionMinimumTLSVersion</key>
        \t\t\t\t<string>TLSv1.2</string>
        \t\t\t</dict>
        \t\t</dict>
        """)

    static let mediumOnly = plist("""
        \t\t<key>NSExceptionDomains</key>
        \t\t<dict>
        \t\t\t<key>legacy.example.com</key>
        \t\t\t<dict>
        \t\t\t\t<key>NSExceptionMinimumTLSVersion</key>
        \t\t\t\t<string>TLSv1.0</string>
        \t\t\t\t<key>NSExceptionRequiresForwardSecrecy</key>
        \t\t\t\t<false/>
        \t\t\t</dict>
        \t\t</dict>
        """)

    static func json(_ run: AtsgateRun) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
    }

    // MARK: Exit codes

    @Test func aCleanPolicyExitsZero() throws {
        let directory = try TemporaryDirectory()
        let path = try directory.write("Info.plist", Self.clean)
        let run = try Atsgate.run(["lint", path])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout == "\(path): no findings\n")
        #expect(run.stderr.isEmpty)
    }

    @Test func aHighFindingExitsOne() throws {
        let directory = try TemporaryDirectory()
        let path = try directory.write("ats.json", #"{"NSAllowsArbitraryLoads": true}"#)
        let run = try Atsgate.run(["lint", path])
        #expect(run.status == 1)
        #expect(run.stdout.contains("\(path): HIGH arbitrary-loads NSAllowsArbitraryLoads: "))
        #expect(run.stderr.isEmpty)
    }

    @Test func onlyMediumFindingsExitZero() throws {
        let directory = try TemporaryDirectory()
        let path = try directory.write("Info.plist", Self.mediumOnly)
        let run = try Atsgate.run(["lint", path])
        #expect(run.status == 0, "\(run.stdout)")
        #expect(run.stdout.contains(" MEDIUM weak-minimum-tls-version "))
        #expect(run.stdout.contains(" MEDIUM forward-secrecy-disabled "))
        #expect(run.stdout.hasSuffix("\(path): 2 findings (2 medium)\n"))
    }

    @Test func aMissingFileExitsTwoAndTheOtherFilesAreStillLinted() throws {
        let directory = try TemporaryDirectory()
        let good = try directory.write("Info.plist", Self.dirty)
        let missing = directory.url.appendingPathComponent("missing.plist").path
        let run = try Atsgate.run(["lint", missing, good])
        #expect(run.status == 2)
        #expect(run.stderr == "atsgate: \(missing): no such file\n")
        #expect(run.stdout.contains("\(good): HIGH arbitrary-loads "))
        #expect(run.stdout.contains("\(missing): not linted: no such file"))
    }

    @Test(arguments: [("notes.txt", "hello, not a plist\n", "not a property list"),
                      ("array.plist", "[1, 2]", "root is an array"),
                      ("broken.plist", "<plist><dict><key>a</key></plist>", "not a valid XML property list")])
    func anUnreadableFileExitsTwoNamingIt(name: String, contents: String, problem: String) throws {
        let directory = try TemporaryDirectory()
        let bad = try directory.write(name, contents)
        let good = try directory.write("ats.json", #"{"NSAllowsArbitraryLoads": true}"#)
        let run = try Atsgate.run(["lint", "--format", "json", bad, good])
        #expect(run.status == 2)
        let lines = run.stderr.split(separator: "\n")
        #expect(lines.count == 1)
        // `FILE: problem`, or `FILE:LINE:COLUMN: problem` where the text breaks.
        #expect(lines.first?.hasPrefix("atsgate: \(bad):") == true)
        #expect(run.stderr.contains(problem))
        let files = try #require(try Self.json(run)["files"] as? [[String: Any]])
        #expect((files[0]["error"] as? String)?.contains(problem) == true)
        #expect((files[1]["findings"] as? [Any])?.count == 1)
    }

    @Test func everyUnreadableFileIsNamedOnStderr() throws {
        let directory = try TemporaryDirectory()
        let first = directory.url.appendingPathComponent("a.plist").path
        let second = try directory.write("b.plist", "nope")
        let run = try Atsgate.run(["lint", first, second])
        #expect(run.status == 2)
        let lines = run.stderr.split(separator: "\n").map(String.init)
        #expect(lines.count == 2)
        #expect(lines[0].hasPrefix("atsgate: \(first): "))
        #expect(lines[1].hasPrefix("atsgate: \(second): "))
    }

    @Test func aDirectoryIsUnreadable() throws {
        let directory = try TemporaryDirectory()
        let run = try Atsgate.run(["lint", directory.url.path])
        #expect(run.status == 2)
        #expect(run.stderr.hasPrefix("atsgate: \(directory.url.path): "))
    }

    @Test func theProfileChangesTheVerdict() throws {
        let directory = try TemporaryDirectory()
        let path = try directory.write("ats.json", #"{"NSExceptionDomains": {"192.168.1.0/24": {"NSExceptionAllowsInsecureHTTPLoads": true}}}"#)
        #expect(try Atsgate.run(["lint", path]).status == 0)
        let old = try Atsgate.run(["lint", "--profile", "ios10", path])
        #expect(old.status == 1)
        #expect(old.stdout.contains(" ERROR ip-key-unsupported NSExceptionDomains.192.168.1.0/24: "))
    }

    // MARK: Formats

    @Test func textLinesHaveFileSeverityIdKeyPathAndMessage() throws {
        let directory = try TemporaryDirectory()
        let path = try directory.write("Info.plist", Self.dirty)
        let run = try Atsgate.run(["lint", "--format", "text", path])
        #expect(run.status == 1)
        let lines = run.stdout.split(separator: "\n").map(String.init)
        let prefix = "\(path): "
        #expect(lines.allSatisfy { $0.hasPrefix(prefix) })
        #expect(lines.contains { $0.hasPrefix(prefix + "HIGH arbitrary-loads NSAppTransportSecurity.NSAllowsArbitraryLoads: ")
            && $0.hasSuffix(" [justification required]") })
        #expect(lines.contains { $0.hasPrefix(prefix + "ERROR domain-key-uppercase NSAppTransportSecurity.NSExceptionDomains.Example.com: ")
            && $0.contains("Use 'example.com'") && !$0.hasSuffix("[justification required]") })
        #expect(lines.contains { $0.hasPrefix(prefix + "MEDIUM insecure-http-loads NSAppTransportSecurity.NSExceptionDomains.Example.com.NSExceptionAllowsInsecureHTTPLoads: ") })
        #expect(lines.last == prefix + "3 findings (1 error, 1 high, 1 medium)")
    }

    @Test func jsonIsOneDocument() throws {
        let directory = try TemporaryDirectory()
        let dirty = try directory.write("Info.plist", Self.dirty)
        let clean = try directory.write("clean.plist", Self.clean)
        let run = try Atsgate.run(["lint", "--format", "json", dirty, clean])
        #expect(run.status == 1)
        let document = try Self.json(run)
        #expect(document["profile"] as? String == "ios17")
        let files = try #require(document["files"] as? [[String: Any]])
        #expect(files.map { $0["file"] as? String } == [dirty, clean])
        #expect(files[0]["format"] as? String == "xml-plist")
        #expect(files[0]["root"] as? String == "Info.plist")
        let findings = try #require(files[0]["findings"] as? [[String: Any]])
        #expect(findings.map { $0["id"] as? String } == ["arbitrary-loads", "domain-key-uppercase", "insecure-http-loads"])
        let first = findings[0]
        #expect(first["severity"] as? String == "high")
        #expect(first["keyPath"] as? String == "NSAppTransportSecurity.NSAllowsArbitraryLoads")
        #expect(first["justification"] as? Bool == true)
        #expect(first["line"] as? Int == 9)
        #expect((first["message"] as? String)?.contains("(R12") == true)
        #expect(findings[1]["justification"] as? Bool == false)
        #expect((files[1]["findings"] as? [Any])?.isEmpty == true)
        let summary = try #require(document["summary"] as? [String: Any])
        #expect(summary["files"] as? Int == 2)
        #expect(summary["findings"] as? Int == 3)
        #expect(summary["error"] as? Int == 1)
        #expect(summary["high"] as? Int == 1)
        #expect(summary["medium"] as? Int == 1)
        #expect(summary["unreadable"] as? Int == 0)
    }

    @Test func sarifIsAValidLogWithRulesLevelsAndLines() throws {
        let directory = try TemporaryDirectory()
        let path = try directory.write("Info.plist", Self.dirty)
        let run = try Atsgate.run(["lint", "--format", "sarif", path])
        #expect(run.status == 1)
        let log = try Self.json(run)
        #expect(log["version"] as? String == "2.1.0")
        #expect(log["$schema"] as? String == "https://json.schemastore.org/sarif-2.1.0.json")
        let runs = try #require(log["runs"] as? [[String: Any]])
        #expect(runs.count == 1)
        let driver = try #require((runs[0]["tool"] as? [String: Any])?["driver"] as? [String: Any])
        #expect(driver["name"] as? String == "atsgate")
        #expect(driver["version"] is String)
        #expect((driver["informationUri"] as? String)?.hasPrefix("https://") == true)
        let rules = try #require(driver["rules"] as? [[String: Any]])
        let ruleIds = rules.compactMap { $0["id"] as? String }
        let results = try #require(runs[0]["results"] as? [[String: Any]])
        #expect(results.count == 3)
        var lines: [String: Int] = [:]
        var levels: [String: String] = [:]
        for result in results {
            let id = try #require(result["ruleId"] as? String)
            #expect(ruleIds.contains(id))
            #expect(ruleIds[try #require(result["ruleIndex"] as? Int)] == id)
            levels[id] = result["level"] as? String
            let location = try #require((result["locations"] as? [[String: Any]])?.first)
            let physical = try #require(location["physicalLocation"] as? [String: Any])
            #expect((physical["artifactLocation"] as? [String: Any])?["uri"] as? String == path)
            lines[id] = (physical["region"] as? [String: Any])?["startLine"] as? Int
            let logical = try #require((location["logicalLocations"] as? [[String: Any]])?.first)
            #expect((logical["fullyQualifiedName"] as? String)?.hasPrefix("NSAppTransportSecurity.") == true)
            #expect((result["message"] as? [String: Any])?["text"] is String)
            #expect((result["properties"] as? [String: Any])?["justification"] is Bool)
        }
        #expect(levels == ["arbitrary-loads": "error", "domain-key-uppercase": "error", "insecure-http-loads": "warning"])
        #expect(lines == ["arbitrary-loads": 9, "domain-key-uppercase": 13, "insecure-http-loads": 15])
        let text = Self.dirty.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(text[8].contains("<key>NSAllowsArbitraryLoads</key>"))
        #expect(text[12].contains("<key>Example.com</key>"))
        #expect(text[14].contains("<key>NSExceptionAllowsInsecureHTTPLoads</key>"))
    }

    @Test func sarifNotesAreLowAndInfo() throws {
        let directory = try TemporaryDirectory()
        let path = try directory.write("ats.json", #"{"NSAllowsLocalNetworking": true, "NSExceptionDomains": {"example.org.": {}}}"#)
        let run = try Atsgate.run(["lint", "--format", "sarif", path])
        #expect(run.status == 0)
        let results = try #require((try Self.json(run)["runs"] as? [[String: Any]])?.first?["results"] as? [[String: Any]])
        #expect(Set(results.compactMap { $0["ruleId"] as? String }) == ["local-networking", "domain-key-trailing-dot"])
        #expect(results.allSatisfy { $0["level"] as? String == "note" })
    }

    @Test func aBinaryPlistIsLintedWithoutLines() throws {
        let directory = try TemporaryDirectory()
        let info: [String: Any] = [
            "CFBundleIdentifier": "com.example.app",
            "NSAppTransportSecurity": ["NSAllowsArbitraryLoads": true,
                                       "NSExceptionDomains": ["example.com": ["NSExceptionMinimumTLSVersion": "TLSv1.1"]]],
        ]
        let data = try PropertyListSerialization.data(fromPropertyList: info, format: .binary, options: 0)
        let path = try directory.write("Info.plist", data)
        let run = try Atsgate.run(["lint", "--format", "json", path])
        #expect(run.status == 1, "\(run.stderr)")
        let file = try #require((try Self.json(run)["files"] as? [[String: Any]])?.first)
        #expect(file["format"] as? String == "binary-plist")
        #expect(file["root"] as? String == "Info.plist")
        let findings = try #require(file["findings"] as? [[String: Any]])
        #expect(findings.map { $0["id"] as? String } == ["arbitrary-loads", "exception-enforces-ats", "weak-minimum-tls-version"])
        #expect(findings.allSatisfy { $0["line"] == nil })

        let sarif = try Atsgate.run(["lint", "--format", "sarif", path])
        let results = try #require((try Self.json(sarif)["runs"] as? [[String: Any]])?.first?["results"] as? [[String: Any]])
        for result in results {
            let physical = (result["locations"] as? [[String: Any]])?.first?["physicalLocation"] as? [String: Any]
            #expect(physical?["region"] == nil)
        }
    }

    @Test func sarifReportsUnreadableFilesAsNotifications() throws {
        let directory = try TemporaryDirectory()
        let missing = directory.url.appendingPathComponent("gone.plist").path
        let run = try Atsgate.run(["lint", "--format", "sarif", missing])
        #expect(run.status == 2)
        let invocation = try #require(((try Self.json(run)["runs"] as? [[String: Any]])?.first?["invocations"] as? [[String: Any]])?.first)
        #expect(invocation["executionSuccessful"] as? Bool == false)
        let notification = try #require((invocation["toolExecutionNotifications"] as? [[String: Any]])?.first)
        #expect(((notification["message"] as? [String: Any])?["text"] as? String)?.contains(missing) == true)
    }

    // MARK: Keys written twice, files that break (issue 24)

    /// NSAppTransportSecurity twice (lines 7 and 15), NSAllowsLocalNetworking twice with the same value
    /// (lines 17 and 19).
    static let duplicated = """
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
        <plist version="1.0">
        <dict>
        	<key>CFBundleIdentifier</key>
        	<string>com.example.app</string>
        	<key>NSAppTransportSecurity</key>
        	<dict>
        		<key>NSExceptionDomains</key>
        		<dict>
        			<key>api.example.com</key>
        			<dict/>
        		</dict>
        	</dict>
        	<key>NSAppTransportSecurity</key>
        	<dict>
        		<key>NSAllowsLocalNetworking</key>
        		<true/>
        		<key>NSAllowsLocalNetworking</key>
        		<true/>
        	</dict>
        </dict>
        </plist>
        """

    @Test func keysWrittenTwiceAreFindingsInEveryFormat() throws {
        let directory = try TemporaryDirectory()
        let path = try directory.write("Info.plist", Self.duplicated)
        let text = try Atsgate.run(["lint", path])
        #expect(text.status == 1, "\(text.stderr)")
        #expect(text.stdout.contains("\(path): ERROR duplicate-key NSAppTransportSecurity: 'NSAppTransportSecurity' is written"
            + " twice in the Info.plist's root, at lines 7 and 15: the OS uses the last (line 15), so the one at line 7 has"
            + " no effect. It held {NSExceptionDomains = {api.example.com = {}}}, none of it in the one at line 15."))
        #expect(text.stdout.contains("\(path): MEDIUM duplicate-key-same-value NSAppTransportSecurity.NSAllowsLocalNetworking: "))

        let json = try Atsgate.run(["lint", "--format", "json", path])
        let findings = try #require((try Self.json(json)["files"] as? [[String: Any]])?.first?["findings"] as? [[String: Any]])
        let same = try #require(findings.first { $0["id"] as? String == "duplicate-key-same-value" })
        #expect(same["severity"] as? String == "medium" && same["line"] as? Int == 17)
        #expect((same["related"] as? [[String: Any]])?.first?["line"] as? Int == 19)

        let sarif = try Atsgate.run(["lint", "--format", "sarif", path])
        let results = try #require((try Self.json(sarif)["runs"] as? [[String: Any]])?.first?["results"] as? [[String: Any]])
        var regions: [String: [Int]] = [:]
        for result in results {
            guard let id = result["ruleId"] as? String, id.hasPrefix("duplicate-key") else { continue }
            let primary = ((result["locations"] as? [[String: Any]])?.first?["physicalLocation"] as? [String: Any])?["region"]
            let related = ((result["relatedLocations"] as? [[String: Any]])?.first?["physicalLocation"] as? [String: Any])?["region"]
            regions[id] = [primary, related].compactMap { ($0 as? [String: Any])?["startLine"] as? Int }
            #expect(result["level"] as? String == (id == "duplicate-key" ? "error" : "warning"))
        }
        #expect(regions == ["duplicate-key": [7, 15], "duplicate-key-same-value": [17, 19]])
    }

    @Test func aBrokenPlistIsReportedAtItsLineInEveryFormat() throws {
        let directory = try TemporaryDirectory()
        // The inner <dict> is never closed: </plist> on line 12 meets the root <dict>.
        let lines = Self.dirty.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var broken = lines
        broken.remove(at: lines.lastIndex { $0 == "\t</dict>" }!)
        let path = try directory.write("Info.plist", broken.joined(separator: "\n"))
        let line = broken.firstIndex { $0 == "</plist>" }! + 1

        let text = try Atsgate.run(["lint", path])
        #expect(text.status == 2)
        let expected = "\(path):\(line):1: not a valid XML property list: expected </dict> to close <dict> (opened at line 4),"
            + " found </plist>"
        #expect(text.stderr == "atsgate: \(expected)\n")
        #expect(text.stdout.hasPrefix("\(path):\(line):1: not linted: not a valid XML property list: expected </dict>"))

        let json = try Atsgate.run(["lint", "--format", "json", path])
        let file = try #require((try Self.json(json)["files"] as? [[String: Any]])?.first)
        #expect(file["error"] as? String == expected)
        #expect(file["line"] as? Int == line && file["column"] as? Int == 1)

        let sarif = try Atsgate.run(["lint", "--format", "sarif", path])
        #expect(sarif.status == 2)
        let run = try #require((try Self.json(sarif)["runs"] as? [[String: Any]])?.first)
        #expect(run["columnKind"] as? String == "unicodeCodePoints")
        let invocation = try #require((run["invocations"] as? [[String: Any]])?.first)
        let notification = try #require((invocation["toolExecutionNotifications"] as? [[String: Any]])?.first)
        let physical = (notification["locations"] as? [[String: Any]])?.first?["physicalLocation"] as? [String: Any]
        let region = try #require(physical?["region"] as? [String: Any])
        #expect(region["startLine"] as? Int == line && region["startColumn"] as? Int == 1)

        // check and run name the same place, and exit 2 as before.
        let check = try Atsgate.run(["check", "--policy", path, "http://example.com/"])
        #expect(check.status == 2 && check.stderr.contains("\(path):\(line):1: not a valid XML property list"))
    }

    @Test func aBrokenJSONPolicyIsReportedAtItsLine() throws {
        let directory = try TemporaryDirectory()
        let path = try directory.write("ats.json", "{\n  \"NSAllowsArbitraryLoads\": true\n  \"NSAllowsLocalNetworking\": true\n}\n")
        let run = try Atsgate.run(["lint", path])
        #expect(run.status == 2)
        #expect(run.stderr == "atsgate: \(path):3:3: not a valid JSON document: expected ',' or '}' after a member, found '\"'\n")
    }

    @Test func usageErrorsExitTwo() throws {
        #expect(try Atsgate.run(["lint"]).status == 2)
        let directory = try TemporaryDirectory()
        let path = try directory.write("ats.json", "{}")
        #expect(try Atsgate.run(["lint", "--format", "xml", path]).status == 2)
        #expect(try Atsgate.run(["lint", "--profile", "ios8", path]).status == 2)
    }
}
