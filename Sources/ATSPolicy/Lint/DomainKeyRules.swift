/// The table a domain key sits in.
enum DomainTable: Sendable {
    case exceptions
    case pins

    var name: String { self == .exceptions ? ATSKey.exceptionDomains : ATSKey.pinnedDomains }
}

/// What a domain key is, as far as matching goes.
enum DomainKeyKind: Equatable {
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
            report(.domainKeyEmpty, at: path,
                   "An empty \(table.name) key never matches any host (R5). Write the domain name or remove the entry.")
            return .neverMatches
        }
        if let address = IPAddress.parseStrict(Substring(key)) {
            if table == .exceptions, address.description != key {
                report(.ipKeyNotCanonical, at: path,
                       "\(label) is not in canonical form: an exact IP key is compared as text with the host's"
                       + " canonical form (lowercase, RFC 5952 for IPv6, dotted quad for IPv4-mapped addresses),"
                       + " so the entry never matches (R5, R8). Write '\(address)'.")
                return .neverMatches
            }
            return checkIPKey(label, kind: .address(address), in: table, path: path)
        }
        if let cidr = DomainKeyText.cidrParts(key) {
            guard let parsed = IPNetwork.parse(Substring(key)) else {
                if table == .pins { return reportPinnedIP(label, path: path) }
                report(.cidrInvalid, at: path,
                       "\(label) is not a valid CIDR key: \(DomainKeyText.cidrProblem(cidr)), so the entry never"
                       + " matches (R8). Write ADDRESS/LENGTH, e.g. '10.0.0.0/8'.")
                return .neverMatches
            }
            if parsed.hadHostBits, table == .exceptions {
                report(.cidrHostBits, at: path,
                       "\(label) has host bits set: it is read as \(parsed.network) (R8). Write '\(parsed.network)'"
                       + " so that the key says what it matches.")
            }
            return checkIPKey(label, kind: .network(parsed.network), in: table, path: path)
        }
        if DomainKeyText.looksLikeIPAddress(key) {
            if table == .pins { return reportPinnedIP(label, path: path) }
            var message = "\(label) looks like an IP address but is not one as keys are read (four decimal octets"
                + " 0-255 without leading zeros, or IPv6 text), so the entry never matches (R8)."
            let decimal = DomainKeyText.decimalIPv4(key)
            let resolved = IPAddress.parseResolverHost(Substring(key))
            if let fix = decimal ?? resolved?.description { message += " Write '\(fix)'." }
            if let resolved, let decimal, resolved.description != decimal {
                message += " Note that a resolver reads \(LintText.quoted(key)) as \(resolved)."
            }
            report(.ipKeyInvalid, at: path, message)
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
            report(.ipKeyRequiresIOS17, at: path,
                   "\(label) is \(what): it works with the iOS 17 SDK (profile ios17), but older OS versions"
                   + " ignore it (R8).")
        } else {
            report(.ipKeyUnsupported, at: path,
                   "\(label) is \(what), which only the iOS 17 SDK honours: under the \(profile.rawValue) profile"
                   + " the entry never matches (R8). Use host names, or lint with --profile ios17 if the app is"
                   + " built with the iOS 17 SDK.")
        }
        return kind
    }

    private mutating func reportPinnedIP(_ label: String, path: LintKeyPath) -> DomainKeyKind {
        report(.pinnedIPKey, at: path,
               "\(label) is an IP address; NSPinnedDomains applies to domain names only, so the entry never"
               + " matches (R17). Pin the domain name the app connects to.")
        return .neverMatches
    }

    private mutating func checkNameKey(_ key: String, label: String, in table: DomainTable,
                                       includesSubdomains: Bool, siblings: [String: PlistValue],
                                       path: LintKeyPath) -> DomainKeyKind {
        var fix = DomainKeyText.NameFix(key)
        if fix.problems.isEmpty, fix.invalidReason == nil {
            if fix.trailingDot {
                report(.domainKeyTrailingDot, at: path,
                       "\(label) ends with a dot, which is significant: it matches only hosts spelled"
                       + " \(LintText.quoted(key)) with the dot, not \(LintText.quoted(fix.fixed)) (R5)."
                       + " Write \(LintText.quoted(fix.fixed)) unless clients use the dotted spelling.")
            }
            return .name
        }
        if fix.trailingDot { fix.problems.append((.domainKeyTrailingDot, "a trailing dot")) }
        // One finding per key, under the id of its first problem in this order.
        let order: [LintRule] = [.domainKeyScheme, .domainKeyPath, .domainKeyPort, .domainKeyWildcard,
                                 .domainKeyWhitespace, .domainKeyUppercase, .domainKeyInvalid, .domainKeyTrailingDot]
        let rules = fix.problems.map(\.rule) + (fix.invalidReason == nil ? [] : [.domainKeyInvalid])
        let primary = order.first { rules.contains($0) } ?? .domainKeyInvalid
        let traits = fix.problems.map(\.text)
        var message = "\(label) never matches any host (R5): keys are compared as exact lowercase host names,"
            + " without scheme, port, path or wildcard"
        if !traits.isEmpty { message += ", and this one has \(LintText.list(traits))" }
        if let reason = fix.invalidReason { message += traits.isEmpty ? ", and this one is not a host name (\(reason))"
                                                                      : "; it is not a host name (\(reason))" }
        message += "."
        if let suggestion = fix.suggestion {
            message += " Use \(LintText.quoted(suggestion))"
            if fix.coversSubdomains {
                if includesSubdomains {
                    message += " (its NSIncludesSubdomains=YES covers the subdomains"
                } else {
                    message += " with NSIncludesSubdomains=YES (to cover its subdomains"
                }
                message += table == .pins ? ", one level deep for pins)" : ")"
            }
            message += " instead."
            if siblings[suggestion] != nil {
                message += " An entry \(LintText.quoted(suggestion)) already exists: merge the two."
            }
        }
        report(primary, at: path, message)
        return .neverMatches
    }
}

/// Text analysis of domain keys, without reporting.
enum DomainKeyText {
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
