import ATSPolicy
import Foundation

/// NSPinnedDomains (R17): the container, each entry's keys and identity arrays.
extension LintPass {
    mutating func checkPinnedDomains() {
        guard let value = source.dictionary[ATSKey.pinnedDomains] else { return }
        let tablePath = root.appending(ATSKey.pinnedDomains)
        guard let pins = value.dictionaryValue else {
            report(Lints.NotADictionary(situation: .pinnedDomains, value: value), at: tablePath)
            return
        }
        for key in pins.keys.sorted() {
            let path = tablePath.appending(key)
            if checkKeyNameAsDomain(key, in: .pins, path: path) { continue }
            let entry = pins[key]?.dictionaryValue
            let includesSubdomains = entry?[ATSKey.includesSubdomains] == .bool(true)
            _ = checkDomainKey(key, in: .pins, includesSubdomains: includesSubdomains, siblings: pins, path: path)
            guard let entry else {
                report(Lints.NotADictionary(situation: .pinnedEntry(key: key), value: pins[key] ?? .null), at: path)
                continue
            }
            checkPinEntry(key, entry, path: path)
        }
    }

    private mutating func checkPinEntry(_ key: String, _ entry: [String: PlistValue], path: LintKeyPath) {
        let host = LintText.quoted(key)
        if let value = entry[ATSKey.includesSubdomains] {
            if value.boolValue == nil {
                report(Lints.NotABoolean(situation: .pinnedIncludesSubdomains(host: host), value: value),
                       at: path.appending(ATSKey.includesSubdomains))
            } else if value == .bool(true) {
                report(Lints.PinIncludesSubdomains(host: host, key: key), at: path.appending(ATSKey.includesSubdomains))
            }
        }
        for name in entry.keys.sorted() where !ATSKey.pinnedEntry.contains(name) {
            checkUnreadKey(name, at: .pinnedEntry, path: path.appending(name))
        }
        let arrays = [ATSKey.pinnedCAIdentities, ATSKey.pinnedLeafIdentities].filter { entry[$0] != nil }
        if arrays.isEmpty {
            report(Lints.PinNoIdentities(host: host), at: path)
        }
        for name in arrays {
            checkIdentities(name, entry[name] ?? .null, host: host, path: path.appending(name))
        }
    }

    private mutating func checkIdentities(_ name: String, _ value: PlistValue, host: String, path: LintKeyPath) {
        guard let items = value.arrayValue else {
            report(Lints.PinIdentitiesNotArray(name: name, host: host, value: value), at: path)
            return
        }
        var valid = 0
        for (index, item) in items.enumerated() {
            if checkIdentity(item, arrayName: name, index: index, host: host, path: path.appending(index: index)) {
                valid += 1
            }
        }
        if valid == 0 {
            report(Lints.PinIdentitiesEmpty(name: name, host: host, isEmpty: items.isEmpty), at: path)
        }
    }

    /// Reports what is wrong with one identity; true when it is a usable digest.
    private mutating func checkIdentity(_ item: PlistValue, arrayName: String, index: Int, host: String,
                                        path: LintKeyPath) -> Bool {
        let element = "\(arrayName)[\(index)] of \(host)"
        guard let identity = item.dictionaryValue else {
            report(Lints.PinIdentityInvalid(element: element, problem: .notADictionary(item)), at: path)
            return false
        }
        for name in identity.keys.sorted() where name != ATSKey.spkiSHA256 {
            checkUnreadKey(name, at: .pinnedIdentity, path: path.appending(name))
        }
        guard let digest = identity[ATSKey.spkiSHA256] else {
            report(Lints.PinIdentityInvalid(element: element, problem: .noDigest), at: path)
            return false
        }
        let digestPath = path.appending(ATSKey.spkiSHA256)
        guard let text = digest.stringValue else {
            report(Lints.PinIdentityInvalid(element: element, problem: .notAString(digest)), at: digestPath)
            return false
        }
        guard let data = Data(base64Encoded: text) else {
            let trimmed = String(text.unicodeScalars.filter { !$0.properties.isWhitespace }.map(Character.init))
            let whiteSpace = trimmed != text && Data(base64Encoded: trimmed) != nil
            report(Lints.PinIdentityInvalid(element: element, problem: .notBase64(whiteSpace: whiteSpace)), at: digestPath)
            return false
        }
        guard data.count == 32 else {
            report(Lints.PinIdentityInvalid(element: element, problem: .wrongLength(data.count)), at: digestPath)
            return false
        }
        return true
    }
}
