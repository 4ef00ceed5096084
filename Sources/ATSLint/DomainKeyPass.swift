import ATSPolicy
/// The table a domain key sits in.
package enum DomainTable: Sendable {
    case exceptions
    case pins

    var name: String { self == .exceptions ? ATSKey.exceptionDomains : ATSKey.pinnedDomains }
}

/// What a domain key is, as far as matching goes.
package enum DomainKeyKind: Equatable {
    /// A host name that can match (possibly only its trailing-dot spelling).
    case name
    /// An IP key (R8): matches only under the ios17 profile.
    case address(IPAddress)
    /// A CIDR key (R8): matches only under the ios17 profile.
    case network(IPNetwork)
    /// A key that never matches any host (R5, R8, R17).
    case neverMatches

    var isIP: Bool {
        switch self {
        case .address, .network: true
        case .name, .neverMatches: false
        }
    }
}

/// Exception and pin keys: exact lowercase host names with no port, scheme, path or wildcard (R5); IP and
/// CIDR keys read strictly and only from the iOS 17 SDK on (R8); domain names only for pins (R17).
extension LintPass {
    /// Reports what keeps `key` from matching and suggests the key meant. `includesSubdomains` is the
    /// entry's NSIncludesSubdomains; `siblings` the other keys of the table.
    mutating func checkDomainKey(_ key: String, in table: DomainTable, includesSubdomains: Bool,
                                 siblings: [String: PlistValue], path: LintKeyPath) -> DomainKeyKind {
        let label = "\(table.name) key \(LintText.quoted(key))"
        if key.isEmpty {
            report(Lints.DomainKeyEmpty(table: table), at: path)
            return .neverMatches
        }
        if let address = IPAddress.parseStrict(Substring(key)) {
            if table == .exceptions, address.description != key {
                report(Lints.IPKeyNotCanonical(label: label, address: address), at: path)
                return .neverMatches
            }
            return checkIPKey(label, kind: .address(address), in: table, path: path)
        }
        if let cidr = DomainKeyText.cidrParts(key) {
            guard let parsed = IPNetwork.parse(Substring(key)) else {
                if table == .pins { return reportPinnedIP(label, path: path) }
                report(Lints.CIDRInvalid(label: label, problem: DomainKeyText.cidrProblem(cidr)), at: path)
                return .neverMatches
            }
            if parsed.hadHostBits, table == .exceptions {
                report(Lints.CIDRHostBits(label: label, network: parsed.network), at: path)
            }
            return checkIPKey(label, kind: .network(parsed.network), in: table, path: path)
        }
        if DomainKeyText.looksLikeIPAddress(key) {
            if table == .pins { return reportPinnedIP(label, path: path) }
            report(Lints.IPKeyInvalid(label: label, key: key, decimal: DomainKeyText.decimalIPv4(key),
                                      resolved: IPAddress.parseResolverHost(Substring(key))), at: path)
            return .neverMatches
        }
        return checkNameKey(key, label: label, in: table, includesSubdomains: includesSubdomains,
                            siblings: siblings, path: path)
    }

    private mutating func checkIPKey(_ label: String, kind: DomainKeyKind, in table: DomainTable,
                                     path: LintKeyPath) -> DomainKeyKind {
        if table == .pins { return reportPinnedIP(label, path: path) }
        let what: String
        if case .network = kind { what = "a CIDR key" } else { what = "an IP address key" }
        if profile == .ios17 {
            report(Lints.IPKeyRequiresIOS17(label: label, what: what), at: path)
        } else {
            report(Lints.IPKeyUnsupported(label: label, what: what, profile: profile), at: path)
        }
        return kind
    }

    private mutating func reportPinnedIP(_ label: String, path: LintKeyPath) -> DomainKeyKind {
        report(Lints.PinnedIPKey(label: label), at: path)
        return .neverMatches
    }

    private mutating func checkNameKey(_ key: String, label: String, in table: DomainTable,
                                       includesSubdomains: Bool, siblings: [String: PlistValue],
                                       path: LintKeyPath) -> DomainKeyKind {
        var fix = DomainKeyText.NameFix(key)
        if fix.problems.isEmpty, fix.invalidReason == nil {
            if fix.trailingDot {
                report(Lints.DomainKeyTrailingDot(situation: .onlyProblem(label: label, key: key, fixed: fix.fixed)),
                       at: path)
            }
            return .name
        }
        if fix.trailingDot { fix.problems.append((.domainKeyTrailingDot, "a trailing dot")) }
        // One finding per key, under the id of its first problem in this order.
        let order: [LintRule] = [.domainKeyScheme, .domainKeyPath, .domainKeyPort, .domainKeyWildcard,
                                 .domainKeyWhitespace, .domainKeyUppercase, .domainKeyInvalid, .domainKeyTrailingDot]
        let rules = fix.problems.map(\.rule) + (fix.invalidReason == nil ? [] : [.domainKeyInvalid])
        let primary = order.first { rules.contains($0) } ?? .domainKeyInvalid
        let never = NeverMatchingNameKey(label: label, traits: fix.problems.map(\.text), invalidReason: fix.invalidReason,
                                         suggestion: fix.suggestion, coversSubdomains: fix.coversSubdomains,
                                         includesSubdomains: includesSubdomains, table: table,
                                         suggestionExists: fix.suggestion.map { siblings[$0] != nil } ?? false)
        switch primary {
        case .domainKeyScheme: report(Lints.DomainKeyScheme(key: never), at: path)
        case .domainKeyPath: report(Lints.DomainKeyPath(key: never), at: path)
        case .domainKeyPort: report(Lints.DomainKeyPort(key: never), at: path)
        case .domainKeyWildcard: report(Lints.DomainKeyWildcard(key: never), at: path)
        case .domainKeyWhitespace: report(Lints.DomainKeyWhitespace(key: never), at: path)
        case .domainKeyUppercase: report(Lints.DomainKeyUppercase(key: never), at: path)
        case .domainKeyTrailingDot: report(Lints.DomainKeyTrailingDot(situation: .neverMatches(never)), at: path)
        default: report(Lints.DomainKeyInvalid(key: never), at: path)
        }
        return .neverMatches
    }
}

/// Text analysis of domain keys, without reporting.
package enum DomainKeyText {
    /// The address and length texts of a key shaped like CIDR (`10.0.0.0/8`, `2001:db8::/32`, `10/8`).
    static func cidrParts(_ key: String) -> (address: Substring, length: Substring)? {
        let parts = key.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty,
              parts[1].unicodeScalars.allSatisfy({ ("0"..."9").contains($0) }) else { return nil }
        let address = parts[0]
        let isIPv6Like = address.contains(":")
            && address.unicodeScalars.allSatisfy { isHex($0) || $0 == ":" || $0 == "." }
        let isIPv4Like = address.unicodeScalars.allSatisfy { ("0"..."9").contains($0) || $0 == "." }
        guard isIPv6Like || isIPv4Like else { return nil }
        return (address, parts[1])
    }

    /// Why CIDR text does not parse: the address or the length.
    static func cidrProblem(_ cidr: (address: Substring, length: Substring)) -> String {
        let isIPv6 = cidr.address.contains(":")
        let maximum = isIPv6 ? 128 : 32
        if IPNetwork.parse(Substring("\(cidr.address)/0")) == nil {
            return isIPv6
                ? "\(LintText.quoted(String(cidr.address))) is not an IPv6 address"
                : "\(LintText.quoted(String(cidr.address))) is not an IPv4 network (one to four decimal octets"
                    + " 0-255 without leading zeros)"
        }
        return "the prefix length \(LintText.bounded(String(cidr.length))) is larger than \(maximum)"
    }

    /// Keys made only of address characters that end in a number (`010.0.0.1`, `127.1`, `1.2.3.999`) or
    /// look like IPv6 text (`2001:db8:::1`). Valid strict addresses are checked before this.
    static func looksLikeIPAddress(_ key: String) -> Bool {
        let scalars = key.unicodeScalars
        if key.contains("::") || scalars.filter({ $0 == ":" }).count >= 2 {
            return scalars.allSatisfy { isHex($0) || $0 == ":" || $0 == "." || $0 == "%" }
        }
        guard scalars.allSatisfy({ isHex($0) || $0 == "." || $0 == "x" || $0 == "X" }) else { return false }
        var labels = key.split(separator: ".", omittingEmptySubsequences: false)
        if labels.count > 1, labels.last == "" { labels.removeLast() }
        guard let last = labels.last, !last.isEmpty else { return false }
        if last.unicodeScalars.allSatisfy({ ("0"..."9").contains($0) }) { return true }
        let lower = last.lowercased()
        return lower.hasPrefix("0x") && lower.dropFirst(2).unicodeScalars.allSatisfy(isHex)
    }

    /// `010.000.0.1` as `10.0.0.1`: four decimal parts of at most 255 with the leading zeros dropped.
    static func decimalIPv4(_ key: String) -> String? {
        var text = Substring(key)
        if text.hasSuffix(".") { text = text.dropLast() }
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var octets: [String] = []
        for part in parts {
            guard !part.isEmpty, part.count <= 8, part.unicodeScalars.allSatisfy({ ("0"..."9").contains($0) }),
                  let value = Int(part), value <= 255 else { return nil }
            octets.append(String(value))
        }
        return octets.joined(separator: ".")
    }

    static func isHex(_ scalar: Unicode.Scalar) -> Bool {
        ("0"..."9").contains(scalar) || ("a"..."f").contains(scalar) || ("A"..."F").contains(scalar)
    }

    /// A name key taken apart: what keeps it from matching (R5) and the key it most likely means.
    struct NameFix {
        var problems: [(rule: LintRule, text: String)] = []
        /// What is left after removing the problems, lowercased, without a trailing dot.
        var fixed: String
        var trailingDot = false
        /// The key had a wildcard or a leading dot: the author wanted the subdomains.
        var coversSubdomains = false
        /// Why `fixed` is still not a host name.
        var invalidReason: String?
        private var fixable = true

        /// The key to use instead, when there is one.
        var suggestion: String? { fixable && invalidReason == nil && !fixed.isEmpty ? fixed : nil }

        init(_ key: String) {
            var text = key
            if text.unicodeScalars.contains(where: { $0.properties.isWhitespace }) {
                problems.append((.domainKeyWhitespace, "white space"))
                text = String(String.UnicodeScalarView(text.unicodeScalars.filter { !$0.properties.isWhitespace }))
            }
            if let scheme = text.range(of: "://") {
                problems.append((.domainKeyScheme, "a scheme (\(LintText.quoted(String(text[..<scheme.upperBound]))))"))
                text = String(text[scheme.upperBound...])
            }
            if let cut = text.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) {
                problems.append((.domainKeyPath, "a path (\(LintText.quoted(String(text[cut...]))))"))
                text = String(text[..<cut])
            }
            if let at = text.lastIndex(of: "@") {
                problems.append((.domainKeyInvalid, "user information (\(LintText.quoted(String(text[...at]))))"))
                text = String(text[text.index(after: at)...])
            }
            if text.hasPrefix("[") {
                if let close = text.firstIndex(of: "]") {
                    let after = text[text.index(after: close)...]
                    if after.hasPrefix(":") {
                        problems.append((.domainKeyPort, "a port (\(LintText.quoted(String(after))))"))
                    } else if !after.isEmpty {
                        fixable = false
                    }
                    problems.append((.domainKeyInvalid, "brackets"))
                    text = String(text[text.index(after: text.startIndex)..<close])
                }
            } else if let colon = text.firstIndex(of: ":"), text.lastIndex(of: ":") == colon {
                let port = text[text.index(after: colon)...]
                let isPort = !port.isEmpty && port.unicodeScalars.allSatisfy { ("0"..."9").contains($0) }
                problems.append((.domainKeyPort, isPort ? "a port (\(LintText.quoted(":" + port)))" : "a colon"))
                text = String(text[..<colon])
            }
            if text.hasPrefix("*.") {
                problems.append((.domainKeyWildcard, "a wildcard ('*.')"))
                text.removeFirst(2)
                coversSubdomains = true
            } else if text.hasPrefix("."), text.count > 1 {
                problems.append((.domainKeyWildcard, "a leading dot"))
                text.removeFirst()
                coversSubdomains = true
            }
            if text.contains("*") {
                if !problems.contains(where: { $0.rule == .domainKeyWildcard }) {
                    problems.append((.domainKeyWildcard, "a wildcard ('*')"))
                }
                fixable = false
            }
            if text != text.lowercased() {
                problems.append((.domainKeyUppercase, "uppercase letters"))
                text = text.lowercased()
            }
            if text.hasSuffix("."), text.count > 1 {
                trailingDot = true
                text.removeLast()
            }
            fixed = text
            if fixable, text.hasSuffix(".") {
                invalidReason = "empty label"
            } else if fixable {
                do {
                    let host = try Host.parse(text)
                    if case .address = host, IPAddress.parseStrict(Substring(text)) == nil {
                        invalidReason = "not an IP address as keys are read"
                    }
                } catch {
                    invalidReason = LintText.bounded(error.problem)
                }
            }
        }
    }
}
