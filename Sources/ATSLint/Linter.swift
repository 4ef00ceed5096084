import ATSPolicy
import Foundation

/// Audits ATS dictionaries: reports what does not do what its author wrote, what weakens ATS, and what
/// App Review will ask about (ATS-SPEC R1-R17). Pure: reads no files.
public struct Linter: Sendable {
    public var profile: Profile

    public init(profile: Profile = .ios17) {
        self.profile = profile
    }

    /// The findings for one dictionary in report order (key path, then id). `text`, the file's text when
    /// it is XML or JSON, gives each finding the line of its key.
    public func lint(_ source: PolicySource, text: String? = nil) -> [LintFinding] {
        let locator = text.flatMap { text in source.format.flatMap { KeyLocator(text: text, format: $0) } }
        var pass = LintPass(source: source, profile: profile)
        pass.checkInfoPlistRoot()
        pass.checkGlobalKeys()
        pass.checkExceptionDomains()
        pass.checkPinnedDomains()
        // Only the text shows a key written twice: the parsed dictionary keeps one of them.
        if let locator { pass.checkDuplicateKeys(locator.outline) }
        var findings = pass.findings
        if let locator {
            for index in findings.indices where findings[index].line == nil {
                findings[index].line = locator.line(of: findings[index].keyPath)
            }
        }
        return findings.sorted(by: LintFinding.inReportOrder)
    }

    /// One file's result, for `LintReport`.
    public func lintFile(_ source: PolicySource, text: String? = nil) -> LintFileResult {
        LintFileResult(path: source.origin, format: source.format, root: source.root,
                       findings: lint(source, text: text))
    }
}

/// Text helpers for messages: keys and values quoted, bounded and free of control characters, so a hostile
/// file cannot make a finding span lines or megabytes.
package enum LintText {
    static let maximumLength = 80

    /// `'example.com'`.
    static func quoted(_ text: String) -> String { "'\(bounded(text))'" }

    /// `a string ("YES")`, `an integer (1)`.
    static func describe(_ value: PlistValue) -> String {
        "\(withArticle(value.typeName)) (\(bounded(value.shortDescription)))"
    }

    static func bounded(_ text: String) -> String {
        var out = ""
        var count = 0
        for scalar in text.unicodeScalars {
            if count == maximumLength { return out + "..." }
            if scalar.value < 0x20 || scalar.value == 0x7F {
                out += "\\u{\(String(scalar.value, radix: 16))}"
            } else {
                out.unicodeScalars.append(scalar)
            }
            count += 1
        }
        return out
    }

    /// `a, b and c`.
    static func list(_ items: [String]) -> String {
        guard let last = items.last else { return "" }
        if items.count == 1 { return last }
        return items.dropLast().joined(separator: ", ") + " and " + last
    }
}
