import ATSPolicy
import Foundation

/// Finds where a key path is written in the text of an XML plist or JSON file, so findings can point at it.
///
/// Reads the file's outline (PlistOutline: every key where it is written, duplicates included) and follows
/// each key of the path to the value the loader kept, the last of several in a plist, so a finding about a
/// dictionary written twice points into the one that counts.
public struct KeyLocator {
    let outline: PlistOutline

    /// nil for formats without text (binary plists) and for text the outline cannot read.
    public init?(text: String, format: PolicyFileFormat) {
        guard format != .binaryPlist, let outline = try? PlistOutline(text: text, format: format) else { return nil }
        self.outline = outline
    }

    /// The 1-based line of the path's last key (or array element); when the path is not in the text, the line
    /// of the deepest part found (nil when none).
    public func line(of path: LintKeyPath) -> Int? {
        var node = outline.root
        var found: Int?
        for component in path.components {
            switch (component, outline.nodes[node].kind) {
            case (.key(let key), .dictionary):
                guard let entry = outline.child(of: node, key: key) else { return found.map(outline.line) }
                found = entry.keyStart
                node = entry.value
            case (.index(let index), .array):
                guard let element = outline.element(of: node, at: index) else { return found.map(outline.line) }
                found = outline.nodes[element].start
                node = element
            default:
                return found.map(outline.line)
            }
        }
        return found.map(outline.line)
    }
}
