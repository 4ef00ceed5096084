import Foundation
import Testing
@testable import ATSLint
@testable import ATSPolicy

/// The rule table, ordering, key paths, line numbers and the three output formats.
@Suite struct LintReportTests {
    typealias F = LintFixtures

    /// An XML Info.plist with known lines: NSAllowsArbitraryLoads on line 7, the bad key on line 11,
    /// NSExceptionMinimumTLSVersion on line 13.
    static let infoPlist = """
        <?xml version="1.0" encoding="UTF-8"?>
        <plist version="1.0">
        <dict>
        \t<key>CFBundleIdentifier</key>
        \t<string>com.example.app</string>
        \t<key>NSAppTransportSecurity</key>
        \t<dict><key>NSAllowsArbitraryLoads</key><true/>
        \t\t<key>NSExceptionDomains</key>
        \t\t<dict>
        \t\t\t<key>a.example.com</key><dict/>
        \t\t\t<key>Example.com</key>
        \t\t\t<dict>
        \t\t\t\t<key>NSExceptionMinimumTLSVersion</key>
        \t\t\t\t<string>TLSv1.0</string>
        \t\t\t</dict>
        \t\t</dict>
        \t</dict>
        </dict>
        </plist>
        """

    // MARK: Rule table

    @Test func ruleIdsAreUniqueStableKebabCase() {
        let ids = LintRule.allCases.map(\.id)
        #expect(Set(ids).count == ids.count)
        for id in ids {
            #expect(id.allSatisfy { $0.isLowercase || $0.isNumber || $0 == "-" }, "\(id)")
            #expect(!id.hasPrefix("-") && !id.hasSuffix("-") && !id.contains("--"), "\(id)")
        }
        // Scripts depend on these spellings.
        #expect(LintRule.arbitraryLoads.id == "arbitrary-loads")
        #expect(LintRule.insecureHTTPLoads.id == "insecure-http-loads")
    }

    @Test(arguments: LintRule.allCases)
    func everyRuleHasItsTexts(rule: LintRule) {
        #expect(!rule.title.isEmpty && !rule.summary.isEmpty && !rule.help.isEmpty)
        #expect(!rule.specRules.isEmpty && rule.specRules.allSatisfy { $0.hasPrefix("R") })
    }

    @Test func justificationIsRequiredExactlyForTheRelaxationsAppReviewAsksAbout() {
        let justified = Set(LintRule.allCases.filter(\.justification))
        #expect(justified == [.arbitraryLoads, .arbitraryLoadsIgnored, .arbitraryLoadsForMedia,
                              .arbitraryLoadsInWebContent, .insecureHTTPLoads, .weakMinimumTLSVersion])
        #expect(!LintRule.localNetworking.justification && !LintRule.forwardSecrecyDisabled.justification)
    }

    // MARK: Ordering and key paths

    @Test func findingsAreSortedByKeyPathThenId() throws {
        let source = try F.parseXML(Self.infoPlist)
        let findings = Linter().lint(source)
        let keys = findings.map { ($0.keyPath.description, $0.id) }
        #expect(keys.map(\.0) == keys.map(\.0).sorted())
        for (a, b) in zip(keys, keys.dropFirst()) where a.0 == b.0 { #expect(a.1 <= b.1) }
        #expect(findings.map(\.id) == Linter().lint(source).map(\.id))
    }

    @Test func keyPathRendering() {
        let base = LintKeyPath(prefix: "NSAppTransportSecurity").appending("NSExceptionDomains")
        #expect(base.appending("example.com").appending("NSIncludesSubdomains").description
                == "NSAppTransportSecurity.NSExceptionDomains.example.com.NSIncludesSubdomains")
        #expect(base.appending("").description == "NSAppTransportSecurity.NSExceptionDomains.\"\"")
        #expect(base.appending(" a b").description == "NSAppTransportSecurity.NSExceptionDomains.\" a b\"")
        #expect(base.appending("x\ny").description == "NSAppTransportSecurity.NSExceptionDomains.\"x\\ny\"")
        #expect(LintKeyPath(prefix: "").appending("NSPinnedCAIdentities").appending(index: 2).appending("K").description
                == "NSPinnedCAIdentities[2].K")
    }

    // MARK: Line numbers

    @Test func xmlLinesPointAtTheKeys() throws {
        let source = try F.parseXML(Self.infoPlist)
        let findings = Linter().lint(source, text: Self.infoPlist)
        #expect(try findings.one(.arbitraryLoads).line == 7)
        #expect(try findings.one(.domainKeyUppercase).line == 11)
        #expect(try findings.one(.weakMinimumTLSVersion).line == 13)
        #expect(try findings.one(.exceptionEnforcesATS).line == 10)
        #expect(Linter().lint(source).allSatisfy { $0.line == nil })
    }

    @Test func jsonLinesPointAtKeysNotValues() throws {
        let text = """
            {
              "NSExceptionDomains": {
                "note": {"x": "NSExceptionMinimumTLSVersion"},
                "example.com": {
                  "NSExceptionMinimumTLSVersion": "TLSv1.1"
                }
              }
            }
            """
        let source = try PolicyLoader.parse(data: Data(text.utf8), origin: "ats.json")
        let findings = Linter().lint(source, text: text)
        #expect(try findings.one(.weakMinimumTLSVersion).line == 5)
        #expect(try findings.one(.unknownKey).line == 3)
    }

    @Test func pinElementLinesFollowTheIndex() throws {
        let text = F.xmlPlist("""
            <key>NSPinnedDomains</key>
            <dict>
              <key>example.com</key>
              <dict>
                <key>NSPinnedLeafIdentities</key>
                <array>
                  <dict><key>SPKI-SHA256-BASE64</key><string>\(F.digest)</string></dict>
                  <dict><key>SPKI-SHA256-BASE64</key><string>AAAA</string></dict>
                </array>
              </dict>
            </dict>
            """)
        let findings = Linter().lint(try F.parseXML(text), text: text)
        let line = text.split(separator: "\n", omittingEmptySubsequences: false)
            .firstIndex { $0.contains("AAAA") }.map { $0 + 1 }
        #expect(try findings.one(.pinIdentityInvalid).line == line)
    }

    // MARK: Formats

    static func report() throws -> LintReport {
        let linter = Linter()
        let dirty = linter.lintFile(try F.parseXML(Self.infoPlist), text: Self.infoPlist)
        let clean = linter.lintFile(F.source([:]))
        return LintReport(profile: .ios17, files: [dirty, clean,
                                                   .unreadable(path: "gone.plist", error: "gone.plist: no such file")])
    }

    @Test func textHasOneLinePerFindingAndSummaries() throws {
        let report = try Self.report()
        let lines = report.text.split(separator: "\n").map(String.init)
        #expect(lines.contains(
            "Info.plist: HIGH arbitrary-loads NSAppTransportSecurity.NSAllowsArbitraryLoads: "
            + (try report.files[0].findings.one(.arbitraryLoads).message) + " [justification required]"))
        let medium = try #require(lines.first { $0.contains(" weak-minimum-tls-version ") })
        #expect(medium.hasPrefix("Info.plist: MEDIUM weak-minimum-tls-version NSAppTransportSecurity.NSExceptionDomains.Example.com.NSExceptionMinimumTLSVersion: "))
        let error = try #require(lines.first { $0.contains(" domain-key-uppercase ") })
        #expect(!error.hasSuffix("[justification required]"))
        #expect(lines.contains("Info.plist: 4 findings (1 error, 1 high, 1 medium, 1 info)"))
        #expect(lines.contains("<test>: no findings"))
        #expect(lines.contains("gone.plist: not linted: no such file"))
        #expect(lines.last == "total: 4 findings (1 error, 1 high, 1 medium, 1 info) in 2 files; 1 unreadable")
    }

    @Test func jsonIsOneDocumentWithFilesFindingsAndSummary() throws {
        let report = try Self.report()
        let object = try #require(try JSONSerialization.jsonObject(with: Data(report.json.pretty.utf8)) as? [String: Any])
        #expect(object["profile"] as? String == "ios17")
        let files = try #require(object["files"] as? [[String: Any]])
        #expect(files.count == 3)
        #expect(files[0]["file"] as? String == "Info.plist")
        #expect(files[0]["format"] as? String == "xml-plist")
        #expect(files[0]["root"] as? String == "Info.plist")
        let findings = try #require(files[0]["findings"] as? [[String: Any]])
        let first = findings[0]
        #expect(Set(first.keys) == ["id", "severity", "keyPath", "message", "justification", "line"])
        #expect(first["id"] as? String == "arbitrary-loads")
        #expect(first["justification"] as? Bool == true)
        #expect(first["line"] as? Int == 7)
        #expect(files[2]["error"] as? String == "gone.plist: no such file")
        #expect(files[2]["findings"] == nil)
        let summary = try #require(object["summary"] as? [String: Any])
        #expect(summary["files"] as? Int == 3)
        #expect(summary["unreadable"] as? Int == 1)
        #expect(summary["findings"] as? Int == 4)
        #expect(summary["high"] as? Int == 1)
    }

    @Test func sarifResultsReferToTheRulesTable() throws {
        let report = try Self.report()
        let log = try #require(try JSONSerialization.jsonObject(with: Data(report.sarif(toolVersion: "9.9.9").pretty.utf8))
            as? [String: Any])
        #expect(log["version"] as? String == "2.1.0")
        #expect(log["$schema"] as? String == "https://json.schemastore.org/sarif-2.1.0.json")
        let run = try #require((log["runs"] as? [[String: Any]])?.first)
        let driver = try #require((run["tool"] as? [String: Any])?["driver"] as? [String: Any])
        #expect(driver["name"] as? String == "atsgate")
        #expect(driver["version"] as? String == "9.9.9")
        let rules = try #require(driver["rules"] as? [[String: Any]])
        #expect(rules.compactMap { $0["id"] as? String } == LintRule.allCases.map(\.id))
        for rule in rules {
            let properties = try #require(rule["properties"] as? [String: Any])
            #expect(Double(try #require(properties["security-severity"] as? String)) != nil)
            #expect((properties["tags"] as? [String])?.isEmpty == false)
            #expect((rule["defaultConfiguration"] as? [String: Any])?["level"] is String)
            #expect((rule["shortDescription"] as? [String: Any])?["text"] is String)
        }
        let results = try #require(run["results"] as? [[String: Any]])
        #expect(results.count == 4)
        for result in results {
            let id = try #require(result["ruleId"] as? String)
            let index = try #require(result["ruleIndex"] as? Int)
            #expect(rules[index]["id"] as? String == id)
            let rule = try #require(LintRule(rawValue: id))
            #expect(result["level"] as? String == rule.severity.sarifLevel)
        }
        let invocation = try #require((run["invocations"] as? [[String: Any]])?.first)
        #expect(invocation["executionSuccessful"] as? Bool == false)
    }

    @Test(arguments: [(LintSeverity.error, "error"), (.high, "error"), (.medium, "warning"), (.low, "note"),
                      (.info, "note")])
    func sarifLevels(severity: LintSeverity, level: String) {
        #expect(severity.sarifLevel == level)
    }

    @Test func sarifURIsAreThePathAsGivenEscapedOnlyWhereNeeded() {
        #expect(LintReport.sarifURI("config/Info.plist") == "config/Info.plist")
        #expect(LintReport.sarifURI("/tmp/My App/Info.plist") == "/tmp/My%20App/Info.plist")
    }

    @Test(arguments: [
        ([], 0), ([LintRule.arbitraryLoads], 1), ([.notABoolean], 1), ([.insecureHTTPLoads, .domainKeyTrailingDot], 0),
    ] as [([LintRule], Int32)])
    func exitStatusFollowsTheWorstSeverity(rules: [LintRule], status: Int32) {
        let findings = rules.map { LintFinding(rule: $0, keyPath: LintKeyPath(prefix: "K"), message: "m") }
        let file = LintFileResult(path: "f", format: .json, root: .bare, findings: findings)
        #expect(LintReport(profile: .ios17, files: [file]).exitStatus == status)
        #expect(LintReport(profile: .ios17, files: [file, .unreadable(path: "g", error: "g: x")]).exitStatus == 2)
    }
}

/// Each lint rule is one type (Rules/): the list of types covers every id once, in `LintRule` order.
@Suite struct LintRuleTypeTests {
    @Test func everyRuleHasExactlyOneType() {
        #expect(Lints.all.map { $0.rule } == LintRule.allCases)
    }

    @Test(arguments: LintRule.allCases)
    func theRuleReadsItsTextsFromItsType(rule: LintRule) {
        let type = rule.definition
        #expect(type.rule == rule)
        #expect(rule.severity == type.severity && rule.title == type.title && rule.help == type.help)
    }
}
