import Foundation

/// NSPinnedDomains (R17): the container, each entry's keys and identity arrays.
extension LintPass {
    mutating func checkPinnedDomains() {
        guard let value = source.dictionary[ATSKey.pinnedDomains] else { return }
        let tablePath = root.appending(ATSKey.pinnedDomains)
        guard let pins = value.dictionaryValue else {
            report(.notADictionary, at: tablePath,
                   "NSPinnedDomains is \(LintText.describe(value)), not a dictionary, and is ignored: nothing is"
                   + " pinned (R17). Make it a dictionary from domain name to entry.")
            return
        }
        for key in pins.keys.sorted() {
            let path = tablePath.appending(key)
            if checkKeyNameAsDomain(key, in: .pins, path: path) { continue }
            let entry = pins[key]?.dictionaryValue
            let includesSubdomains = entry?[ATSKey.includesSubdomains] == .bool(true)
            _ = checkDomainKey(key, in: .pins, includesSubdomains: includesSubdomains, siblings: pins, path: path)
            guard let entry else {
                report(.notADictionary, at: path,
                       "NSPinnedDomains entry \(LintText.quoted(key)) is \(LintText.describe(pins[key] ?? .null)),"
                       + " not a dictionary, and is ignored: nothing is pinned for it (R17).")
                continue
            }
            checkPinEntry(key, entry, path: path)
        }
    }

    private mutating func checkPinEntry(_ key: String, _ entry: [String: PlistValue], path: LintKeyPath) {
        let host = LintText.quoted(key)
        if let value = entry[ATSKey.includesSubdomains] {
            if value.boolValue == nil {
                report(.notABoolean, at: path.appending(ATSKey.includesSubdomains),
                       "NSIncludesSubdomains is \(LintText.describe(value)), not a boolean, and is ignored; the key"
                       + " keeps its default NO, so the pins apply to \(host) only (R1, R17)."
                       + " Write <true/> or <false/>.")
            } else if value == .bool(true) {
                report(.pinIncludesSubdomains, at: path.appending(ATSKey.includesSubdomains),
                       "NSIncludesSubdomains=YES extends the pins of \(host) to its immediate subdomains only"
                       + " (a.\(LintText.bounded(key)), not a.b.\(LintText.bounded(key))) (R17). Add entries for"
                       + " deeper subdomains that need the pins.")
            }
        }
        for name in entry.keys.sorted() where !ATSKey.pinnedEntry.contains(name) {
            checkUnreadKey(name, at: .pinnedEntry, path: path.appending(name))
        }
        let arrays = [ATSKey.pinnedCAIdentities, ATSKey.pinnedLeafIdentities].filter { entry[$0] != nil }
        if arrays.isEmpty {
            report(.pinNoIdentities, at: path,
                   "NSPinnedDomains entry \(host) has neither NSPinnedCAIdentities nor NSPinnedLeafIdentities, so"
                   + " it pins nothing (R17). Add an identity array, or remove the entry.")
        }
        for name in arrays {
            checkIdentities(name, entry[name] ?? .null, host: host, path: path.appending(name))
        }
    }

    private mutating func checkIdentities(_ name: String, _ value: PlistValue, host: String, path: LintKeyPath) {
        guard let items = value.arrayValue else {
            report(.pinIdentitiesNotArray, at: path,
                   "\(name) of \(host) is \(LintText.describe(value)), not an array, and is ignored (R17). Make it"
                   + " an array of dictionaries with \(ATSKey.spkiSHA256).")
            return
        }
        var valid = 0
        for (index, item) in items.enumerated() {
            if checkIdentity(item, arrayName: name, index: index, host: host, path: path.appending(index: index)) {
                valid += 1
            }
        }
        if valid == 0 {
            let what = items.isEmpty ? "is empty" : "has no valid identity"
            report(.pinIdentitiesEmpty, at: path,
                   "\(name) of \(host) \(what), so no certificate can match it and connections to \(host) fail the"
                   + " pin check (R17). Add the base64 SHA-256 digest of the pinned SubjectPublicKeyInfo.")
        }
    }

    /// Reports what is wrong with one identity; true when it is a usable digest.
    private mutating func checkIdentity(_ item: PlistValue, arrayName: String, index: Int, host: String,
                                        path: LintKeyPath) -> Bool {
        let element = "\(arrayName)[\(index)] of \(host)"
        guard let identity = item.dictionaryValue else {
            report(.pinIdentityInvalid, at: path,
                   "\(element) is \(LintText.describe(item)), not a dictionary with \(ATSKey.spkiSHA256), and is"
                   + " ignored (R17).")
            return false
        }
        for name in identity.keys.sorted() where name != ATSKey.spkiSHA256 {
            checkUnreadKey(name, at: .pinnedIdentity, path: path.appending(name))
        }
        guard let digest = identity[ATSKey.spkiSHA256] else {
            report(.pinIdentityInvalid, at: path,
                   "\(element) has no \(ATSKey.spkiSHA256) key, so it is ignored (R17).")
            return false
        }
        let digestPath = path.appending(ATSKey.spkiSHA256)
        guard let text = digest.stringValue else {
            report(.pinIdentityInvalid, at: digestPath,
                   "\(ATSKey.spkiSHA256) of \(element) is \(LintText.describe(digest)), not a base64 string, so the"
                   + " identity is ignored (R17). Write the digest as base64 text.")
            return false
        }
        guard let data = Data(base64Encoded: text) else {
            var message = "\(ATSKey.spkiSHA256) of \(element) is not valid base64, so the identity is ignored (R17)."
            let trimmed = String(text.unicodeScalars.filter { !$0.properties.isWhitespace }.map(Character.init))
            if trimmed != text, Data(base64Encoded: trimmed) != nil { message += " Remove the white space." }
            report(.pinIdentityInvalid, at: digestPath, message)
            return false
        }
        guard data.count == 32 else {
            report(.pinIdentityInvalid, at: digestPath,
                   "\(ATSKey.spkiSHA256) of \(element) decodes to \(data.count) bytes; a SHA-256 digest is 32 bytes"
                   + " (44 base64 characters), so the identity is ignored (R17).")
            return false
        }
        return true
    }
}
