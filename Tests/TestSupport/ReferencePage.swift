import Foundation

/// A page of the repository's documentation, read by the tests that hold the reference
/// (docs/reference/) and the transcripts to the code: the tables the page marks, and its text.
public struct ReferencePage: Sendable {
    /// The repository's root: this file is Tests/TestSupport/ReferencePage.swift.
    public static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    public let path: String
    public let text: String

    /// `path` is relative to the repository's root (`docs/reference/reasons.md`).
    public init(_ path: String) throws {
        self.path = path
        text = try String(contentsOf: Self.root.appendingPathComponent(path), encoding: .utf8)
    }

    /// One row of a marked table, its cells by the header's names.
    public struct Row: Sendable {
        public let cells: [String: String]
        public let line: Int
        /// The first cell's name without its backticks: the field, reason, metric or key the row is about.
        public let name: String

        public subscript(_ column: String) -> String? { cells[column] }
    }

    /// The rows of the table that follows `<!-- reference: MARK -->`; a page without the mark has none,
    /// which a test then reports as every name missing.
    public func table(_ mark: String) -> [Row] {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard let start = lines.firstIndex(of: "<!-- reference: \(mark) -->") else { return [] }
        var header: [String]?
        var rows: [Row] = []
        for (index, line) in lines.enumerated().dropFirst(start + 1) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty && header == nil { continue }
            guard trimmed.hasPrefix("|") else { break }
            let cells = Self.cells(trimmed)
            if header == nil { header = cells; continue }
            if cells.allSatisfy({ $0.allSatisfy { "-: ".contains($0) } }) { continue }
            let named = Dictionary(zip(header!, cells), uniquingKeysWith: { first, _ in first })
            rows.append(Row(cells: named, line: index + 1, name: Self.unquoted(cells.first ?? "")))
        }
        return rows
    }

    /// The cells of `| a | b |`, where `\|` is a bar inside a cell.
    static func cells(_ line: String) -> [String] {
        var cells: [String] = []
        var current = ""
        var escaped = false
        for character in line.dropFirst() {
            if escaped { current.append(character == "|" ? "|" : "\\\(character)"); escaped = false; continue }
            switch character {
            case "\\": escaped = true
            case "|": cells.append(current.trimmingCharacters(in: .whitespaces)); current = ""
            default: current.append(character)
            }
        }
        return cells
    }

    /// `` `name` `` as `name`; a cell without backticks as it is.
    public static func unquoted(_ cell: String) -> String {
        cell.trimmingCharacters(in: CharacterSet(charactersIn: "` "))
    }
}
