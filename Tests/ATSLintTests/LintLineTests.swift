import Foundation
import Testing
@testable import ATSLint
@testable import ATSPolicy

/// Lint's lines are the file's own: white space or a byte order mark before the XML declaration, which
/// the loader accepts, counts for the lines of the findings after it.
@Suite struct LintLineTests {
    @Test(arguments: [" \n\t\n", "\u{FEFF}", "\n\n   "])
    func leadingTextCountsForTheLinesOfFindings(prefix: String) throws {
        let document = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<plist version=\"1.0\"><dict>"
            + "<key>NSAllowsArbitraryLoads</key><true/></dict></plist>\n"
        let text = prefix + document
        let source = try PolicyLoader.parse(data: Data(text.utf8), origin: "Info.plist")
        let findings = Linter().lint(source, text: text)
        let expected = text.split(separator: "\n", omittingEmptySubsequences: false)
            .firstIndex { $0.contains("NSAllowsArbitraryLoads") }.map { $0 + 1 }
        #expect(findings.first { $0.rule == .arbitraryLoads }?.line == expected)
    }
}
