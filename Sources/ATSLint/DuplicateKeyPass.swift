import ATSPolicy
/// Keys written more than once in the ATS part of the file: NSAppTransportSecurity at an Info.plist's root,
/// and any key of a dictionary inside it; domain keys of NSExceptionDomains and NSPinnedDomains compared in
/// lowercase, as R5 compares hosts. The parsed dictionary keeps one value per key, so this reads the
/// file's outline, and follows only the values the loader kept (a dictionary that has no effect is reported
/// once, not for what it holds).
extension LintPass {
    private static let atsKey = "NSAppTransportSecurity"

    mutating func checkDuplicateKeys(_ outline: PlistOutline) {
        var node = outline.root
        guard outline.nodes[node].kind == .dictionary else { return }
        if source.root == .infoPlist {
            let ats = outline.nodes[node].entries.filter { $0.key == Self.atsKey }
            if ats.count > 1 {
                reportDuplicates(ats, of: node, in: outline, container: "the Info.plist's root", path: LintKeyPath())
            }
            guard let kept = outline.child(of: node, key: Self.atsKey) else { return }
            node = kept.value
        }
        walk(node, in: outline, path: root)
    }

    private mutating func walk(_ node: Int, in outline: PlistOutline, path: LintKeyPath) {
        switch outline.nodes[node].kind {
        case .dictionary:
            let isDomainTable = path == root.appending(ATSKey.exceptionDomains) || path == root.appending(ATSKey.pinnedDomains)
            let entries = outline.nodes[node].entries
            var groups: [String: [PlistOutline.Entry]] = [:]
            var order: [String] = []
            for entry in entries {
                let name = isDomainTable ? entry.key.lowercased() : entry.key
                if groups[name] == nil { order.append(name) }
                groups[name, default: []].append(entry)
            }
            for name in order where groups[name]!.count > 1 {
                reportDuplicates(groups[name]!, of: node, in: outline, container: containerName(path), path: path)
            }
            var seen: Set<String> = []
            for entry in entries where seen.insert(entry.key).inserted {
                guard let kept = outline.child(of: node, key: entry.key) else { continue }
                walk(kept.value, in: outline, path: path.appending(entry.key))
            }
        case .array:
            for (index, element) in outline.nodes[node].elements.enumerated() {
                walk(element, in: outline, path: path.appending(index: index))
            }
        case .scalar:
            break
        }
    }

    /// One finding for each written key that has no effect among `entries` of dictionary `parent`, which all
    /// name the same key (for domain keys, once lowercased).
    private mutating func reportDuplicates(_ entries: [PlistOutline.Entry], of parent: Int, in outline: PlistOutline,
                                           container: String, path: LintKeyPath) {
        let spellings = Set(entries.map(\.key))
        // The entry the OS reads: the kept one of the spelling that can match (for domain keys, the lowercase one).
        let matching = spellings.count == 1 ? entries[0].key : spellings.first { $0 == $0.lowercased() }
        let used = matching.flatMap { outline.child(of: parent, key: $0) } ?? entries[entries.count - 1]
        let usedLine = outline.line(of: used.keyStart)
        let usedValue = outline.value(of: used.value)
        for entry in entries where entry.keyStart != used.keyStart {
            let kind: DuplicateKeyOccurrence.Kind = matching == nil ? .noneLowercase
                : entry.key == used.key ? .repeated : .otherCase
            let occurrence = DuplicateKeyOccurrence(
                kind: kind, key: entry.key, usedKey: used.key, container: container,
                line: outline.line(of: entry.keyStart), usedLine: usedLine,
                lines: entries.filter { $0.key == entry.key }.map { outline.line(of: $0.keyStart) },
                reader: outline.format == .json
                    ? "atsgate's JSON reader uses the first, as Swift's JSONDecoder does" : "the OS uses the last",
                held: outline.value(of: entry.value), used: usedValue)
            let related = [LintRelatedLine(line: usedLine, note: kind == .noneLowercase
                ? "the same domain, written \(LintText.quoted(used.key))"
                : "the \(LintText.quoted(used.key)) the OS uses")]
            let keyPath = path.appending(entry.key)
            if occurrence.isSameValue {
                report(Lints.DuplicateKeySameValue(duplicate: occurrence), at: keyPath, line: occurrence.line,
                       related: related)
            } else {
                report(Lints.DuplicateKey(duplicate: occurrence), at: keyPath, line: occurrence.line, related: related)
            }
        }
    }

    /// "NSAppTransportSecurity", "NSExceptionDomains", "the NSExceptionDomains entry 'a.com'", or the key path.
    private func containerName(_ path: LintKeyPath) -> String {
        if path == root { return source.root == .infoPlist ? Self.atsKey : "the ATS dictionary" }
        for table in [ATSKey.exceptionDomains, ATSKey.pinnedDomains] {
            let tablePath = root.appending(table)
            if path == tablePath { return table }
            if path.components.count == tablePath.components.count + 1, Array(path.components.dropLast()) == tablePath.components,
               case .key(let key) = path.components.last {
                return "the \(table) entry \(LintText.quoted(key))"
            }
        }
        return path.description
    }
}
