import Foundation
import Testing
import TestSupport
@testable import ATSLint
@testable import ATSPolicy

/// The linter never traps, whatever the dictionary holds, and every finding reads as documented.
@Suite struct LintRobustnessTests {
    typealias F = LintFixtures

    /// A small deterministic generator (SplitMix64), so failures reproduce.
    typealias Generator = SeededGenerator

    static let keys = ATSKey.topLevel + ATSKey.exceptionEntry + ATSKey.pinnedEntry + [ATSKey.spkiSHA256]
        + Array(KeySpelling.legacyKeys.keys) + [
            "", " ", "Example.com", "*.example.com", "10.0.0.1/8", "10.0.0.0/33", "::1", "[::1]:80", "010.0.0.1",
            "example.com.", ".", "..", "/", ":", "https://", "a\u{0}b", "ü.example", "😀", "1.2.3.4.5", "0x",
            "2001:db8:::1/200", "10/8", "a/b/c", String(repeating: "x", count: 5_000), "NSIncludeSubdomains",
            "%", "[", "]", "\"", "@", "#",
        ]

    static func value(_ generator: inout Generator, depth: Int) -> PlistValue {
        switch generator.next() % (depth > 3 ? 6 : 9) {
        case 0: return .bool(generator.next() % 2 == 0)
        case 1: return .string(generator.pick(["YES", "TLSv1.0", "TLSv1.4", "", F.digest, "AAAA", "1.2"] + keys))
        case 2: return .integer(Int64(bitPattern: generator.next()))
        case 3: return .real(Double(generator.next() % 1000) / 7)
        case 4: return .data(Data(repeating: 1, count: Int(generator.next() % 40)))
        case 5: return .null
        case 6, 7:
            var dictionary: [String: PlistValue] = [:]
            for _ in 0..<(generator.next() % 6) {
                dictionary[generator.pick(keys)] = value(&generator, depth: depth + 1)
            }
            return .dictionary(dictionary)
        default:
            return .array((0..<(generator.next() % 4)).map { _ in value(&generator, depth: depth + 1) })
        }
    }

    @Test(arguments: 0..<8)
    func randomDictionariesNeverTrap(seed: Int) {
        var generator = Generator(seed: UInt64(seed))
        for _ in 0..<150 {
            guard case .dictionary(let dictionary) = Self.value(&generator, depth: 0) else { continue }
            for profile in Profile.allCases {
                let findings = Linter(profile: profile).lint(F.source(dictionary, root: .infoPlist))
                for finding in findings {
                    #expect(finding.keyPath.description.hasPrefix("NSAppTransportSecurity."))
                    #expect(finding.message.contains("(R"), "\(finding.id): \(finding.message)")
                    #expect(!finding.message.contains("\n"))
                    #expect(finding.message.count < 1_500)
                }
                let order = findings.map { "\($0.keyPath)\u{0}\($0.id)" }
                #expect(order == order.sorted())
            }
        }
    }

    @Test func aHugeKeyGivesABoundedMessage() throws {
        let key = String(repeating: "A", count: 100_000)
        let finding = try F.lint(exception: key, F.dict([:])).one(.domainKeyUppercase)
        #expect(finding.message.count < 1_000)
        #expect(finding.keyPath.description.count > 100_000)
    }

    @Test func everyKitchenSinkFindingCitesARuleAndNamesAKey() throws {
        let source = try F.parseXML(LintReportTests.infoPlist)
        for finding in Linter().lint(source) {
            #expect(finding.message.contains("(R"))
            #expect(finding.message.hasSuffix("."))
        }
    }
}

/// The line search survives any text and reads escaped keys.
@Suite struct LintKeyLocatorTests {
    typealias F = LintFixtures

    @Test(arguments: [
        "", "<key>", "<key>NSExceptionDomains", "\"", "{\"a", "{\"NSExceptionDomains\"", "&", "<key>&#xZZ;</key>",
        "<key>&#1114112;</key>", "{\"\\u12\": 1}", "\u{FEFF}<key>NSExceptionDomains</key>",
    ])
    func garbageTextNeverTraps(text: String) {
        let path = LintKeyPath().appending(ATSKey.exceptionDomains).appending("example.com")
        for format in [PolicyFileFormat.xmlPlist, .json] {
            _ = KeyLocator(text: text, format: format)?.line(of: path)
        }
    }

    @Test func escapedKeysAreFound() throws {
        let xml = F.xmlPlist("""
            <key>NSExceptionDomains</key>
            <dict>
              <key>a&amp;b.example.com</key>
              <dict/>
            </dict>
            """)
        let finding = try Linter().lint(try F.parseXML(xml), text: xml).one(.domainKeyInvalid)
        #expect(finding.keyPath.description == "NSExceptionDomains.a&b.example.com")
        #expect(finding.line == 7)

        let json = "{\n\"NSExceptionDomains\": {\n\"10.0.0.0\\/33\": {}\n}\n}"
        let source = try PolicyLoader.parse(data: Data(json.utf8), origin: "ats.json")
        #expect(try Linter().lint(source, text: json).one(.cidrInvalid).line == 3)
    }

    @Test func aBinaryPlistHasNoLines() {
        #expect(KeyLocator(text: "<key>x</key>", format: .binaryPlist) == nil)
    }
}
