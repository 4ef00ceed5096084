import Testing
@testable import ProxyCore
import TestSupport

/// docs/architecture.md draws the connection's states (a Mermaid state diagram); the transitions it
/// draws are exactly those `State.allows(from:to:)` permits, no more and no fewer.
@Suite struct ArchitectureDiagramTests {
    private typealias Kind = ProxyConnection.State.Kind

    @Test func theDiagramDrawsExactlyTheTransitionsTheTableAllows() throws {
        let page = try ReferencePage("docs/architecture.md")
        let lines = page.text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        let start = try #require(lines.firstIndex(of: "<!-- reference: state-diagram -->"), "no diagram mark")
        var drawn: Set<String> = []
        for line in lines[(start + 1)...].dropFirst(2) {
            if line == "```" { break }
            guard let match = line.wholeMatch(of: /(\w+) --> (\w+)/) else { continue } // [*] lines
            drawn.insert("\(match.1) --> \(match.2)")
        }
        var allowed: Set<String> = []
        for from in Kind.allCases {
            for to in Kind.allCases where ProxyConnection.State.allows(from: from, to: to) {
                allowed.insert("\(from) --> \(to)")
            }
        }
        #expect(allowed.subtracting(drawn).sorted() == [], "allowed by State.allows, not drawn in docs/architecture.md")
        #expect(drawn.subtracting(allowed).sorted() == [], "drawn in docs/architecture.md, not allowed by State.allows")
    }
}
