import Foundation
import Testing
@testable import ATSPolicy

/// PlistOutline reads the grammar of Foundation's readers: it accepts and refuses the same documents, keeps
/// every key where it is written, and leads to the value the decoder kept.
@Suite struct PlistOutlineTests {
    /// XML documents at the edges of Foundation's grammar, accepted or refused as Foundation does.
    static let xmlDocuments: [String] = [
        "<plist><dict></dict></plist>\n",
        "<dict/>\n",
        "<dict/>",                                                   // refused: ends with the tag's '>'
        "<plist><dict ></dict ></plist>",
        "<plist><dict\tfoo=\"1\"></dict></plist>",
        "<plist><dict-x></dict></plist>",
        "<plist><dictx></dictx></plist>",
        "<plist><DICT/></plist>",
        "<plist><dict/ ></dict></plist>",                            // `/ >` is not an empty tag
        "<plist></plist>",
        "<plist/>",
        "<plist><string>a</string><string>b</string></plist>",
        "<plist><dict><key/></key><string/></dict></plist>",
        "<plist><dict><key/><string/></dict></plist>",
        "<plist><array><key/></array></plist>",
        "<plist><dict><key>a</key><key>b</key></dict></plist>",
        "<plist><dict><key>a</key><true></true></dict></plist>",
        "<plist><dict><key>a</key><true>x</true></dict></plist>",
        "<plist><dict><key>a</key><integer/></dict></plist>",
        "<plist><dict><!-- c --><?pi?><key>a</key><!-- -- --><string>x</string></dict></plist>",
        "<plist><dict><![CDATA[x]]></dict></plist>",
        "<plist><dict><!DOCTYPE x></dict></plist>",
        "<plist><dict><key>a<![CDATA[<b>]]>&#x41;&#65;&#;</key><string/></dict></plist>",
        "<plist><dict><key>&#X41;</key><string/></dict></plist>",
        "<plist><dict><key>&#123456789;</key><string/></dict></plist>",
        "<plist><dict><key>&#xD800;</key><string/></dict></plist>",
        "<plist><dict><key>&amp</key><string/></dict></plist>",
        "<plist><dict><key>a</key>text<string/></dict></plist>",
        "<plist><dict><key>a</key><plist><string>x</string></plist></dict></plist>",
        "<plist><dict></dict></plist> anything <after/>",
        "<plist><dict></dict></plis>",
        "<plist><dict></ dict></plist>",
        "<plist><dict></dictx></plist>",
        "<?xml version=\"1.0\" encoding=\"utf-8\"?><plist><dict/></plist>",
        "<?xml version=\"1.0\" encoding=\"UTF-16\"?><plist><dict/></plist>",
        "<?xml encod",
        " <?xml version=\"1.0\" encoding=\"latin1\"?><plist><dict/></plist>",
        "<!-- a -- b --><!DOCTYPE plist><plist><dict/></plist>",
        "<!DOCTYPE plist [ ]><plist><dict/></plist>",
        "<?><plist><dict/></plist>",
    ]

    static let jsonDocuments: [String] = [
        "{}", "{} {}", "{\"a\":1,}", "{\"a\":[1,]}", "{,}", "[1,,2]", "{\"a\" 1}", "{\"a\":01}", "{\"a\":-0.5e+3}",
        "{\"a\":\"\\u00e9\\ud83d\\ude00\"}", "{\"a\":\"\\x\"}", "{\"a\":\"tab\there\"}", "{\"a\":tru}", "{\"a\":null}",
        "\u{FEFF}{\"a\":true}", "[\"a\", {\"b\": [true, false]}]", "{\"a\":1", "{\"a\":.5}",
    ]

    static func foundationAccepts(_ text: String, json: Bool) -> Bool {
        let data = Data(text.utf8)
        if json { return (try? JSONDecoder().decode(PlistValue.self, from: data)) != nil }
        var format = PropertyListSerialization.PropertyListFormat.xml
        return (try? PropertyListDecoder().decode(PlistValue.self, from: data, format: &format)) != nil && format == .xml
    }

    @Test(arguments: xmlDocuments)
    func xmlGrammarMatchesFoundation(_ text: String) {
        let outline = try? PlistOutline(text: text, format: .xmlPlist)
        #expect((outline != nil) == Self.foundationAccepts(text, json: false), "\(text.debugDescription)")
    }

    @Test(arguments: jsonDocuments)
    func jsonGrammarMatchesJSONDecoder(_ text: String) {
        let outline = try? PlistOutline(text: text, format: .json)
        // A trailing comma is the one thing the grammar refuses that Foundation's decoder lets through:
        // RFC 8259 has none, and a policy a Mac's plutil or Python refuses must not pass here.
        if Self.trailingComma.contains(text) {
            #expect(outline == nil, "\(text.debugDescription)")
            return
        }
        // A number out of range or a lone surrogate is refused by the decoder, not the grammar: never the reverse.
        if outline == nil { #expect(!Self.foundationAccepts(text, json: true), "\(text.debugDescription)") }
        if Self.foundationAccepts(text, json: true) { #expect(outline != nil, "\(text.debugDescription)") }
    }

    static let trailingComma: Set<String> = ["{\"a\":1,}", "{\"a\":[1,]}"]

    @Test func everyKeyIsKeptWhereItIsWritten() throws {
        let text = "<plist><dict>\n<key>a</key><integer>1</integer>\n<key>b</key><true/>\n<key>a</key><integer>2</integer>\n"
            + "</dict></plist>"
        let outline = try PlistOutline(text: text, format: .xmlPlist)
        let root = outline.nodes[outline.root]
        #expect(root.kind == .dictionary)
        #expect(root.entries.map(\.key) == ["a", "b", "a"])
        #expect(root.entries.map { outline.line(of: $0.keyStart) } == [2, 3, 4])
        // The decoder keeps the last `a`; each value decodes on its own.
        let kept = try #require(outline.child(of: outline.root, key: "a"))
        #expect(outline.line(of: kept.keyStart) == 4)
        #expect(outline.value(of: kept.value) == .integer(2))
        #expect(outline.value(of: root.entries[0].value) == .integer(1))
        #expect(outline.value(of: root.entries[1].value) == .bool(true))
    }

    @Test func jsonKeepsTheFirstAsJSONDecoderDoes() throws {
        let text = "{\"a\": {\"x\": 1},\n \"a\": {\"y\": 2}}"
        let decoded = try JSONDecoder().decode(PlistValue.self, from: Data(text.utf8))
        let outline = try PlistOutline(text: text, format: .json)
        let kept = try #require(outline.child(of: outline.root, key: "a"))
        #expect(decoded == .dictionary(["a": try #require(outline.value(of: kept.value))]))
        #expect(outline.line(of: kept.keyStart) == 1)
    }

    @Test func aCodingPathLeadsToItsValue() throws {
        let text = "<plist><dict><key>a</key><array><string>x</string>\n<dict><key>b</key><date>bad</date></dict>"
            + "</array></dict></plist>"
        let outline = try PlistOutline(text: text, format: .xmlPlist)
        struct Key: CodingKey {
            var stringValue: String
            var intValue: Int?
            init(stringValue: String) { self.stringValue = stringValue }
            init(intValue: Int) { self.stringValue = "Index \(intValue)"; self.intValue = intValue }
        }
        let node = try #require(outline.node(at: [Key(stringValue: "a"), Key(intValue: 1), Key(stringValue: "b")]))
        #expect(outline.position(of: outline.nodes[node].start) == TextPosition(line: 2, column: 19))
        #expect(outline.node(at: [Key(stringValue: "a"), Key(intValue: 5)]) == nil)
    }
}
