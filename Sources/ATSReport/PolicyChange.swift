import ATSPolicy
import TrafficLogs

/// One edit of an app's ATS dictionary: what the report suggests adding or removing.
public enum PolicyChange: Equatable, Sendable {
    /// Sets a key of an NSExceptionDomains entry, creating the entry when the dictionary has none.
    case setEntryKey(domain: String, key: String, value: PlistValue)
    case setGlobal(key: String, value: PlistValue)
    case removeEntry(domain: String)
    case removeGlobal(key: String)
    case removePin(domain: String)

    /// The key path in the ATS dictionary (`NSExceptionDomains.example.com.NSIncludesSubdomains`).
    public var keyPath: [String] {
        switch self {
        case .setEntryKey(let domain, let key, _): [ATSKey.exceptionDomains, domain, key]
        case .setGlobal(let key, _), .removeGlobal(let key): [key]
        case .removeEntry(let domain): [ATSKey.exceptionDomains, domain]
        case .removePin(let domain): [ATSKey.pinnedDomains, domain]
        }
    }

    /// `NSExceptionAllowsInsecureHTTPLoads=YES for cdn.example.com`, `remove NSExceptionDomains entry 'old.example.com'`.
    public var summary: String {
        switch self {
        case .setEntryKey(let domain, let key, let value): "\(key)=\(PolicyChange.text(value)) for \(domain)"
        case .setGlobal(let key, let value): "\(key)=\(PolicyChange.text(value))"
        case .removeEntry(let domain): "remove NSExceptionDomains entry '\(domain)'"
        case .removeGlobal(let key): "remove \(key)"
        case .removePin(let domain): "remove NSPinnedDomains entry '\(domain)'"
        }
    }

    /// App Review asks for a justification of this key (Apple's list: arbitrary loads in any form,
    /// insecure HTTP loads, a lowered minimum TLS version). Removals never need one.
    public var needsJustification: Bool {
        switch self {
        case .setEntryKey(_, let key, let value):
            switch key {
            case ATSKey.exceptionAllowsInsecureHTTPLoads: return value == .bool(true)
            case ATSKey.exceptionMinimumTLSVersion: return value != .string(TLSVersion.tls12.rawValue)
                && value != .string(TLSVersion.tls13.rawValue)
            default: return false
            }
        case .setGlobal(let key, let value):
            return value == .bool(true) && [ATSKey.allowsArbitraryLoads, ATSKey.allowsArbitraryLoadsForMedia,
                                            ATSKey.allowsArbitraryLoadsInWebContent].contains(key)
        case .removeEntry, .removeGlobal, .removePin:
            return false
        }
    }

    static func text(_ value: PlistValue) -> String {
        switch value {
        case .bool(let flag): flag ? "YES" : "NO"
        case .string(let text): text
        default: value.shortDescription
        }
    }
}

extension PolicySource {
    /// The same source with `changes` applied to its dictionary, in order.
    public func applying(_ changes: [PolicyChange]) -> PolicySource {
        var copy = self
        // NSExceptionDomains is taken out while its entries change, so thousands of changes edit one
        // uniquely held dictionary instead of copying it once each.
        var domains = copy.dictionary.removeValue(forKey: ATSKey.exceptionDomains)
        for change in changes {
            if case .setEntryKey(let domain, let key, let value) = change {
                var all = domains?.dictionaryValue ?? [:]
                domains = nil
                var entry = all.removeValue(forKey: domain)?.dictionaryValue ?? [:]
                entry[key] = value
                all[domain] = .dictionary(entry)
                domains = .dictionary(all)
            } else if case .removeEntry(let domain) = change {
                var all = domains?.dictionaryValue ?? [:]
                domains = nil
                all[domain] = nil
                domains = all.isEmpty ? nil : .dictionary(all)
            } else {
                copy.dictionary.apply(change)
            }
        }
        if let domains { copy.dictionary[ATSKey.exceptionDomains] = domains }
        return copy
    }
}

extension Dictionary where Key == String, Value == PlistValue {
    mutating func apply(_ change: PolicyChange) {
        switch change {
        case .setEntryKey(let domain, let key, let value):
            var domains = self[ATSKey.exceptionDomains]?.dictionaryValue ?? [:]
            var entry = domains[domain]?.dictionaryValue ?? [:]
            entry[key] = value
            domains[domain] = .dictionary(entry)
            self[ATSKey.exceptionDomains] = .dictionary(domains)
        case .setGlobal(let key, let value):
            self[key] = value
        case .removeEntry(let domain):
            removeNested(ATSKey.exceptionDomains, domain)
        case .removeGlobal(let key):
            self[key] = nil
        case .removePin(let domain):
            removeNested(ATSKey.pinnedDomains, domain)
        }
    }

    /// Removes `inner` from the dictionary at `outer`, and `outer` itself once it is empty.
    private mutating func removeNested(_ outer: String, _ inner: String) {
        guard var nested = self[outer]?.dictionaryValue else { return }
        nested[inner] = nil
        self[outer] = nested.isEmpty ? nil : .dictionary(nested)
    }
}
