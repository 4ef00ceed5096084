import ATSPolicy
import Foundation

/// NSExceptionDomains: the container and each entry's keys and values (R3, R4, R9, R10, R14), plus what
/// the entry means beside the rest of the policy.
extension LintPass {
    mutating func checkExceptionDomains() {
        guard let value = source.dictionary[ATSKey.exceptionDomains] else { return }
        let tablePath = root.appending(ATSKey.exceptionDomains)
        guard let domains = value.dictionaryValue else {
            report(Lints.NotADictionary(situation: .exceptionDomains, value: value), at: tablePath)
            return
        }
        var ipKeys: [String: [String]] = [:]
        for key in domains.keys.sorted() {
            let path = tablePath.appending(key)
            if checkKeyNameAsDomain(key, in: .exceptions, path: path) { continue }
            let entry = domains[key]?.dictionaryValue
            let includesSubdomains = entry?[ATSKey.includesSubdomains] == .bool(true)
            let kind = checkDomainKey(key, in: .exceptions, includesSubdomains: includesSubdomains,
                                      siblings: domains, path: path)
            switch kind {
            case .address(let address): ipKeys[address.description, default: []].append(key)
            case .network(let network): ipKeys[network.description, default: []].append(key)
            case .name, .neverMatches: break
            }
            guard let entry else {
                report(Lints.NotADictionary(situation: .exceptionEntry(key: key), value: domains[key] ?? .null), at: path)
                continue
            }
            checkExceptionEntry(key, entry, kind: kind, path: path)
        }
        // Before iOS 17 no IP key matches, so which of two would win does not arise.
        if profile == .ios17 { reportDuplicateIPKeys(ipKeys, tablePath: tablePath) }
    }

    private mutating func checkExceptionEntry(_ key: String, _ entry: [String: PlistValue], kind: DomainKeyKind,
                                              path: LintKeyPath) {
        let host = LintText.quoted(key)
        let defaults: [(key: String, value: String)] = [
            (ATSKey.includesSubdomains, "NO"), (ATSKey.exceptionAllowsInsecureHTTPLoads, "NO"),
            (ATSKey.exceptionRequiresForwardSecrecy, "YES"),
        ]
        for (name, defaultValue) in defaults {
            guard let value = entry[name], value.boolValue == nil else { continue }
            report(Lints.NotABoolean(situation: .exceptionEntry(key: name, defaultValue: defaultValue, host: host),
                                     value: value), at: path.appending(name))
        }
        if entry[ATSKey.exceptionAllowsInsecureHTTPLoads] == .bool(true) {
            report(Lints.InsecureHTTPLoads(host: host, includesSubdomains: entry[ATSKey.includesSubdomains] == .bool(true)),
                   at: path.appending(ATSKey.exceptionAllowsInsecureHTTPLoads))
        }
        if let value = entry[ATSKey.exceptionMinimumTLSVersion] {
            checkMinimumTLSVersion(value, host: host, path: path.appending(ATSKey.exceptionMinimumTLSVersion))
        }
        if entry[ATSKey.exceptionRequiresForwardSecrecy] == .bool(false) {
            report(Lints.ForwardSecrecyDisabled(host: host), at: path.appending(ATSKey.exceptionRequiresForwardSecrecy))
        }
        if kind.isIP, let value = entry[ATSKey.includesSubdomains] {
            report(Lints.IncludesSubdomainsOnIP(value: value, host: host), at: path.appending(ATSKey.includesSubdomains))
        }
        for name in entry.keys.sorted() where !ATSKey.exceptionEntry.contains(name) {
            checkUnreadKey(name, at: .exceptionEntry, path: path.appending(name))
        }
        if let builtin = ExceptionEntry.builtins.first(where: { $0.key == key }) {
            report(Lints.ReplacesBuiltin(builtin: builtin, entry: policy.exceptionDomains[key]), at: path)
        } else if kind != .neverMatches {
            checkEnforcement(key, kind: kind, path: path)
        }
    }

    private mutating func checkMinimumTLSVersion(_ value: PlistValue, host: String, path: LintKeyPath) {
        if let text = value.stringValue, let version = TLSVersion(rawValue: text) {
            guard version < .tls12 else { return }
            report(Lints.WeakMinimumTLSVersion(version: version, host: host), at: path)
            return
        }
        report(Lints.InvalidMinimumTLSVersion(value: value, host: host, suggestion: Self.tlsVersionSuggestion(value)),
               at: path)
    }

    /// The version an unrecognised value most likely means: `TLSV1.3`, `tlsv1.2`, `TLS 1.2`, `1.2`, `TLSv1.00`.
    static func tlsVersionSuggestion(_ value: PlistValue) -> TLSVersion? {
        let text: String
        switch value {
        case .string(let string): text = string
        case .real(let real): text = String(real)
        default: return nil
        }
        var digits = text.lowercased().trimmingCharacters(in: .whitespaces)
        let prefixes = ["tlsv", "tls v", "tls-v", "tls_v", "tls ", "tls-", "tls_", "tls", "v"]
        for prefix in prefixes where digits.hasPrefix(prefix) {
            digits.removeFirst(prefix.count)
            break
        }
        digits = digits.replacingOccurrences(of: "_", with: ".")
        guard digits.hasPrefix("1."), digits.count <= 8,
              digits.dropFirst(2).unicodeScalars.allSatisfy({ ("0"..."9").contains($0) }),
              let minor = Int(digits.dropFirst(2).prefix(1)),
              digits.dropFirst(3).allSatisfy({ $0 == "0" }) else { return nil }
        return TLSVersion.allCases.first { $0.rawValue == "TLSv1.\(minor)" }
    }

    /// R10: an entry alone decides for its host. Reports when the entry forbids cleartext to a host that
    /// would otherwise be exempt, under arbitrary loads, or covered by a parent entry that allows it.
    private mutating func checkEnforcement(_ key: String, kind: DomainKeyKind, path: LintKeyPath) {
        guard let entry = policy.exceptionDomains[key], !entry.allowsInsecureHTTPLoads else { return }
        let host: ATSPolicy.Host
        switch kind {
        case .address(let address): host = .address(address)
        case .network(let network): host = .address(network.address)
        case .name:
            guard let name = try? Host.parse(key) else { return }
            host = name
        case .neverMatches: return
        }
        let destination = Destination(host: host, port: 80, scheme: .http)
        var relaxedContexts: [LoadContext] = []
        var relaxation: Relaxation?
        var applied: Decision?
        for context in LoadContext.allCases {
            let decided = engine.decide(destination, context: context)
            guard decided.exception?.entry.key == key, !decided.requirements.cleartextAllowed,
                  let otherwise = relaxationWithout(key, host: host, context: context) else { continue }
            relaxedContexts.append(context)
            if relaxation == nil { (relaxation, applied) = (otherwise, decided) }
        }
        guard let relaxation, let applied else { return }
        let contexts = relaxedContexts.count == LoadContext.allCases.count
            ? "" : " (\(LintText.list(relaxedContexts.map(\.rawValue))) loads)"
        report(Lints.ExceptionEnforcesATS(relaxation: relaxation.phrase, relaxationRule: relaxation.rule,
                                          contexts: contexts, host: host,
                                          requirementsSummary: applied.requirementsSummary), at: path)
    }

    /// Why a cleartext load would be allowed without an entry, and the rule that says so.
    private struct Relaxation {
        var phrase: String
        var rule: String
    }

    /// What would allow a cleartext load to `host` in `context` if the entry `key` were left out; nil when
    /// ATS would forbid it anyway.
    private func relaxationWithout(_ key: String, host: ATSPolicy.Host, context: LoadContext) -> Relaxation? {
        let destination = Destination(host: host, port: 80, scheme: .http)
        let decision: Decision
        switch host {
        case .name(let name):
            if let match = ancestorMatch(of: name) {
                guard match.entry.allowsInsecureHTTPLoads else { return nil }
                let entry = match.entry.isBuiltin
                    ? "the built-in exception '\(match.entry.key)'" : "the entry '\(match.entry.key)'"
                return Relaxation(phrase: "\(entry) would allow cleartext HTTP to \(host)",
                                  rule: match.entry.isBuiltin ? "R9" : "R7")
            }
            decision = withoutExceptions.decide(destination, context: context)
        case .address:
            // Another IP or CIDR key may contain the address; only then is an engine without the entry needed.
            let otherIPKeys = policy.exceptionDomains.keys.contains {
                $0 != key && (IPAddress.parseStrict(Substring($0)) != nil || $0.contains("/"))
            }
            if otherIPKeys {
                var reduced = policy
                reduced.exceptionDomains[key] = nil
                decision = DecisionEngine(policy: reduced, options: engine.options)
                    .decide(destination, context: context)
            } else {
                decision = withoutExceptions.decide(destination, context: context)
            }
        }
        guard decision.requirements.cleartextAllowed else { return nil }
        switch decision.basis {
        case .exception(let match):
            return Relaxation(phrase: "the entry '\(match.entry.key)' would allow cleartext HTTP to \(host)",
                              rule: "R8")
        case .localExemption:
            return Relaxation(phrase: "\(host) is a direct (local) destination, exempt from ATS", rule: "R11")
        case .global(.mediaLoadsAllowed, _):
            return Relaxation(phrase: "NSAllowsArbitraryLoadsForMedia=YES turns ATS off for \(host)", rule: "R12")
        case .global(.webContentAllowed, _):
            return Relaxation(phrase: "NSAllowsArbitraryLoadsInWebContent=YES turns ATS off for \(host)", rule: "R12")
        case .global:
            return Relaxation(phrase: "NSAllowsArbitraryLoads=YES turns ATS off for \(host)", rule: "R12")
        }
    }

    /// The entry R7's walk reaches for `name` once its own entry is left out: the engine's answer for the
    /// nearest ancestor that has an applicable entry (an exact entry without NSIncludesSubdomains does not
    /// cover the children, so the walk goes on past it).
    private func ancestorMatch(of name: String) -> ExceptionMatch? {
        var current = Substring(name)
        while let dot = current.firstIndex(of: ".") {
            current = current[current.index(after: dot)...]
            guard !current.isEmpty, current != ".", let parent = try? Host.parse(current), case .name = parent,
                  let match = engine.decide(Destination(host: parent, port: 80, scheme: .http)).exception else {
                return nil
            }
            if match.kind == .exact, !match.entry.includesSubdomains { continue }
            return match
        }
        return nil
    }

    private mutating func reportDuplicateIPKeys(_ ipKeys: [String: [String]], tablePath: LintKeyPath) {
        for (canonical, keys) in ipKeys where keys.count > 1 {
            let winner = ExceptionTable.preferredKey(keys, canonical: canonical)
            for key in keys {
                report(Lints.DuplicateIPKey(key: key, others: keys.filter { $0 != key }, canonical: canonical,
                                            winner: winner), at: tablePath.appending(key))
            }
        }
    }
}
