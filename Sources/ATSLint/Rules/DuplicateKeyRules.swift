import ATSPolicy
/// Keys written more than once in one dictionary (R2, R3, R5): only the text of the file shows them.
/// Each type is one lint rule: its id, severity, justification flag, texts and message together.
extension Lints {
    /// Key written twice with different values
    struct DuplicateKey: LintRuleDefinition {
        static let rule = LintRule.duplicateKey
        static let severity = LintSeverity.error
        static let specRules = ["R2", "R3", "R5"]
        static let title = "Key written twice with different values"
        static let summary = "A dictionary holds one value per key: the OS uses the last one written (for domain"
            + " keys, the one spelled in lowercase), and the other, with what it held, has no effect."
        static let help = "Merge the two into one key."

        var duplicate: DuplicateKeyOccurrence
        var message: String { duplicate.text }
    }

    /// Key written twice with the same value
    struct DuplicateKeySameValue: LintRuleDefinition {
        static let rule = LintRule.duplicateKeySameValue
        static let severity = LintSeverity.medium
        static let specRules = ["R2", "R3", "R5"]
        static let title = "Key written twice with the same value"
        static let summary = "The key is written twice with the same value: harmless today, but an edit to one of"
            + " them will silently have no effect."
        static let help = "Remove the one the OS does not use."

        var duplicate: DuplicateKeyOccurrence
        var message: String { duplicate.text }
    }
}

/// One written key that has no effect because the same key is written again in its dictionary: what the
/// message of both duplicate-key rules is built from.
struct DuplicateKeyOccurrence: Sendable {
    enum Kind: Sendable {
        /// The same spelling again; the reader keeps one (`reader` says which).
        case repeated
        /// A domain key spelled with other letter case than the one that matches (R5).
        case otherCase
        /// Domain keys that differ only in letter case, none of them lowercase: none matches (R5).
        case noneLowercase
    }

    var kind: Kind
    /// The key as written here and as written where the reader looks.
    var key: String
    var usedKey: String
    /// "NSAppTransportSecurity", "the NSExceptionDomains entry 'a.com'".
    var container: String
    var line: Int
    var usedLine: Int
    /// Every line the key (or, for domain keys, its lowercase form) is written on, ascending.
    var lines: [Int]
    /// "the OS uses the last" or, for JSON, "atsgate reads the first".
    var reader: String
    /// What this one held and what the one used holds (nil when it does not decode on its own).
    var held: PlistValue?
    var used: PlistValue?

    var isSameValue: Bool { held != nil && held == used }

    var text: String {
        let name = LintText.quoted(key)
        let where_ = "line \(line)"
        var message: String
        switch kind {
        case .repeated:
            let times = lines.count == 2 ? "twice" : "\(lines.count) times"
            message = "\(name) is written \(times) in \(container), at lines \(LintText.list(lines.map(String.init)))"
            message += isSameValue ? ", with the same value" : ""
            message += ": \(reader) (line \(usedLine)), so the one at \(where_) "
            message += isSameValue ? "is redundant." : "has no effect."
        case .otherCase:
            message = "\(name) (\(where_)) and \(LintText.quoted(usedKey)) (line \(usedLine)) in \(container) name the same"
                + " domain: hosts are compared in lowercase and keys as written (R5), so only"
                + " \(LintText.quoted(usedKey)) applies and the entry at \(where_) "
            message += isSameValue ? "is redundant." : "never does."
        case .noneLowercase:
            message = "\(name) (\(where_)) and \(LintText.quoted(usedKey)) (line \(usedLine)) in \(container) name the same"
                + " domain, and neither is written in lowercase, so neither applies (R5)."
        }
        if !isSameValue { message += differences }
        switch (kind, isSameValue) {
        case (.noneLowercase, _):
            message += " Keep one entry, written \(LintText.quoted(key.lowercased()))."
        case (_, true):
            message += " Remove it."
        case (_, false):
            message += " Merge the two into one."
        }
        return message
    }

    /// " It held X. Lost with it: a.b = 1. Different: c (YES here, NO at line 9)."
    private var differences: String {
        guard let held else { return "" }
        var text = " It held \(LintValueText.render(held))"
        guard let used else { return text + "." }
        guard let heldEntries = held.dictionaryValue, let usedEntries = used.dictionaryValue else {
            return text + "; line \(usedLine) holds \(LintValueText.render(used))."
        }
        if Set(heldEntries.keys).isDisjoint(with: usedEntries.keys) {
            return text + ", none of it in the one at line \(usedLine)."
        }
        text += "."
        let (lost, changed) = LintValueText.differences(held, used, usedLine: usedLine)
        if !lost.isEmpty { text += " Lost with it: \(lost.joined(separator: ", "))." }
        if !changed.isEmpty { text += " Different: \(changed.joined(separator: ", "))." }
        return text
    }
}

/// Plist values in messages: short, one line, OpenStep-like (`{NSIncludesSubdomains = YES}`).
enum LintValueText {
    static let budget = 120

    static func render(_ value: PlistValue) -> String {
        var out = ""
        write(value, into: &out)
        return out.count > budget ? String(out.prefix(budget)) + "..." : out
    }

    private static func write(_ value: PlistValue, into out: inout String) {
        guard out.count <= budget else { return }
        switch value {
        case .dictionary(let entries):
            out += "{"
            for (index, key) in entries.keys.sorted().enumerated() {
                if index > 0 { out += "; " }
                out += LintText.bounded(key) + " = "
                write(entries[key]!, into: &out)
                if out.count > budget { break }
            }
            out += "}"
        case .array(let values):
            out += "("
            for (index, element) in values.enumerated() {
                if index > 0 { out += ", " }
                write(element, into: &out)
                if out.count > budget { break }
            }
            out += ")"
        default:
            out += LintText.bounded(value.shortDescription)
        }
    }

    /// Where `held` and `used` differ, key path by key path: what only `held` has (`lost`) and values that
    /// differ (`changed`); what only `used` has is no loss. At most four of each, then how many more.
    static func differences(_ held: PlistValue, _ used: PlistValue, usedLine: Int) -> (lost: [String], changed: [String]) {
        var lost: [String] = [], changed: [String] = []
        collect(held, used, path: "", usedLine: usedLine, lost: &lost, changed: &changed)
        func bounded(_ items: [String]) -> [String] {
            items.count > 4 ? Array(items.prefix(4)) + ["\(items.count - 4) more"] : items
        }
        return (bounded(lost), bounded(changed))
    }

    private static func collect(_ held: PlistValue, _ used: PlistValue, path: String, usedLine: Int,
                                lost: inout [String], changed: inout [String]) {
        guard let heldEntries = held.dictionaryValue, let usedEntries = used.dictionaryValue else {
            if held != used { changed.append("\(path) (\(render(held)) here, \(render(used)) at line \(usedLine))") }
            return
        }
        for key in heldEntries.keys.sorted() {
            let keyPath = path.isEmpty ? LintText.bounded(key) : path + "." + LintText.bounded(key)
            if let usedValue = usedEntries[key] {
                collect(heldEntries[key]!, usedValue, path: keyPath, usedLine: usedLine, lost: &lost, changed: &changed)
            } else {
                lost.append("\(keyPath) = \(render(heldEntries[key]!))")
            }
        }
    }
}
