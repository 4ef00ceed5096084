import ATSPolicy
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
            report(Lints.LegacyKey(key: key, ignored: ignored, replacement: replacement,
                                   isLegacyName: KeySpelling.legacyKeys[key] != nil,
                                   inExceptionEntry: level == .exceptionEntry), at: path)
        case .obsoleteCertificateTransparency:
            report(Lints.CertificateTransparencyKey(name: name, ignored: ignored), at: path)
        case .misplaced(let levels):
            report(Lints.MisplacedKey(situation: .elsewhere(key: key, belongs: Self.locations(levels), ignored: ignored,
                                                            specRule: level.specRule)), at: path)
        case .misspelled(let suggestion, let levels):
            let belongs = !levels.isEmpty && !levels.contains(level) ? Self.locations(levels) : nil
            report(Lints.MisspelledKey(situation: .key(name: name, ignored: ignored, specRule: level.specRule,
                                                       suggestion: suggestion, belongs: belongs)), at: path)
        case .unknown where level == .topLevel && value?.dictionaryValue != nil && key.contains("."):
            report(Lints.MisplacedKey(situation: .domainEntryAtTopLevel(name: name)), at: path)
        case .unknown:
            report(Lints.UnknownKey(name: name, ignored: ignored, specRule: level.specRule, knownKeys: level.knownKeys),
                   at: path)
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
        let levels = KeySpelling.levels(of: meant)
        report(Lints.MisplacedKey(situation: .keyAsDomain(key: key, table: table, meant: meant,
                                                          belongs: levels.isEmpty ? nil : Self.locations(levels))),
               at: path)
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
            report(Lints.MisspelledKey(situation: .infoPlist(key: key)), at: LintKeyPath(prefix: "").appending(key))
        }
    }
}
