import Foundation

/// Keys the engine does not read at the level they sit: misspelled, misplaced, legacy, obsolete or
/// unknown (R2, R3, R16, R17).
extension LintPass {
    /// `value` is the key's value, which tells a domain entry put at the top level from an unknown key.
    mutating func checkUnreadKey(_ key: String, at level: KeyLevel, path: LintKeyPath, value: PlistValue? = nil) {
        let name = LintText.quoted(key)
        let ignored = "is ignored \(level.location)"
        switch KeySpelling.classify(key, at: level) {
        case .legacy(let replacement):
            let isLegacyName = KeySpelling.legacyKeys[key] != nil
            var message = isLegacyName
                ? "\(key) is a legacy key that current OS versions do not honour, so it \(ignored) (R2)."
                : "\(name) is not an ATS key and \(ignored); it looks like a legacy key, which is not honoured"
                    + " either (R2)."
            message += " Use \(replacement)"
            message += level == .exceptionEntry ? " instead." : " inside an NSExceptionDomains entry instead."
            report(.legacyKey, at: path, message)
        case .obsoleteCertificateTransparency:
            report(.certificateTransparencyKey, at: path,
                   "\(name) is not an ATS key any more and \(ignored) (R16): the system enforces Certificate"
                   + " Transparency for publicly trusted certificates issued after 2018-10-15. Remove it.")
        case .misplaced(let levels):
            report(.misplacedKey, at: path,
                   "\(key) belongs \(Self.locations(levels)) and \(ignored) (\(level.specRule)). Move it there.")
        case .misspelled(let suggestion, let levels):
            var message = "\(name) is not an ATS key and \(ignored) (\(level.specRule)). Did you mean \(suggestion)?"
            if !levels.isEmpty, !levels.contains(level) {
                message += " It belongs \(Self.locations(levels))."
            }
            report(.misspelledKey, at: path, message)
        case .unknown where level == .topLevel && value?.dictionaryValue != nil && key.contains("."):
            report(.misplacedKey, at: path,
                   "\(name) looks like a domain entry, but domain entries belong inside NSExceptionDomains (or"
                   + " NSPinnedDomains); at the top level it is ignored (R2). Move it there.")
        case .unknown:
            report(.unknownKey, at: path,
                   "\(name) is not an ATS key and \(ignored) (\(level.specRule)). The keys read there are "
                   + LintText.list(level.knownKeys) + ".")
        }
    }

    /// "in an NSExceptionDomains entry or in an NSPinnedDomains entry".
    private static func locations(_ levels: [KeyLevel]) -> String {
        levels.map(\.location).joined(separator: " or ")
    }

    /// An ATS key written directly inside NSExceptionDomains or NSPinnedDomains, where it is read as a domain
    /// name (`NSIncludesSubdomains` beside the entries instead of inside one). True when reported.
    mutating func checkKeyNameAsDomain(_ key: String, in table: DomainTable, path: LintKeyPath) -> Bool {
        guard key.hasPrefix("NS"), !key.contains(".") else { return false }
        let entryLevel: KeyLevel = table == .exceptions ? .exceptionEntry : .pinnedEntry
        let meant: String
        switch KeySpelling.classify(key, at: entryLevel) {
        case .misplaced:
            meant = key
        case .misspelled(let suggestion, _):
            meant = suggestion
        case .legacy(let replacement):
            meant = replacement
        case .obsoleteCertificateTransparency, .unknown:
            return false
        }
        var message = "\(LintText.quoted(key)) sits directly inside \(table.name), where it is read as a domain name"
            + " and never matches (R5)."
        let levels = KeySpelling.levels(of: meant)
        if meant != key { message += " Did you mean \(meant)?" }
        if !levels.isEmpty { message += " \(meant) belongs \(Self.locations(levels))." }
        report(.misplacedKey, at: path, message)
        return true
    }
}

extension LintPass {
    /// An Info.plist without NSAppTransportSecurity means full ATS; a near miss of the key name is almost
    /// certainly an ATS dictionary the OS never reads.
    mutating func checkInfoPlistRoot() {
        let expected = "NSAppTransportSecurity"
        guard source.root == .infoPlist, !source.infoPlistKeys.contains(expected) else { return }
        let target = Array(expected.lowercased().unicodeScalars)
        for key in source.infoPlistKeys
        where KeySpelling.editDistance(Array(key.lowercased().unicodeScalars), target) <= 3 {
            report(.misspelledKey, at: LintKeyPath(prefix: "").appending(key),
                   "Info.plist key \(LintText.quoted(key)) is not NSAppTransportSecurity, so the OS never reads"
                   + " this dictionary and the app gets full ATS (R2). Did you mean 'NSAppTransportSecurity'?")
        }
    }
}
