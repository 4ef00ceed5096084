import Foundation
import Testing
@testable import ATSPolicy

/// Section 1 (inputs) and R1 (only real booleans count), through files on disk and in-memory bytes.
@Suite("Policy loading")
struct PolicyLoaderTests {
    /// A fresh directory per test, removed afterwards.
    final class Scratch {
        let url: URL
        init() throws {
            url = FileManager.default.temporaryDirectory
                .appendingPathComponent("atsgate-loader-\(UUID().uuidString)", isDirectory: true)
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        }
        deinit { try? FileManager.default.removeItem(at: url) }

        func write(_ name: String, _ data: Data) throws -> String {
            let file = url.appendingPathComponent(name)
            try data.write(to: file)
            return file.path
        }
        func write(_ name: String, _ text: String) throws -> String { try write(name, Data(text.utf8)) }
    }

    static let atsXML = """
        <dict>
          <key>NSAllowsArbitraryLoads</key><true/>
          <key>NSExceptionDomains</key>
          <dict>
            <key>example.com</key>
            <dict>
              <key>NSIncludesSubdomains</key><true/>
              <key>NSExceptionMinimumTLSVersion</key><string>TLSv1.1</string>
            </dict>
          </dict>
        </dict>
        """

    static let expectedATS: [String: PlistValue] = [
        "NSAllowsArbitraryLoads": .bool(true),
        "NSExceptionDomains": .dictionary([
            "example.com": .dictionary([
                "NSIncludesSubdomains": .bool(true),
                "NSExceptionMinimumTLSVersion": .string("TLSv1.1"),
            ]),
        ]),
    ]

    /// Loads `text` from a file and returns the source, failing the test on an error.
    func load(_ name: String, _ data: Data, in scratch: Scratch) throws -> PolicySource {
        try PolicyLoader.load(path: try scratch.write(name, data))
    }

    /// Loads `data` from a file and returns the error it must raise.
    func loadError(_ name: String, _ data: Data, in scratch: Scratch) throws -> PolicyLoadError? {
        let path = try scratch.write(name, data)
        return #expect(throws: PolicyLoadError.self) { try PolicyLoader.load(path: path) }
    }

    // MARK: Accepted inputs

    @Test("XML Info.plist: the NSAppTransportSecurity value")
    func xmlInfoPlist() throws {
        let scratch = try Scratch()
        let xml = PolicyFixtures.xmlPlist("""
            <dict>
              <key>CFBundleIdentifier</key><string>com.example.app</string>
              <key>NSAppTransportSecurity</key>
              \(Self.atsXML)
            </dict>
            """)
        let source = try load("Info.plist", Data(xml.utf8), in: scratch)
        #expect(source.format == .xmlPlist)
        #expect(source.root == .infoPlist)
        #expect(source.keyPathPrefix == "NSAppTransportSecurity")
        #expect(source.dictionary == Self.expectedATS)
        #expect(source.origin.hasSuffix("Info.plist"))
    }

    @Test("binary Info.plist")
    func binaryInfoPlist() throws {
        let scratch = try Scratch()
        let plist: [String: Any] = [
            "CFBundleIdentifier": "com.example.app",
            "NSAppTransportSecurity": [
                "NSAllowsArbitraryLoads": true,
                "NSAllowsLocalNetworking": 1,
                "NSExceptionDomains": [
                    "example.com": [
                        "NSIncludesSubdomains": true,
                        "NSExceptionMinimumTLSVersion": "TLSv1.1",
                    ] as [String: Any],
                ],
            ] as [String: Any],
        ]
        let data = try PropertyListSerialization.data(fromPropertyList: plist, format: .binary, options: 0)
        #expect(data.starts(with: Array("bplist".utf8)))
        let source = try load("Info.plist", data, in: scratch)
        #expect(source.format == .binaryPlist)
        #expect(source.root == .infoPlist)
        var expected = Self.expectedATS
        expected["NSAllowsLocalNetworking"] = .integer(1)
        #expect(source.dictionary == expected)
    }

    @Test("bare ATS plist")
    func bareXML() throws {
        let scratch = try Scratch()
        let source = try load("ats.plist", Data(PolicyFixtures.xmlPlist(Self.atsXML).utf8), in: scratch)
        #expect(source.format == .xmlPlist)
        #expect(source.root == .bare)
        #expect(source.keyPathPrefix == "")
        #expect(source.dictionary == Self.expectedATS)
    }

    @Test("JSON of the same shape, bare and as an Info.plist")
    func json() throws {
        let scratch = try Scratch()
        let bare = """
            {"NSAllowsArbitraryLoads": true,
             "NSExceptionDomains": {"example.com": {"NSIncludesSubdomains": true,
                                                    "NSExceptionMinimumTLSVersion": "TLSv1.1"}}}
            """
        let source = try load("ats.json", Data(bare.utf8), in: scratch)
        #expect(source.format == .json)
        #expect(source.root == .bare)
        #expect(source.dictionary == Self.expectedATS)

        let info = "\n  {\"CFBundleIdentifier\": \"com.example\", \"NSAppTransportSecurity\": \(bare)}"
        let wrapped = try load("Info.json", Data(info.utf8), in: scratch)
        #expect(wrapped.format == .json)
        #expect(wrapped.root == .infoPlist)
        #expect(wrapped.dictionary == Self.expectedATS)
    }

    @Test("leading byte order mark and white space before XML")
    func byteOrderMark() throws {
        let data = Data([0xEF, 0xBB, 0xBF]) + Data(" \n\t".utf8) + Data(PolicyFixtures.xmlPlist(Self.atsXML).utf8)
        let source = try PolicyLoader.parse(data: data, origin: "bom.plist")
        #expect(source.format == .xmlPlist)
        #expect(source.dictionary == Self.expectedATS)
    }

    @Test("an Info.plist without NSAppTransportSecurity is an empty dictionary: full ATS")
    func infoPlistWithoutATS() throws {
        let scratch = try Scratch()
        let xml = PolicyFixtures.xmlPlist("""
            <dict>
              <key>CFBundleIdentifier</key><string>com.example.app</string>
              <key>CFBundleVersion</key><string>1</string>
            </dict>
            """)
        let source = try load("Info.plist", Data(xml.utf8), in: scratch)
        #expect(source.root == .infoPlist)
        #expect(source.dictionary.isEmpty)
        let decision = DecisionEngine(policy: Policy(source))
            .decide(try Destination.parse(url: "http://api.example.com/"))
        #expect(decision.ats == .on)
        #expect(decision.action == .block)

        let binary = try PropertyListSerialization.data(
            fromPropertyList: ["CFBundleIdentifier": "com.example.app"], format: .binary, options: 0)
        let binarySource = try load("Info-binary.plist", binary, in: scratch)
        #expect(binarySource.root == .infoPlist)
        #expect(binarySource.dictionary.isEmpty)
    }

    @Test("an empty ATS dictionary and an empty plist dictionary mean full ATS")
    func emptyDictionaries() throws {
        for text in [PolicyFixtures.xmlPlist("<dict/>"), "{}",
                     PolicyFixtures.xmlPlist("<dict><key>NSAppTransportSecurity</key><dict/></dict>")] {
            let source = try PolicyLoader.parse(data: Data(text.utf8), origin: "empty")
            #expect(source.dictionary.isEmpty, "\(text)")
        }
    }

    // MARK: Errors

    @Test("a missing file")
    func missingFile() throws {
        let scratch = try Scratch()
        let path = scratch.url.appendingPathComponent("nope.plist").path
        let error = #expect(throws: PolicyLoadError.self) { try PolicyLoader.load(path: path) }
        #expect(error?.path == path)
        #expect(error?.description.hasPrefix(path + ": ") == true)
        #expect(error?.description.contains("no such file") == true)
    }

    @Test("a directory")
    func directory() throws {
        let scratch = try Scratch()
        let error = #expect(throws: PolicyLoadError.self) { try PolicyLoader.load(path: scratch.url.path) }
        #expect(error?.description.hasPrefix(scratch.url.path) == true)
        #expect(error?.description.contains("directory") == true)
    }

    // root reads every file whatever its mode, so the case only means something for other users.
    @Test("an unreadable file", .enabled(if: getuid() != 0, "root can read a mode-000 file"))
    func unreadable() throws {
        let scratch = try Scratch()
        let path = try scratch.write("locked.plist", PolicyFixtures.xmlPlist(Self.atsXML))
        #expect(chmod(path, 0) == 0)
        defer { chmod(path, 0o644) }
        let error = #expect(throws: PolicyLoadError.self) { try PolicyLoader.load(path: path) }
        #expect(error?.description.hasPrefix(path) == true)
        #expect(error?.description.contains("permission denied") == true)
    }

    struct BadInput: Sendable, CustomTestStringConvertible {
        var name: String
        var data: Data
        /// Words the one-line description must contain, beside the file name.
        var problem: [String]
        var testDescription: String { name }
        init(_ name: String, _ text: String, _ problem: String...) {
            self.init(name, Data(text.utf8), problem)
        }
        init(_ name: String, _ data: Data, _ problem: [String]) {
            self.name = name
            self.data = data
            self.problem = problem
        }
    }

    static func hex(_ text: String) -> Data {
        let digits = Array(text.filter(\.isHexDigit))
        return Data(stride(from: 0, to: digits.count, by: 2).map { UInt8(String(digits[$0...$0 + 1]), radix: 16)! })
    }

    /// A bplist00 of `objects` (each its bytes, one-byte offsets and references), the first the top.
    static func binary(objects: [[UInt8]]) -> Data {
        var bytes = Array("bplist00".utf8)
        var offsets: [UInt8] = []
        for object in objects {
            offsets.append(UInt8(bytes.count))
            bytes += object
        }
        let table = bytes.count
        bytes += offsets
        bytes += [0, 0, 0, 0, 0, 0, 1, 1] + be64(objects.count) + be64(0) + be64(table)
        return Data(bytes)
    }

    static func be64(_ value: Int) -> [UInt8] { (0..<8).reversed().map { UInt8(truncatingIfNeeded: value >> ($0 * 8)) } }

    static let badInputs: [BadInput] = [
        BadInput("empty file", "", "empty"),
        BadInput("white space only", " \n\t ", "not a property list"),
        BadInput("plain text", "NSAllowsArbitraryLoads = YES", "not a property list"),
        BadInput("garbage after <", "<<<>>> not xml", "XML property list"),
        BadInput("HTML", "<html><body>hi</body></html>", "XML property list"),
        BadInput("truncated XML", String(PolicyFixtures.xmlPlist(atsXML).prefix(120)), "XML property list"),
        BadInput("a key without a value",
                 PolicyFixtures.xmlPlist("<dict><key>NSAllowsArbitraryLoads</key></dict>"), "XML property list"),
        BadInput("unknown XML element",
                 PolicyFixtures.xmlPlist("<dict><key>NSAllowsArbitraryLoads</key><yes/></dict>"),
                 "XML property list"),
        BadInput("garbage after bplist", Data("bplist00 this is not binary".utf8), ["binary property list"]),
        BadInput("bplist magic alone", Data("bplist".utf8), ["binary property list"]),
        // Foundation would read these as OpenStep plists (a string, data).
        BadInput("bplist and a word", Data("bplistword".utf8), ["binary property list"]),
        // Found by Fuzz/Targets/PolicyLoader.swift: Foundation's binary scanner traps (never throws) on
        // a dictionary whose key is a dictionary; these never reach it.
        BadInput("a binary dictionary whose key is a dictionary", hex("""
            62706c6973743030d201020403df16104e53416c6c6f7773417262693c646174613e6f6164735f10124e534578636570\
            74696f6e446f6d61696e730979000000100f6170692e6578616d706c652e636f6dd0080d263b3c3f5100000000000001\
            01000000000000000700000000000000000000000000000052
            """), ["binary property list", "object 4 starts with 0x79", "(at byte 60)"]),
        BadInput("a binary dictionary whose key is an integer", binary(objects: [[0xD1, 0x01, 0x02], [0x10, 0x01], [0x09]]),
                 ["binary property list", "a dictionary key is not a string"]),
        BadInput("a binary array that contains itself", binary(objects: [[0xA1, 0x00]]),
                 ["binary property list", "a container contains itself"]),
        BadInput("a binary dictionary that refers past its objects", binary(objects: [[0xD1, 0x05, 0x06]]),
                 ["binary property list", "outside the object table"]),
        BadInput("a binary string longer than the file", binary(objects: [[0x5F, 0x10, 0xFF, 0x41]]),
                 ["binary property list", "runs past the object area"]),
        BadInput("OpenStep data in angle brackets", "<616263>", "XML property list"),
        // Found by Fuzz/Targets/PolicyLoader.swift: Foundation's reason quotes the bytes after the tag.
        BadInput("an unknown tag followed by a line break and a NUL",
                 "<?xml version=\"1.0\"?>\n<plise as\nrun\u{0}\u{1B}[31m", "XML property list"),
        BadInput("broken JSON", "{\"NSAllowsArbitraryLoads\": tru", "JSON"),
        BadInput("JSON with trailing garbage", "{} {}", "JSON"),
        BadInput("JSON string root", "\"NSAppTransportSecurity\"", "not a property list"),
        BadInput("XML root is an array", PolicyFixtures.xmlPlist("<array><true/></array>"), "root is an array"),
        BadInput("JSON root is an array", "[{\"NSAllowsArbitraryLoads\": true}]", "root is an array"),
        BadInput("XML root is a string", PolicyFixtures.xmlPlist("<string>YES</string>"), "root is a string"),
        BadInput("NSAppTransportSecurity is a string",
                 PolicyFixtures.xmlPlist("<dict><key>NSAppTransportSecurity</key><string>YES</string></dict>"),
                 "NSAppTransportSecurity is a string"),
        BadInput("NSAppTransportSecurity is an array (JSON)", "{\"NSAppTransportSecurity\": []}",
                 "NSAppTransportSecurity is an array"),
        BadInput("NSAppTransportSecurity is a boolean (JSON)", "{\"NSAppTransportSecurity\": true}",
                 "NSAppTransportSecurity is a boolean"),
    ]

    @Test("bad input: the error names the file and the problem, nothing traps", arguments: badInputs)
    func badInput(_ row: BadInput) throws {
        let scratch = try Scratch()
        let error = try loadError("policy.file", row.data, in: scratch)
        let description = try #require(error).description
        // `FILE: problem`, or `FILE:LINE:COLUMN: problem` where the text breaks.
        #expect(description.hasPrefix(scratch.url.appendingPathComponent("policy.file").path + ":"))
        for word in row.problem {
            #expect(description.contains(word), "\(description)")
        }
        #expect(!description.unicodeScalars.contains { $0.properties.generalCategory == .control },
                "one line without control characters: \(description)")

        // The same bytes through parse(data:origin:) name the origin.
        let parsed = #expect(throws: PolicyLoadError.self) {
            try PolicyLoader.parse(data: row.data, origin: "label.plist")
        }
        #expect(parsed?.description.hasPrefix("label.plist:") == true)
    }

    @Test("binary plist with a non-dictionary root")
    func binaryArrayRoot() throws {
        let data = try PropertyListSerialization.data(fromPropertyList: [true, 1], format: .binary, options: 0)
        let error = #expect(throws: PolicyLoadError.self) { try PolicyLoader.parse(data: data, origin: "a.plist") }
        #expect(error?.description == "a.plist: root is an array, expected a dictionary")
    }

    // MARK: R1: only a real boolean is YES/NO

    struct TypedValue: Sendable, CustomTestStringConvertible {
        var name: String
        var xml: String
        var expected: PlistValue
        var testDescription: String { name }
    }

    static let xmlValues: [TypedValue] = [
        TypedValue(name: "<true/>", xml: "<true/>", expected: .bool(true)),
        TypedValue(name: "<false/>", xml: "<false/>", expected: .bool(false)),
        TypedValue(name: "<integer>1</integer>", xml: "<integer>1</integer>", expected: .integer(1)),
        TypedValue(name: "<integer>0</integer>", xml: "<integer>0</integer>", expected: .integer(0)),
        TypedValue(name: "<string>YES</string>", xml: "<string>YES</string>", expected: .string("YES")),
        TypedValue(name: "<string>true</string>", xml: "<string>true</string>", expected: .string("true")),
        TypedValue(name: "<string>1</string>", xml: "<string>1</string>", expected: .string("1")),
        TypedValue(name: "<real>1.5</real>", xml: "<real>1.5</real>", expected: .real(1.5)),
        TypedValue(name: "<data>", xml: "<data>AQI=</data>", expected: .data(Data([1, 2]))),
        TypedValue(name: "<date>", xml: "<date>2020-01-01T00:00:00Z</date>",
                   expected: .date(Date(timeIntervalSince1970: 1_577_836_800))),
        TypedValue(name: "date-like string", xml: "<string>2020-01-01T00:00:00Z</string>",
                   expected: .string("2020-01-01T00:00:00Z")),
    ]

    @Test("XML values keep their plist type", arguments: xmlValues)
    func xmlTypes(_ row: TypedValue) throws {
        let policy = try PolicyFixtures.policy(xmlBody: "<dict><key>NSAllowsArbitraryLoads</key>\(row.xml)</dict>")
        #expect(policy.allowsArbitraryLoads.raw == row.expected)
        #expect(policy.allowsArbitraryLoads.isPresent)
        // R1: only <true/> is YES; any other type is ignored (default NO) but present.
        #expect(policy.allowsArbitraryLoads.isYes == (row.expected == .bool(true)))
        #expect(policy.allowsArbitraryLoads.isIgnoredValue == (row.expected.boolValue == nil))
        let decision = DecisionEngine(policy: policy).decide(try Destination.parse(url: "http://api.example.com/"))
        #expect(decision.ats == (row.expected == .bool(true) ? .off : .on))
    }

    @Test("JSON values keep their type", arguments: [
        ("true", PlistValue.bool(true)), ("false", .bool(false)), ("1", .integer(1)), ("0", .integer(0)),
        ("\"YES\"", .string("YES")), ("1.5", .real(1.5)), ("null", .null), ("[]", .array([])),
        ("{}", .dictionary([:])),
    ])
    func jsonTypes(_ text: String, _ expected: PlistValue) throws {
        let source = try PolicyLoader.parse(data: Data("{\"NSAllowsArbitraryLoads\": \(text)}".utf8), origin: "j")
        let policy = Policy(source)
        #expect(policy.allowsArbitraryLoads.raw == expected)
        #expect(policy.allowsArbitraryLoads.isYes == (expected == .bool(true)))
        let decision = DecisionEngine(policy: policy).decide(try Destination.parse(url: "http://api.example.com/"))
        #expect(decision.ats == (expected == .bool(true) ? .off : .on))
    }

    @Test("binary plist booleans and integers stay apart")
    func binaryTypes() throws {
        let plist: [String: Any] = ["NSAllowsArbitraryLoads": 1, "NSAllowsLocalNetworking": true,
                                    "NSAllowsArbitraryLoadsForMedia": "YES"]
        let data = try PropertyListSerialization.data(fromPropertyList: plist, format: .binary, options: 0)
        let policy = Policy(try PolicyLoader.parse(data: data, origin: "b"))
        #expect(policy.allowsArbitraryLoads.raw == .integer(1))
        #expect(!policy.allowsArbitraryLoads.isYes)
        #expect(policy.allowsLocalNetworking.raw == .bool(true))
        #expect(policy.allowsLocalNetworking.isYes)
        #expect(policy.allowsArbitraryLoadsForMedia.raw == .string("YES"))
        #expect(policy.allowsArbitraryLoadsForMedia.isPresent && !policy.allowsArbitraryLoadsForMedia.isYes)
    }

    @Test("R1 and R3 in exception entries: non-boolean values keep the defaults")
    func entryValueTypes() throws {
        let policy = try PolicyFixtures.policy(xmlBody: """
            <dict><key>NSExceptionDomains</key><dict>
              <key>a.example</key><dict>
                <key>NSIncludesSubdomains</key><string>YES</string>
                <key>NSExceptionAllowsInsecureHTTPLoads</key><integer>1</integer>
                <key>NSExceptionRequiresForwardSecrecy</key><string>NO</string>
                <key>NSExceptionMinimumTLSVersion</key><real>1.0</real>
              </dict>
              <key>b.example</key><dict>
                <key>NSIncludesSubdomains</key><true/>
                <key>NSExceptionAllowsInsecureHTTPLoads</key><true/>
                <key>NSExceptionRequiresForwardSecrecy</key><false/>
                <key>NSExceptionMinimumTLSVersion</key><string>TLSv1.0</string>
              </dict>
              <key>c.example</key><string>not a dictionary</string>
              <key>d.example</key><array/>
            </dict></dict>
            """)
        #expect(policy.exceptionDomains["a.example"] == ExceptionEntry(key: "a.example"))
        #expect(policy.exceptionDomains["b.example"] == ExceptionEntry(
            key: "b.example", includesSubdomains: true, allowsInsecureHTTPLoads: true,
            minimumTLSVersion: .tls10, requiresForwardSecrecy: false))
        // R3: an entry whose value is not a dictionary is ignored.
        #expect(policy.exceptionDomains["c.example"] == nil)
        #expect(policy.exceptionDomains["d.example"] == nil)
        #expect(policy.exceptionDomains.count == 2)
    }

    @Test("NSExceptionDomains that is not a dictionary is ignored")
    func exceptionDomainsNotDictionary() throws {
        let policy = PolicyFixtures.policy([ATSKey.exceptionDomains: .array([.string("example.com")])])
        #expect(policy.exceptionDomains.isEmpty)
    }

    /// Nesting deep enough to exhaust the stack is refused with a one-line error, in every format.
    @Test func deeplyNestedFilesAreRefusedNotCrashed() throws {
        let depth = 20_000
        let xml = "<?xml version=\"1.0\"?><plist version=\"1.0\"><dict><key>a</key>"
            + String(repeating: "<array>", count: depth) + String(repeating: "</array>", count: depth) + "</dict></plist>"
        #expect(throws: PolicyLoadError.self) { try PolicyLoader.parse(data: Data(xml.utf8), origin: "deep.plist") }
        do {
            _ = try PolicyLoader.parse(data: Data(xml.utf8), origin: "deep.plist")
        } catch {
            #expect(error.description == "deep.plist: nested deeper than 64 levels")
        }
        var nested: Any = [Any]()
        for _ in 0..<200 { nested = [nested] }
        let binary = try PropertyListSerialization.data(fromPropertyList: ["a": nested], format: .binary, options: 0)
        do {
            _ = try PolicyLoader.parse(data: binary, origin: "deep.bplist")
            Issue.record("a 200-level binary plist was accepted")
        } catch {
            #expect(error.description.contains("nested deeper than 64 levels"))
        }
        // Ordinary nesting still loads.
        let shallow = "<?xml version=\"1.0\"?><plist version=\"1.0\"><dict><key>NSExceptionDomains</key><dict>"
            + "<key>a.com</key><dict/></dict></dict></plist>"
        #expect(try PolicyLoader.parse(data: Data(shallow.utf8), origin: "ok.plist").dictionary.count == 1)
    }

    @Test func infoPlistIsRecognisedByAnyBundleKey() throws {
        let json = #"{"CFBundleDisplayName": "Shop", "NSCameraUsageDescription": "scan codes"}"#
        let source = try PolicyLoader.parse(data: Data(json.utf8), origin: "Info.json")
        #expect(source.root == .infoPlist)
        #expect(source.dictionary.isEmpty)
        #expect(source.infoPlistKeys == ["CFBundleDisplayName", "NSCameraUsageDescription"])
    }
}
