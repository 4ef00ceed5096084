import ATSPolicy
/// The top-level keys: arbitrary loads and the keys that override them (R11, R12), their value types (R1),
/// and top-level keys the engine does not read (R2).
extension LintPass {
    mutating func checkGlobalKeys() {
        let dictionary = source.dictionary
        checkTopLevelBooleans()
        checkArbitraryLoads()
        checkContextKeys()
        checkLocalNetworking()
        if profile == .ios9, dictionary[ATSKey.pinnedDomains] != nil {
            report(Lints.KeyNotInProfile(situation: .pinnedDomains), at: root.appending(ATSKey.pinnedDomains))
        }
        for key in dictionary.keys.sorted() where !ATSKey.topLevel.contains(key) {
            checkUnreadKey(key, at: .topLevel, path: root.appending(key), value: dictionary[key])
        }
    }

    /// The keys R12 looks at for presence alone (ios10 and ios17), in R12's order.
    private var overridingKeys: [String] {
        [ATSKey.allowsLocalNetworking, ATSKey.allowsArbitraryLoadsForMedia, ATSKey.allowsArbitraryLoadsInWebContent]
    }

    private mutating func checkTopLevelBooleans() {
        let keys = [ATSKey.allowsArbitraryLoads] + overridingKeys
        for key in keys {
            guard let value = source.dictionary[key], value.boolValue == nil else { continue }
            report(Lints.NotABoolean(situation: .topLevel(key: key, profile: profile), value: value),
                   at: root.appending(key))
        }
    }

    private mutating func checkArbitraryLoads() {
        guard policy.allowsArbitraryLoads.isYes else { return }
        let path = root.appending(ATSKey.allowsArbitraryLoads)
        let overriding = profile == .ios9 ? [] : overridingKeys.filter { source.dictionary[$0] != nil }
        if overriding.isEmpty {
            report(Lints.ArbitraryLoads(), at: path)
        } else {
            report(Lints.ArbitraryLoadsIgnored(overriding: overriding), at: path)
        }
    }

    private mutating func checkContextKeys() {
        let contexts: [(key: String, yes: any LintRuleDefinition)] = [
            (Lints.ArbitraryLoadsForMedia.key, Lints.ArbitraryLoadsForMedia()),
            (Lints.ArbitraryLoadsInWebContent.key, Lints.ArbitraryLoadsInWebContent()),
        ]
        for (key, yes) in contexts {
            guard let value = source.dictionary[key] else { continue }
            let path = root.appending(key)
            if profile == .ios9 {
                report(Lints.KeyNotInProfile(situation: .contextKey(key)), at: path)
            } else if value == .bool(true) {
                report(yes, at: path)
            }
        }
    }

    private mutating func checkLocalNetworking() {
        guard let value = source.dictionary[ATSKey.allowsLocalNetworking] else { return }
        let path = root.appending(ATSKey.allowsLocalNetworking)
        if profile == .ios9 {
            report(Lints.KeyNotInProfile(situation: .localNetworking), at: path)
        } else if value == .bool(true) {
            report(Lints.LocalNetworking(), at: path)
        } else if value == .bool(false) {
            report(Lints.LocalNetworkingRevoked(), at: path)
        }
    }
}
