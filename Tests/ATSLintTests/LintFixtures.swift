import Foundation
import Testing
@testable import ATSLint
@testable import ATSPolicy

/// Builders for the lint tests. One namespace, so names cannot collide with the engine tests' fixtures.
enum LintFixtures {
    static let yes = PlistValue.bool(true)
    static let no = PlistValue.bool(false)

    static func dict(_ values: [String: PlistValue]) -> PlistValue { .dictionary(values) }

    /// A bare ATS dictionary as a source (key paths have no prefix).
    static func source(_ dictionary: [String: PlistValue], root: PolicyRoot = .bare) -> PolicySource {
        PolicySource(origin: "<test>", format: nil, root: root, dictionary: dictionary)
    }

    static func lint(_ dictionary: [String: PlistValue], profile: Profile = .ios17) -> [LintFinding] {
        Linter(profile: profile).lint(source(dictionary))
    }

    /// Lints a dictionary with one NSExceptionDomains entry.
    static func lint(exception key: String, _ entry: PlistValue, topLevel: [String: PlistValue] = [:],
                     profile: Profile = .ios17) -> [LintFinding] {
        var dictionary = topLevel
        dictionary[ATSKey.exceptionDomains] = .dictionary([key: entry])
        return lint(dictionary, profile: profile)
    }

    /// Lints a dictionary with one NSPinnedDomains entry.
    static func lint(pin key: String, _ entry: PlistValue, profile: Profile = .ios17) -> [LintFinding] {
        lint([ATSKey.pinnedDomains: .dictionary([key: entry])], profile: profile)
    }

    /// A valid pin identity: the base64 of 32 bytes.
    static let digest = Data(repeating: 7, count: 32).base64EncodedString()
    static func identities(_ digests: [String]) -> PlistValue {
        .array(digests.map { .dictionary([ATSKey.spkiSHA256: .string($0)]) })
    }

    /// Parses an XML plist document.
    static func parseXML(_ text: String, origin: String = "Info.plist") throws -> PolicySource {
        try PolicyLoader.parse(data: Data(text.utf8), origin: origin)
    }

    /// An XML plist whose root dictionary holds `body`.
    static func xmlPlist(_ body: String) -> String {
        """
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
        <plist version="1.0">
        <dict>
        \(body)
        </dict>
        </plist>
        """
    }
}

extension Array where Element == LintFinding {
    /// The findings with this id.
    func with(_ rule: LintRule) -> [LintFinding] { filter { $0.rule == rule } }

    /// The only finding with this id; fails the test when there is not exactly one.
    func one(_ rule: LintRule, sourceLocation: SourceLocation = #_sourceLocation) throws -> LintFinding {
        let matches = with(rule)
        try #require(matches.count == 1, "expected one \(rule.id), got \(map(\.id))", sourceLocation: sourceLocation)
        return matches[0]
    }

    var ids: [String] { map(\.id) }
}
