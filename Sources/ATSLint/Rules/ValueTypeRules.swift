import ATSPolicy
/// Values of the wrong type (R1, R3).
/// Each type is one lint rule: its id, severity, justification flag, texts and message together.
extension Lints {
    /// Boolean key with a value that is not a boolean
    struct NotABoolean: LintRuleDefinition {
        static let rule = LintRule.notABoolean
        static let severity = LintSeverity.error
        static let specRules = ["R1"]
        static let title = "Boolean key with a value that is not a boolean"
        static let summary = "Only a real plist boolean counts; any other value is ignored and the key"
            + " keeps its default."
        static let help = "Write <true/> or <false/> (true or false in JSON)."

        enum Situation: Sendable {
            /// A top-level key (R12's keys) under a profile.
            case topLevel(key: String, profile: Profile)
            /// A key of an exception entry, with its default.
            case exceptionEntry(key: String, defaultValue: String, host: String)
            /// NSIncludesSubdomains of a pinned domain.
            case pinnedIncludesSubdomains(host: String)
        }
        var situation: Situation
        /// The value as messages describe it.
        var value: PlistValue

        var message: String {
            let described = LintText.describe(value)
            switch situation {
            case .topLevel(let key, let profile):
                var message = "\(key) is \(described), not a boolean, and is ignored"
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
                return message
            case .exceptionEntry(let key, let defaultValue, let host):
                return "\(key) is \(described), not a boolean, and is ignored; the key keeps its default"
                    + " \(defaultValue) for \(host) (R1). Write <true/> or <false/>."
            case .pinnedIncludesSubdomains(let host):
                return "NSIncludesSubdomains is \(described), not a boolean, and is ignored; the key"
                    + " keeps its default NO, so the pins apply to \(host) only (R1, R17)."
                    + " Write <true/> or <false/>."
            }
        }
    }

    /// Value that must be a dictionary is not one
    struct NotADictionary: LintRuleDefinition {
        static let rule = LintRule.notADictionary
        static let severity = LintSeverity.error
        static let specRules = ["R3", "R17"]
        static let title = "Value that must be a dictionary is not one"
        static let summary = "NSExceptionDomains, NSPinnedDomains and each of their entries must be"
            + " dictionaries; anything else is ignored."
        static let help = "Make the value a dictionary."

        enum Situation: Sendable {
            case exceptionDomains
            case exceptionEntry(key: String)
            case pinnedDomains
            case pinnedEntry(key: String)
        }
        var situation: Situation
        var value: PlistValue

        var message: String {
            let described = LintText.describe(value)
            switch situation {
            case .exceptionDomains:
                return "NSExceptionDomains is \(described), not a dictionary, and is ignored: no exception"
                    + " entry applies (R3). Make it a dictionary from domain name to entry."
            case .exceptionEntry(let key):
                return "NSExceptionDomains entry \(LintText.quoted(key)) is \(described), not a dictionary, and is ignored"
                    + " (R3). Make it a dictionary of per-domain keys."
            case .pinnedDomains:
                return "NSPinnedDomains is \(described), not a dictionary, and is ignored: nothing is"
                    + " pinned (R17). Make it a dictionary from domain name to entry."
            case .pinnedEntry(let key):
                return "NSPinnedDomains entry \(LintText.quoted(key)) is \(described),"
                    + " not a dictionary, and is ignored: nothing is pinned for it (R17)."
            }
        }
    }
}
