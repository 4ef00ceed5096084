import ATSPolicy
import TrafficLogs

/// A key of the app's dictionary that no recorded decision used: a candidate to remove.
public struct UnusedKey: Sendable {
    /// The removal (its key path locates the finding in the policy file).
    public var change: PolicyChange
    /// Why it counts as unused, and what removing it does.
    public var note: String
}

/// Finds what the recorded traffic never needed. An exception entry is unused when no recorded
/// destination was decided by it; a global key when removing it changes no recorded decision; a pin
/// when no recorded destination is pinned by it. The engine answers each question.
struct UnusedKeyFinder {
    let source: PolicySource
    let options: EngineOptions
    let traffic: [DestinationTraffic]
    let judge: DestinationJudge

    func find() -> [UnusedKey] {
        // Every load context recorded counts: a media load may be what NSAllowsArbitraryLoadsForMedia is for.
        let decisions = traffic.flatMap(judge.decisions)
        return unusedEntries(decisions) + unusedGlobalKeys() + unusedPins(decisions)
    }

    /// The app's exception entries no recorded decision used, each with what decided its domain's loads
    /// instead.
    private func unusedEntries(_ decisions: [Decision]) -> [UnusedKey] {
        let policy = judge.engine.policy
        var unused: [UnusedKey] = []
        var used: Set<String> = []
        for decision in decisions {
            if let entry = decision.exception?.entry, !entry.isBuiltin { used.insert(entry.key) }
        }
        let builtinKeys = Set(ExceptionEntry.builtins.map(\.key))
        // Recorded decisions by each name and ancestor of their host, so each entry finds the loads
        // under its domain without a pass over all of them.
        var byName: [Substring: [Int]] = [:]
        for (index, decision) in decisions.enumerated() {
            guard case .name(let host) = decision.destination.host else { continue }
            var rest = Substring(host)
            while true {
                byName[rest, default: []].append(index)
                guard let dot = rest.firstIndex(of: ".") else { break }
                rest = rest[rest.index(after: dot)...]
            }
        }
        for key in policy.exceptionDomains.keys.sorted() where !used.contains(key) {
            let entry = policy.exceptionDomains[key]!
            var note = "no recorded load was decided by this entry"
            // Loads under the entry's domain that something else decided: a built-in or a closer entry.
            let shadowing = (byName[Substring(key)] ?? []).map { decisions[$0] }.filter { decision in
                entry.includesSubdomains || decision.destination.host.description == key
            }
            if let other = shadowing.first?.exception?.entry {
                let hosts = Set(shadowing.map(\.destination.host.description)).sorted().joined(separator: ", ")
                note += other.isBuiltin
                    ? "; the built-in exception '\(other.key)' decides \(hosts) before it (R9: the more specific entry wins)"
                    : "; the entry '\(other.key)' decides \(hosts) before it"
            }
            if builtinKeys.contains(key) {
                note += "; it replaces the built-in exception '\(key)', which removing it restores (R9)"
            }
            unused.append(UnusedKey(change: .removeEntry(domain: key), note: note))
        }
        return unused
    }

    /// The global keys whose removal changes no recorded decision.
    private func unusedGlobalKeys() -> [UnusedKey] {
        var unused: [UnusedKey] = []
        let globals = [ATSKey.allowsArbitraryLoads, ATSKey.allowsArbitraryLoadsForMedia,
                       ATSKey.allowsArbitraryLoadsInWebContent, ATSKey.allowsLocalNetworking]
        for key in globals where source.dictionary[key] != nil {
            let without = DestinationJudge(policy: Policy(source.applying([.removeGlobal(key: key)])), options: options)
            let changed = traffic.contains { !judge.decidesAlike($0, without) }
            guard !changed else { continue }
            var note = "removing it changes no recorded decision"
            if key == ATSKey.allowsArbitraryLoads, source.dictionary[key] == .bool(true) {
                note += " (every recorded load is decided by an exception entry, the local exemption, or a key that overrides it)"
            }
            unused.append(UnusedKey(change: .removeGlobal(key: key), note: note))
        }
        return unused
    }

    /// The pins of NSPinnedDomains that no recorded HTTPS load was pinned by.
    private func unusedPins(_ decisions: [Decision]) -> [UnusedKey] {
        let policy = judge.engine.policy
        var pinned: Set<String> = []
        for decision in decisions where decision.destination.scheme == .https {
            if let pin = judge.engine.pinnedDomain(for: decision.destination.host) { pinned.insert(pin.key) }
        }
        return policy.pinnedDomains.keys.sorted().filter { !pinned.contains($0) }.map { key in
            UnusedKey(change: .removePin(domain: key), note: "no recorded HTTPS load went to a host it pins")
        }
    }
}
