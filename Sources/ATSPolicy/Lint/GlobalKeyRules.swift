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
            report(.keyNotInProfile, at: root.appending(ATSKey.pinnedDomains),
                   "NSPinnedDomains is honoured from iOS 14; under the ios9 profile it has no effect (R17).")
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
            var message = "\(key) is \(LintText.describe(value)), not a boolean, and is ignored"
            if key == ATSKey.allowsLocalNetworking {
                message += profile == .ios9
                    ? " (R1). Write <true/> or <false/>."
                    : "; it still counts as present, so NSAllowsArbitraryLoads is ignored (R1, R12), but only a"
                        + " real NO revokes the local exemption (R11). Write <true/> or <false/>."
            } else if key == ATSKey.allowsArbitraryLoads {
                message += "; the key keeps its default NO, so ATS stays on (R1). Write <true/> if you mean YES."
            } else {
                message += "; the key keeps its default NO (R1)"
                message += profile == .ios9
                    ? ". Write <true/> or <false/>."
                    : ", but it still counts as present, so NSAllowsArbitraryLoads is ignored (R12)."
                        + " Write <true/> or <false/>."
            }
            report(.notABoolean, at: root.appending(key), message)
        }
    }

    private mutating func checkArbitraryLoads() {
        guard policy.allowsArbitraryLoads.isYes else { return }
        let path = root.appending(ATSKey.allowsArbitraryLoads)
        let overriding = profile == .ios9 ? [] : overridingKeys.filter { source.dictionary[$0] != nil }
        if overriding.isEmpty {
            report(.arbitraryLoads, at: path,
                   "NSAllowsArbitraryLoads=YES turns ATS off for every load that no NSExceptionDomains entry covers:"
                   + " cleartext HTTP, any TLS version and no certificate checks beyond the client's own (R12, R13)."
                   + " Remove it and add NSExceptionDomains entries for the hosts that need an exception;"
                   + " App Review requires a justification.")
        } else {
            let keys = LintText.list(overriding)
            report(.arbitraryLoadsIgnored, at: path,
                   "NSAllowsArbitraryLoads=YES is ignored on iOS 10 and later because \(keys)"
                   + " \(overriding.count == 1 ? "is" : "are") present (R12): ATS stays on for every load that"
                   + " no exception entry or \(overriding.count == 1 ? "that key" : "those keys") cover; only iOS 9"
                   + " honours it. Remove NSAllowsArbitraryLoads, or remove \(keys) if ATS should be off;"
                   + " App Review still asks for a justification while it is YES.")
        }
    }

    private mutating func checkContextKeys() {
        let contexts: [(key: String, rule: LintRule, what: String)] = [
            (ATSKey.allowsArbitraryLoadsForMedia, .arbitraryLoadsForMedia, "media loads (AVFoundation)"),
            (ATSKey.allowsArbitraryLoadsInWebContent, .arbitraryLoadsInWebContent, "web content (WKWebView)"),
        ]
        for (key, rule, what) in contexts {
            guard let value = source.dictionary[key] else { continue }
            let path = root.appending(key)
            if profile == .ios9 {
                report(.keyNotInProfile, at: path,
                       "\(key) does not exist on iOS 9 and has no effect under the ios9 profile;"
                       + " iOS 10 and later honour it (R12).")
            } else if value == .bool(true) {
                report(rule, at: path,
                       "\(key)=YES turns ATS off for \(what) that no NSExceptionDomains entry covers:"
                       + " cleartext HTTP and no TLS requirements for those loads (R12). Other loads keep ATS."
                       + " Prefer exception entries for the hosts concerned; App Review requires a justification.")
            }
        }
    }

    private mutating func checkLocalNetworking() {
        guard let value = source.dictionary[ATSKey.allowsLocalNetworking] else { return }
        let path = root.appending(ATSKey.allowsLocalNetworking)
        if profile == .ios9 {
            report(.keyNotInProfile, at: path,
                   "NSAllowsLocalNetworking does not exist on iOS 9 and has no effect under the ios9 profile,"
                   + " where no destination is exempt; iOS 10 and later honour it (R11, R12).")
        } else if value == .bool(true) {
            report(.localNetworking, at: path,
                   "NSAllowsLocalNetworking=YES exempts direct destinations (.local and unqualified names,"
                   + " local-network addresses) from ATS, which is also the default on iOS 10 and later (R11);"
                   + " its presence keeps ATS on for every other load, even with NSAllowsArbitraryLoads=YES (R12)."
                   + " No App Review justification is needed.")
        } else if value == .bool(false) {
            report(.localNetworkingRevoked, at: path,
                   "NSAllowsLocalNetworking=NO revokes the local exemption (R11):"
                   + " .local and unqualified names and local-network addresses get full ATS, so cleartext HTTP"
                   + " to them is blocked unless an exception entry covers them. Remove the key to keep the"
                   + " exemption, or set it to YES.")
        }
    }
}
