import ATSPolicy
/// The top-level keys (R11, R12) and keys a profile does not honour.
/// Each type is one lint rule: its id, severity, justification flag, texts and message together.
extension Lints {
    /// NSAllowsArbitraryLoads=YES turns ATS off
    struct ArbitraryLoads: LintRuleDefinition {
        static let rule = LintRule.arbitraryLoads
        static let severity = LintSeverity.high
        static let justification = true
        static let specRules = ["R12", "R13"]
        static let title = "NSAllowsArbitraryLoads=YES turns ATS off"
        static let summary = "Every load that no exception entry covers may use cleartext HTTP, any TLS"
            + " version and no certificate checks."
        static let help = "Remove NSAllowsArbitraryLoads and add NSExceptionDomains entries for the hosts"
            + " that need an exception. App Review requires a justification."

        var message: String {
            "NSAllowsArbitraryLoads=YES turns ATS off for every load that no NSExceptionDomains entry covers:"
                + " cleartext HTTP, any TLS version and no certificate checks beyond the client's own (R12, R13)."
                + " Remove it and add NSExceptionDomains entries for the hosts that need an exception;"
                + " App Review requires a justification."
        }
    }

    /// NSAllowsArbitraryLoads=YES is ignored
    struct ArbitraryLoadsIgnored: LintRuleDefinition {
        static let rule = LintRule.arbitraryLoadsIgnored
        static let severity = LintSeverity.error
        static let justification = true
        static let specRules = ["R12"]
        static let title = "NSAllowsArbitraryLoads=YES is ignored"
        static let summary = "On iOS 10 and later NSAllowsArbitraryLoads is ignored when"
            + " NSAllowsLocalNetworking, NSAllowsArbitraryLoadsForMedia or"
            + " NSAllowsArbitraryLoadsInWebContent is present; only iOS 9 honours it."
        static let help = "Remove NSAllowsArbitraryLoads if the app supports iOS 10 and later only, or"
            + " remove the key that overrides it if ATS should be off. App Review still asks"
            + " for a justification while it is YES."

        /// The keys present that override it (R12).
        var overriding: [String]

        var message: String {
            let keys = LintText.list(overriding)
            return "NSAllowsArbitraryLoads=YES is ignored on iOS 10 and later because \(keys)"
                + " \(overriding.count == 1 ? "is" : "are") present (R12): ATS stays on for every load that"
                + " no exception entry or \(overriding.count == 1 ? "that key" : "those keys") cover; only iOS 9"
                + " honours it. Remove NSAllowsArbitraryLoads, or remove \(keys) if ATS should be off;"
                + " App Review still asks for a justification while it is YES."
        }
    }

    /// NSAllowsArbitraryLoadsForMedia=YES turns ATS off for media
    struct ArbitraryLoadsForMedia: LintRuleDefinition {
        static let rule = LintRule.arbitraryLoadsForMedia
        static let severity = LintSeverity.medium
        static let justification = true
        static let specRules = ["R12"]
        static let title = "NSAllowsArbitraryLoadsForMedia=YES turns ATS off for media"
        static let summary = "AVFoundation loads that no exception entry covers may use cleartext HTTP and"
            + " weak TLS."
        static let help = "Prefer NSExceptionDomains entries for the media hosts. App Review requires a"
            + " justification."

        static let key = ATSKey.allowsArbitraryLoadsForMedia
        static let what = "media loads (AVFoundation)"

        var message: String {
            "\(Self.key)=YES turns ATS off for \(Self.what) that no NSExceptionDomains entry covers:"
                + " cleartext HTTP and no TLS requirements for those loads (R12). Other loads keep ATS."
                + " Prefer exception entries for the hosts concerned; App Review requires a justification."
        }
    }

    /// NSAllowsArbitraryLoadsInWebContent=YES turns ATS off for web content
    struct ArbitraryLoadsInWebContent: LintRuleDefinition {
        static let rule = LintRule.arbitraryLoadsInWebContent
        static let severity = LintSeverity.medium
        static let justification = true
        static let specRules = ["R12"]
        static let title = "NSAllowsArbitraryLoadsInWebContent=YES turns ATS off for web content"
        static let summary = "WKWebView loads that no exception entry covers may use cleartext HTTP and weak TLS."
        static let help = "Keep it only for a general-purpose browser. App Review requires a justification."

        static let key = ATSKey.allowsArbitraryLoadsInWebContent
        static let what = "web content (WKWebView)"

        var message: String {
            "\(Self.key)=YES turns ATS off for \(Self.what) that no NSExceptionDomains entry covers:"
                + " cleartext HTTP and no TLS requirements for those loads (R12). Other loads keep ATS."
                + " Prefer exception entries for the hosts concerned; App Review requires a justification."
        }
    }

    /// NSAllowsLocalNetworking=YES exempts local destinations
    struct LocalNetworking: LintRuleDefinition {
        static let rule = LintRule.localNetworking
        static let severity = LintSeverity.info
        static let specRules = ["R11", "R12"]
        static let title = "NSAllowsLocalNetworking=YES exempts local destinations"
        static let summary = "Local and unqualified names and local-network addresses are exempt from ATS"
            + " (the default on iOS 10 and later); the key's presence keeps ATS on for"
            + " everything else."
        static let help = "Nothing to do; no justification is needed."

        var message: String {
            "NSAllowsLocalNetworking=YES exempts direct destinations (.local and unqualified names,"
                + " local-network addresses) from ATS, which is also the default on iOS 10 and later (R11);"
                + " its presence keeps ATS on for every other load, even with NSAllowsArbitraryLoads=YES (R12)."
                + " No App Review justification is needed."
        }
    }

    /// NSAllowsLocalNetworking present and not YES revokes the local exemption
    struct LocalNetworkingRevoked: LintRuleDefinition {
        static let rule = LintRule.localNetworkingRevoked
        static let severity = LintSeverity.low
        static let specRules = ["R11"]
        static let title = "NSAllowsLocalNetworking present and not YES revokes the local exemption"
        static let summary = "Local destinations get full ATS, so cleartext HTTP to printers, .local hosts"
            + " and local-network addresses is blocked unless an exception entry covers"
            + " them."
        static let help = "Remove the key to keep the local exemption, or set it to YES."

        var message: String {
            "NSAllowsLocalNetworking=NO revokes the local exemption (R11):"
                + " .local and unqualified names and local-network addresses get full ATS, so cleartext HTTP"
                + " to them is blocked unless an exception entry covers them. Remove the key to keep the"
                + " exemption, or set it to YES."
        }
    }

    /// Key not honoured by the selected profile
    struct KeyNotInProfile: LintRuleDefinition {
        static let rule = LintRule.keyNotInProfile
        static let severity = LintSeverity.info
        static let specRules = ["R12", "R17"]
        static let title = "Key not honoured by the selected profile"
        static let summary = "The key does not exist on the OS generation of the profile and has no effect there."
        static let help = "Nothing to do if the app also targets later OS versions."

        enum Situation: Sendable {
            /// NSPinnedDomains under the ios9 profile.
            case pinnedDomains
            /// NSAllowsArbitraryLoadsForMedia or ...InWebContent under ios9.
            case contextKey(String)
            /// NSAllowsLocalNetworking under ios9.
            case localNetworking
        }
        var situation: Situation

        var message: String {
            switch situation {
            case .pinnedDomains:
                return "NSPinnedDomains is honoured from iOS 14; under the ios9 profile it has no effect (R17)."
            case .contextKey(let key):
                return "\(key) does not exist on iOS 9 and has no effect under the ios9 profile;"
                    + " iOS 10 and later honour it (R12)."
            case .localNetworking:
                return "NSAllowsLocalNetworking does not exist on iOS 9 and has no effect under the ios9 profile,"
                    + " where no destination is exempt; iOS 10 and later honour it (R11, R12)."
            }
        }
    }
}
