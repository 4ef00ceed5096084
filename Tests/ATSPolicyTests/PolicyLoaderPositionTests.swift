import Foundation
import Testing
@testable import ATSPolicy

/// Issue 24: a policy file that does not parse is reported at the line and column where it breaks, found by
/// reading the text (PlistOutline), with what was expected there; binary plists at the byte. Each case is
/// its own document.
@Suite("Policy loading: where a file breaks")
struct PolicyLoaderPositionTests {
    struct Broken: Sendable, CustomTestStringConvertible {
        var name: String
        var text: String
        var line: Int
        var column: Int
        /// Words the problem must contain.
        var words: [String]
        var testDescription: String { name }
    }

    /// `count` lines of ordinary Info.plist keys, so the break is far from line 1.
    static func filler(_ count: Int) -> [String] {
        (0..<count).map { "\t<key>UIKey\($0)</key><string>value \($0)</string>" }
    }

    static let head = ["<?xml version=\"1.0\" encoding=\"UTF-8\"?>",
                       "<!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">",
                       "<plist version=\"1.0\">", "<dict>"]

    static let cases: [Broken] = {
        var cases: [Broken] = []
        // A <dict> never closed: the root's </dict> closes it, and </plist> (line 131) meets the root <dict>.
        var unclosed = head + filler(120)
        unclosed += ["\t<key>NSAppTransportSecurity</key>", "\t<dict>",                  // 125, 126
                     "\t\t<key>NSAllowsArbitraryLoads</key>", "\t\t<true/>",
                     "\t\t<key>NSAllowsLocalNetworking</key>", "\t\t<true/>",
                     "</dict>", "</plist>"]                                              // 131, 132
        cases.append(Broken(name: "a <dict> never closed", text: unclosed.joined(separator: "\n"), line: 132, column: 1,
                            words: ["expected </dict> to close <dict> (opened at line 4), found </plist>"]))

        var valueWithoutKey = head + filler(31)
        valueWithoutKey += ["\t<key>NSAppTransportSecurity</key>", "\t<dict>",             // 36, 37
                            "\t\t<key>NSAllowsArbitraryLoads</key><true/>",
                            "\t\t<false/>",                                                // 39
                            "\t</dict>", "</dict>", "</plist>"]
        cases.append(Broken(name: "a value without its key", text: valueWithoutKey.joined(separator: "\n"), line: 39,
                            column: 3, words: ["expected <key> or </dict>, found <false>: a value without its key"]))

        var keyWithoutValue = head + filler(3)
        keyWithoutValue += ["\t<key>NSAppTransportSecurity</key>", "</dict>", "</plist>"]   // 8, 9
        cases.append(Broken(name: "a key without its value", text: keyWithoutValue.joined(separator: "\n"), line: 9,
                            column: 1, words: ["expected a value for the key on line 8, found </dict>"]))

        var truncated = head + filler(10)
        truncated += ["\t<key>NSAppTransportSecurity</key>", "\t<dict>", "\t\t<key>NSAllowsArbitraryLoads</key>"]
        cases.append(Broken(name: "a truncated file", text: truncated.joined(separator: "\n") + "\n\t\t<true", line: 18,
                            column: 3, words: ["the tag <true never ends", "expected '>'"]))
        cases.append(Broken(name: "a file cut between elements", text: truncated.joined(separator: "\n") + "\n",
                            line: 18, column: 1, words: ["the file ends inside <dict> (opened at line 16)",
                                                         "expected </dict>"]))

        var entity = head + filler(5)
        entity += ["\t<key>NSAppTransportSecurity</key>", "\t<dict>", "\t\t<key>NSExceptionDomains</key>", "\t\t<dict>",
                   "\t\t\t<key>api&nbsp;example.com</key><dict/>", "\t\t</dict>", "\t</dict>", "</dict>", "</plist>"]
        cases.append(Broken(name: "an undefined entity", text: entity.joined(separator: "\n"), line: 14, column: 12,
                            words: ["'&nbsp;' is not an entity a property list defines", "expected &lt;"]))

        var unknown = head + ["\t<key>NSAppTransportSecurity</key>", "\t<dict>",
                              "\t\t<key>NSAllowsArbitraryLoads</key><yes/>", "\t</dict>", "</dict>", "</plist>"]
        cases.append(Broken(name: "an unknown element", text: unknown.joined(separator: "\n"), line: 7, column: 36,
                            words: ["unknown element <yes/>", "expected <dict>"]))

        unknown = head + ["\t<key>NSAppTransportSecurity</key>", "\t<dict>",
                          "\t\t<key>NSAllowsArbitraryLoads</key><string>YES</strin>", "\t</dict>", "</dict>", "</plist>"]
        cases.append(Broken(name: "a mismatched close tag", text: unknown.joined(separator: "\n"), line: 7, column: 47,
                            words: ["expected </string>, found </strin>"]))

        let overflow = head + ["\t<key>NSAppTransportSecurity</key>", "\t<dict>",
                               "\t\t<key>NSAllowsArbitraryLoads</key>", "\t\t<integer>99999999999999999999</integer>",
                               "\t</dict>", "</dict>", "</plist>"]
        cases.append(Broken(name: "an integer that does not fit", text: overflow.joined(separator: "\n"), line: 8,
                            column: 3, words: ["the value at NSAppTransportSecurity.NSAllowsArbitraryLoads",
                                               "expected a decimal or 0x integer that fits in 64 bits"]))

        let subset = ["<?xml version=\"1.0\"?>", "<!DOCTYPE plist [ <!ENTITY host \"example.com\"> ]>", "<plist/>"]
        cases.append(Broken(name: "an internal DTD subset", text: subset.joined(separator: "\n"), line: 2, column: 17,
                            words: ["expected '>' to end <!DOCTYPE, found '['"]))

        let latin1 = ["<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>", "<plist><dict/></plist>"]
        cases.append(Broken(name: "an encoding other than UTF-8", text: latin1.joined(separator: "\n"), line: 1,
                            column: 31, words: ["the encoding 'ISO-8859-1' is not supported; expected UTF-8"]))

        let json = ["{", "  \"NSAppTransportSecurity\": {", "    \"NSAllowsArbitraryLoads\": tru", "  }", "}"]
        cases.append(Broken(name: "JSON: a misspelled literal", text: json.joined(separator: "\n"), line: 3, column: 31,
                            words: ["not a valid JSON document", "expected a value", "found 'tru'"]))
        let missingComma = ["{", "  \"NSAllowsArbitraryLoads\": true", "  \"NSAllowsLocalNetworking\": true", "}"]
        cases.append(Broken(name: "JSON: a missing comma", text: missingComma.joined(separator: "\n"), line: 3, column: 3,
                            words: ["expected ',' or '}' after a member"]))
        cases.append(Broken(name: "JSON: a truncated document", text: "{\n  \"NSExceptionDomains\": {\n    \"a.com\": {}",
                            line: 3, column: 16, words: ["the file ends inside the object opened at line 2"]))
        // Foundation's JSONDecoder accepts these; no other JSON reader does.
        let trailingMember = ["{", "  \"NSAppTransportSecurity\": {", "    \"NSAllowsArbitraryLoads\": true,", "  }", "}"]
        cases.append(Broken(name: "JSON: a trailing comma in an object", text: trailingMember.joined(separator: "\n"),
                            line: 3, column: 35, words: ["a trailing comma before '}' is not JSON (RFC 8259)"]))
        let trailingElement = ["{\"NSPinnedDomains\": {\"a.com\": {\"NSPinnedLeafIdentities\": [", "  {}, ]}}}"]
        cases.append(Broken(name: "JSON: a trailing comma in an array", text: trailingElement.joined(separator: "\n"),
                            line: 2, column: 5, words: ["a trailing comma before ']' is not JSON (RFC 8259)"]))
        return cases
    }()

    @Test("the error names the real line and column", arguments: cases)
    func brokenFilesAreReportedWhereTheyBreak(_ row: Broken) throws {
        let error = #expect(throws: PolicyLoadError.self) {
            try PolicyLoader.parse(data: Data(row.text.utf8), origin: "Info.plist")
        }
        let failure = try #require(error)
        #expect(failure.position == TextPosition(line: row.line, column: row.column), "\(failure)")
        #expect(failure.description.hasPrefix("Info.plist:\(row.line):\(row.column): not a valid "), "\(failure)")
        for word in row.words {
            #expect(failure.problem.contains(word), "\(failure.problem)")
        }
        // One line, and none of Foundation's line numbers.
        #expect(!failure.description.contains("\n"))
        #expect(!failure.problem.contains("on line 1 ") && !failure.problem.contains("at line 1 "), "\(failure.problem)")
    }

    /// The issue's report: Foundation's reader said "Close tag on line 1 does not match open tag dict" for
    /// the tag on line 132 above.
    @Test func foundationsOwnLineIsNotTheOneReported() throws {
        let row = try #require(Self.cases.first)
        var format = PropertyListSerialization.PropertyListFormat.xml
        do {
            _ = try PropertyListDecoder().decode(PlistValue.self, from: Data(row.text.utf8), format: &format)
            Issue.record("Foundation read a broken document")
        } catch {
            // Whatever Foundation says, the loader's position comes from the text.
            let loaded = #expect(throws: PolicyLoadError.self) {
                try PolicyLoader.parse(data: Data(row.text.utf8), origin: "Info.plist")
            }
            #expect(loaded?.position?.line == 132)
        }
    }

    /// What Apple's parser accepts before the XML declaration.
    static let leadingText = [" \n\t\n", "\u{FEFF}", "\n\n   "]

    @Test func leadingWhiteSpaceAndAByteOrderMarkBeforeTheDeclarationAreAccepted() throws {
        let document = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<plist version=\"1.0\"><dict>"
            + "<key>NSAllowsArbitraryLoads</key><true/></dict></plist>\n"
        for prefix in PolicyLoaderPositionTests.leadingText {
            let source = try PolicyLoader.parse(data: Data((prefix + document).utf8), origin: "Info.plist")
            #expect(source.dictionary == [ATSKey.allowsArbitraryLoads: .bool(true)])
        }
        // After white space the declaration's encoding is not read (as in Foundation), and a break is still found.
        let broken = "\n\n<?xml version=\"1.0\"?>\n<plist><dict><key>a</key></dict></plist>"
        let error = #expect(throws: PolicyLoadError.self) {
            try PolicyLoader.parse(data: Data(broken.utf8), origin: "Info.plist")
        }
        #expect(error?.position == TextPosition(line: 4, column: 26))
    }

    @Test func bytesThatAreNotUTF8AreNamed() throws {
        var data = Data("<plist><dict>\n<key>NSExceptionDomains</key>\n<dict><key>caf".utf8)
        data.append(0xE9)
        data.append(contentsOf: Array(".com</key><dict/></dict></dict></plist>\n".utf8))
        let error = #expect(throws: PolicyLoadError.self) { try PolicyLoader.parse(data: data, origin: "Info.plist") }
        #expect(error?.position == TextPosition(line: 3, column: 15), "\(String(describing: error))")
        #expect(error?.problem.contains("byte 0xE9") == true)
    }

    @Test func columnsCountCharactersNotBytes() throws {
        let text = "<plist><dict><key>é</key><string>ü</string><true/></dict></plist>"
        let error = #expect(throws: PolicyLoadError.self) {
            try PolicyLoader.parse(data: Data(text.utf8), origin: "Info.plist")
        }
        #expect(error?.position == TextPosition(line: 1, column: 44))
    }

    @Test func binaryPlistsNameTheByte() throws {
        let good = try PropertyListSerialization.data(
            fromPropertyList: ["NSAppTransportSecurity": ["NSAllowsArbitraryLoads": true]], format: .binary, options: 0)
        var badTop = good
        badTop[badTop.count - 9] = 0x7F   // the top object's index
        var badMarker = good
        badMarker[8] = 0x7F               // the first object's type
        let cases: [(Data, Int, String)] = [
            (badTop, good.count - 16, "the trailer's top object is 127"),
            (badMarker, 8, "object 0 starts with 0x7F"),
            (good.prefix(20), 20, "the file ends after 20 bytes"),
        ]
        for (data, offset, words) in cases {
            let error = #expect(throws: PolicyLoadError.self) { try PolicyLoader.parse(data: data, origin: "Info.plist") }
            #expect(error?.byteOffset == offset, "\(String(describing: error))")
            #expect(error?.position == nil)
            #expect(error?.problem.contains(words) == true, "\(String(describing: error))")
            #expect(error?.problem.contains("(at byte \(offset))") == true)
        }
    }
}
