import Foundation
import Testing
@testable import ATSLint
@testable import ATSPolicy

/// Keys written twice in the ATS part of a file (issue 24): one finding per key that has no effect, at its
/// line, naming the line the OS uses and what the other held; an error when the values differ, a warning
/// (medium, SARIF `warning`) when equal. Each case is its own document.
@Suite struct LintDuplicateKeyTests {
    typealias F = LintFixtures

    /// Lints an XML document given line by line (line N of the file is `lines[N - 1]`).
    static func lint(_ lines: [String], format: PolicyFileFormat = .xmlPlist) throws -> [LintFinding] {
        let text = lines.joined(separator: "\n")
        let source = try PolicyLoader.parse(data: Data(text.utf8), origin: format == .json ? "ats.json" : "Info.plist")
        return Linter().lint(source, text: text)
    }

    static let header = ["<?xml version=\"1.0\" encoding=\"UTF-8\"?>", "<plist version=\"1.0\">", "<dict>"]
    static let footer = ["</dict>", "</plist>"]

    @Test func theInfoPlistRootHoldsNSAppTransportSecurityTwice() throws {
        let lines = Self.header + [
            "<key>CFBundleIdentifier</key><string>com.example.shop</string>",  // 4
            "<key>NSAppTransportSecurity</key>",                                 // 5
            "<dict>",
            "  <key>NSExceptionDomains</key>",
            "  <dict>",
            "    <key>api.example.com</key>",
            "    <dict><key>NSExceptionAllowsInsecureHTTPLoads</key><true/></dict>",
            "  </dict>",
            "</dict>",
            "<key>NSAppTransportSecurity</key>",                                 // 13
            "<dict>",
            "  <key>NSAllowsLocalNetworking</key><true/>",                       // 15
            "</dict>",
        ] + Self.footer
        let text = lines.joined(separator: "\n")
        // `run` and `report` read the last dictionary, as Apple's parser does.
        let source = try F.parseXML(text)
        #expect(source.dictionary == [ATSKey.allowsLocalNetworking: .bool(true)])

        let findings = try Self.lint(lines)
        let finding = try findings.one(.duplicateKey)
        #expect(finding.severity == .error)
        #expect(finding.keyPath.description == "NSAppTransportSecurity")
        #expect(finding.line == 5)
        #expect(finding.related == [LintRelatedLine(line: 13, note: "the 'NSAppTransportSecurity' the OS uses")])
        #expect(finding.message.contains("at lines 5 and 13"))
        #expect(finding.message.contains("the OS uses the last (line 13), so the one at line 5 has no effect"))
        #expect(finding.message.contains("It held {NSExceptionDomains = {api.example.com ="
            + " {NSExceptionAllowsInsecureHTTPLoads = YES}}}, none of it in the one at line 13."))
        // The other findings point into the dictionary the OS uses, and nothing is said about what the dead
        // one holds.
        #expect(try findings.one(.localNetworking).line == 15)
        #expect(findings.with(.insecureHTTPLoads).isEmpty)
    }

    @Test func nsAppTransportSecurityTwiceWithTheSameValueIsAWarning() throws {
        let ats = "<dict><key>NSAllowsArbitraryLoads</key><false/></dict>"
        let lines = Self.header + ["<key>NSAppTransportSecurity</key>", ats, "<key>NSAppTransportSecurity</key>", ats]
            + Self.footer
        let finding = try Self.lint(lines).one(.duplicateKeySameValue)
        #expect(finding.severity == .medium && finding.severity.sarifLevel == "warning")
        #expect(finding.line == 4 && finding.related.map(\.line) == [6])
        #expect(finding.message.contains("with the same value"))
        #expect(finding.message.contains("the one at line 4 is redundant"))
        #expect(!finding.severity.failsLint)
    }

    @Test func aKeyInsideNSAppTransportSecurityTwiceWithDifferentValues() throws {
        let lines = Self.header + [
            "<key>NSAppTransportSecurity</key>",
            "<dict>",
            "  <key>NSAllowsArbitraryLoads</key>",   // 6
            "  <true/>",
            "  <key>NSAllowsArbitraryLoads</key>",   // 8
            "  <false/>",
            "</dict>",
        ] + Self.footer
        let source = try F.parseXML(lines.joined(separator: "\n"))
        #expect(source.dictionary[ATSKey.allowsArbitraryLoads] == .bool(false))
        let findings = try Self.lint(lines)
        let finding = try findings.one(.duplicateKey)
        #expect(finding.keyPath.description == "NSAppTransportSecurity.NSAllowsArbitraryLoads")
        #expect(finding.line == 6 && finding.related.map(\.line) == [8])
        #expect(finding.message.contains("'NSAllowsArbitraryLoads' is written twice in NSAppTransportSecurity, at lines 6 and 8"))
        #expect(finding.message.contains("It held YES; line 8 holds NO."))
        // The last value decides: no arbitrary-loads finding.
        #expect(findings.with(.arbitraryLoads).isEmpty)
    }

    @Test func aKeyWrittenThreeTimesGetsTwoFindings() throws {
        let lines = Self.header + [
            "<key>NSAppTransportSecurity</key>",
            "<dict>",
            "  <key>NSAllowsLocalNetworking</key><true/>",    // 6
            "  <key>NSAllowsLocalNetworking</key><false/>",   // 7
            "  <key>NSAllowsLocalNetworking</key><true/>",    // 8
            "</dict>",
        ] + Self.footer
        let findings = try Self.lint(lines)
        let differ = try findings.one(.duplicateKey)
        let same = try findings.one(.duplicateKeySameValue)
        #expect(differ.line == 7 && same.line == 6)
        #expect(differ.message.contains("written 3 times in NSAppTransportSecurity, at lines 6, 7 and 8"))
        #expect([differ, same].allSatisfy { $0.related.map(\.line) == [8] })
    }

    @Test func exceptionDomainKeysThatDifferOnlyInCaseAreOneDomain() throws {
        let lines = Self.header + [
            "<key>NSAppTransportSecurity</key>",
            "<dict>",
            "  <key>NSExceptionDomains</key>",
            "  <dict>",
            "    <key>example.com</key>",          // 8
            "    <dict><key>NSIncludesSubdomains</key><true/></dict>",
            "    <key>Example.com</key>",          // 10
            "    <dict><key>NSExceptionAllowsInsecureHTTPLoads</key><true/></dict>",
            "  </dict>",
            "</dict>",
        ] + Self.footer
        let findings = try Self.lint(lines)
        // The lowercase key is the one that matches (R5), even written first.
        let finding = try findings.one(.duplicateKey)
        #expect(finding.keyPath.description == "NSAppTransportSecurity.NSExceptionDomains.Example.com")
        #expect(finding.line == 10 && finding.related.map(\.line) == [8])
        #expect(finding.message.contains("'Example.com' (line 10) and 'example.com' (line 8) in NSExceptionDomains name"
            + " the same domain"))
        #expect(finding.message.contains("only 'example.com' applies and the entry at line 10 never does"))
        #expect(finding.message.contains("It held {NSExceptionAllowsInsecureHTTPLoads = YES}, none of it in the one at line 8."))
        #expect(finding.message.contains("(R5)"))
    }

    @Test func exceptionDomainKeysInCaseVariantsWithTheSameEntry() throws {
        let entry = "<dict><key>NSIncludesSubdomains</key><true/></dict>"
        let lines = Self.header + [
            "<key>NSExceptionDomains</key>",
            "<dict>",
            "<key>CDN.example.com</key>", entry,       // 6
            "<key>cdn.example.com</key>", entry,       // 8
            "</dict>",
        ] + Self.footer
        let finding = try Self.lint(lines).one(.duplicateKeySameValue)
        #expect(finding.keyPath.description == "NSExceptionDomains.CDN.example.com")
        #expect(finding.line == 6 && finding.related.map(\.line) == [8])
        #expect(finding.message.contains("is redundant. Remove it."))
    }

    @Test func domainKeysWithoutALowercaseSpellingMatchNothing() throws {
        let lines = Self.header + [
            "<key>NSExceptionDomains</key>",
            "<dict>",
            "<key>Example.com</key><dict/>",                                               // 6
            "<key>EXAMPLE.COM</key><dict><key>NSIncludesSubdomains</key><true/></dict>",   // 7
            "</dict>",
        ] + Self.footer
        let finding = try Self.lint(lines).one(.duplicateKey)
        #expect(finding.line == 6 && finding.related.map(\.line) == [7])
        #expect(finding.message.contains("neither is written in lowercase, so neither applies (R5)"))
        #expect(finding.message.contains("Keep one entry, written 'example.com'."))
    }

    @Test func anExceptionDomainKeyWrittenTwiceExactly() throws {
        let lines = Self.header + [
            "<key>NSExceptionDomains</key>",
            "<dict>",
            "<key>api.example.com</key>",                                                  // 6
            "<dict><key>NSExceptionMinimumTLSVersion</key><string>TLSv1.0</string></dict>",
            "<key>api.example.com</key>",                                                  // 8
            "<dict><key>NSIncludesSubdomains</key><true/></dict>",
            "</dict>",
        ] + Self.footer
        let findings = try Self.lint(lines)
        let finding = try findings.one(.duplicateKey)
        #expect(finding.line == 6 && finding.related.map(\.line) == [8])
        #expect(finding.message.contains("in NSExceptionDomains, at lines 6 and 8: the OS uses the last (line 8)"))
        #expect(finding.message.contains("It held {NSExceptionMinimumTLSVersion = \"TLSv1.0\"}, none of it in the one at line 8."))
        // The weak TLS version is in the dead entry: no finding about it.
        #expect(findings.with(.weakMinimumTLSVersion).isEmpty)
    }

    @Test func whatIsLostAndWhatDiffersAreListed() throws {
        let lines = Self.header + [
            "<key>NSExceptionDomains</key>",
            "<dict>",
            "<key>a.example.com</key>",                                                                    // 6
            "<dict><key>NSIncludesSubdomains</key><true/><key>NSExceptionMinimumTLSVersion</key><string>TLSv1.1</string></dict>",
            "<key>a.example.com</key>",                                                                    // 8
            "<dict><key>NSIncludesSubdomains</key><false/></dict>",
            "</dict>",
        ] + Self.footer
        let finding = try Self.lint(lines).one(.duplicateKey)
        #expect(finding.message.contains("Lost with it: NSExceptionMinimumTLSVersion = \"TLSv1.1\"."))
        #expect(finding.message.contains("Different: NSIncludesSubdomains (YES here, NO at line 8)."))
    }

    @Test func aKeyWrittenTwiceInsideOneEntry() throws {
        let lines = Self.header + [
            "<key>NSExceptionDomains</key>",
            "<dict>",
            "  <key>legacy.example.com</key>",
            "  <dict>",
            "    <key>NSExceptionMinimumTLSVersion</key><string>TLSv1.2</string>",   // 8
            "    <key>NSExceptionMinimumTLSVersion</key><string>TLSv1.0</string>",   // 9
            "  </dict>",
            "</dict>",
        ] + Self.footer
        let findings = try Self.lint(lines)
        let finding = try findings.one(.duplicateKey)
        #expect(finding.keyPath.description == "NSExceptionDomains.legacy.example.com.NSExceptionMinimumTLSVersion")
        #expect(finding.message.contains("in the NSExceptionDomains entry 'legacy.example.com', at lines 8 and 9"))
        #expect(finding.message.contains("It held \"TLSv1.2\"; line 9 holds \"TLSv1.0\"."))
        // The weak version the OS uses is reported at its own line.
        #expect(try findings.one(.weakMinimumTLSVersion).line == 9)
    }

    @Test func pinnedDomainsAreCheckedToo() throws {
        let lines = Self.header + [
            "<key>NSPinnedDomains</key>",
            "<dict>",
            "<key>Pins.example.com</key><dict><key>NSIncludesSubdomains</key><true/></dict>",   // 6
            "<key>pins.example.com</key><dict/>",                                               // 7
            "</dict>",
        ] + Self.footer
        let finding = try Self.lint(lines).one(.duplicateKey)
        #expect(finding.keyPath.description == "NSPinnedDomains.Pins.example.com")
        #expect(finding.message.contains("in NSPinnedDomains name the same domain"))
    }

    @Test func keysOutsideTheATSDictionaryAreNotItsBusiness() throws {
        let lines = Self.header + [
            "<key>CFBundleName</key><string>A</string>",
            "<key>CFBundleName</key><string>B</string>",
            "<key>NSAppTransportSecurity</key><dict/>",
        ] + Self.footer
        #expect(try Self.lint(lines).isEmpty)
    }

    @Test func keysThatDifferInCaseOutsideTheDomainTablesAreDifferentKeys() throws {
        let lines = Self.header + ["<key>NSAllowsArbitraryLoads</key><false/>", "<key>nsallowsarbitraryloads</key><true/>"]
            + Self.footer
        let findings = try Self.lint(lines)
        #expect(findings.with(.duplicateKey).isEmpty && findings.with(.duplicateKeySameValue).isEmpty)
    }

    @Test func jsonKeepsTheFirstAndSaysSo() throws {
        let lines = [
            "{",
            "  \"NSAllowsArbitraryLoads\": true,",    // 2
            "  \"NSAllowsArbitraryLoads\": false",    // 3
            "}",
        ]
        let source = try PolicyLoader.parse(data: Data(lines.joined(separator: "\n").utf8), origin: "ats.json")
        #expect(source.dictionary[ATSKey.allowsArbitraryLoads] == .bool(true))
        let findings = try Self.lint(lines, format: .json)
        let finding = try findings.one(.duplicateKey)
        #expect(finding.line == 3 && finding.related.map(\.line) == [2])
        #expect(finding.message.contains("atsgate's JSON reader uses the first"))
        #expect(try findings.one(.arbitraryLoads).line == 2)
    }

    @Test func withoutTheTextThereIsNothingToSay() throws {
        let lines = Self.header + ["<key>NSAllowsArbitraryLoads</key><false/>", "<key>NSAllowsArbitraryLoads</key><true/>"]
            + Self.footer
        let source = try F.parseXML(lines.joined(separator: "\n"))
        #expect(Linter().lint(source).with(.duplicateKey).isEmpty)
    }

    @Test func theReportsCarryBothLines() throws {
        let lines = Self.header + ["<key>NSAllowsArbitraryLoads</key><false/>", "<key>NSAllowsArbitraryLoads</key><true/>"]
            + Self.footer
        let text = lines.joined(separator: "\n")
        let report = LintReport(profile: .ios17, files: [Linter().lintFile(try F.parseXML(text), text: text)])

        let json = try #require(try JSONSerialization.jsonObject(with: Data(report.json.compact.utf8)) as? [String: Any])
        let files = try #require(json["files"] as? [[String: Any]])
        let findings = try #require(files.first?["findings"] as? [[String: Any]])
        let duplicate = try #require(findings.first { $0["id"] as? String == "duplicate-key" })
        #expect(duplicate["line"] as? Int == 4)
        let related = try #require(duplicate["related"] as? [[String: Any]])
        #expect(related.first?["line"] as? Int == 5)

        let sarif = try #require(try JSONSerialization.jsonObject(
            with: Data(report.sarif(toolVersion: "1.0").compact.utf8)) as? [String: Any])
        let run = try #require((sarif["runs"] as? [[String: Any]])?.first)
        let results = try #require(run["results"] as? [[String: Any]])
        let result = try #require(results.first { $0["ruleId"] as? String == "duplicate-key" })
        #expect(result["level"] as? String == "error")
        let location = try #require((result["locations"] as? [[String: Any]])?.first?["physicalLocation"] as? [String: Any])
        #expect((location["region"] as? [String: Any])?["startLine"] as? Int == 4)
        let relatedLocation = try #require((result["relatedLocations"] as? [[String: Any]])?.first)
        let relatedRegion = (relatedLocation["physicalLocation"] as? [String: Any])?["region"] as? [String: Any]
        #expect(relatedRegion?["startLine"] as? Int == 5)
        #expect((relatedLocation["message"] as? [String: Any])?["text"] as? String == "the 'NSAllowsArbitraryLoads' the OS uses")
    }
}
