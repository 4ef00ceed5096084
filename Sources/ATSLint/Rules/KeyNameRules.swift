import ATSPolicy
/// Keys the engine does not read where they sit (R2, R3, R16).
/// Each type is one lint rule: its id, severity, justification flag, texts and message together.
extension Lints {
    /// Misspelled key
    struct MisspelledKey: LintRuleDefinition {
        static let rule = LintRule.misspelledKey
        static let severity = LintSeverity.error
        static let specRules = ["R2", "R3"]
        static let title = "Misspelled key"
        static let summary = "The key is not an ATS key and is ignored; it looks like a known key."
        static let help = "Use the suggested key."

        enum Situation: Sendable {
            /// A key of the dictionary close to a known one.
            case key(name: String, ignored: String, specRule: String, suggestion: String, belongs: String?)
            /// An Info.plist key close to NSAppTransportSecurity.
            case infoPlist(key: String)
        }
        var situation: Situation

        var message: String {
            switch situation {
            case .key(let name, let ignored, let specRule, let suggestion, let belongs):
                var message = "\(name) is not an ATS key and \(ignored) (\(specRule)). Did you mean \(suggestion)?"
                if let belongs { message += " It belongs \(belongs)." }
                return message
            case .infoPlist(let key):
                return "Info.plist key \(LintText.quoted(key)) is not NSAppTransportSecurity, so the OS never reads"
                    + " this dictionary and the app gets full ATS (R2). Did you mean 'NSAppTransportSecurity'?"
            }
        }
    }

    /// Key at the wrong level
    struct MisplacedKey: LintRuleDefinition {
        static let rule = LintRule.misplacedKey
        static let severity = LintSeverity.error
        static let specRules = ["R2", "R3"]
        static let title = "Key at the wrong level"
        static let summary = "The key belongs to another level of the dictionary and is ignored where it is."
        static let help = "Move it where it belongs."

        enum Situation: Sendable {
            /// A known key at a level where it is not read.
            case elsewhere(key: String, belongs: String, ignored: String, specRule: String)
            /// A dictionary named like a domain at the top level.
            case domainEntryAtTopLevel(name: String)
            /// An ATS key written directly inside NSExceptionDomains or NSPinnedDomains.
            case keyAsDomain(key: String, table: DomainTable, meant: String, belongs: String?)
        }
        var situation: Situation

        var message: String {
            switch situation {
            case .elsewhere(let key, let belongs, let ignored, let specRule):
                return "\(key) belongs \(belongs) and \(ignored) (\(specRule)). Move it there."
            case .domainEntryAtTopLevel(let name):
                return "\(name) looks like a domain entry, but domain entries belong inside NSExceptionDomains (or"
                    + " NSPinnedDomains); at the top level it is ignored (R2). Move it there."
            case .keyAsDomain(let key, let table, let meant, let belongs):
                var message = "\(LintText.quoted(key)) sits directly inside \(table.name), where it is read as a domain name"
                    + " and never matches (R5)."
                if meant != key { message += " Did you mean \(meant)?" }
                if let belongs { message += " \(meant) belongs \(belongs)." }
                return message
            }
        }
    }

    /// Legacy exception key
    struct LegacyKey: LintRuleDefinition {
        static let rule = LintRule.legacyKey
        static let severity = LintSeverity.error
        static let specRules = ["R2"]
        static let title = "Legacy exception key"
        static let summary = "NSTemporaryException* and NSThirdPartyException* keys are not honoured."
        static let help = "Use the NSException* key of the same name."

        var key: String
        /// "is ignored in an NSExceptionDomains entry".
        var ignored: String
        var replacement: String
        /// The key is a known legacy name (not only close to one).
        var isLegacyName: Bool
        /// The key sits in an exception entry (else the replacement goes into one).
        var inExceptionEntry: Bool

        var message: String {
            var message = isLegacyName
                ? "\(key) is a legacy key that current OS versions do not honour, so it \(ignored) (R2)."
                : "\(LintText.quoted(key)) is not an ATS key and \(ignored); it looks like a legacy key, which is not honoured"
                    + " either (R2)."
            message += " Use \(replacement)"
            message += inExceptionEntry ? " instead." : " inside an NSExceptionDomains entry instead."
            return message
        }
    }

    /// Unknown key
    struct UnknownKey: LintRuleDefinition {
        static let rule = LintRule.unknownKey
        static let severity = LintSeverity.medium
        static let specRules = ["R2", "R3"]
        static let title = "Unknown key"
        static let summary = "The key is not an ATS key and is ignored."
        static let help = "Remove it, or use the ATS key you meant."

        var name: String
        var ignored: String
        var specRule: String
        /// The keys read at that level.
        var knownKeys: [String]

        var message: String {
            "\(name) is not an ATS key and \(ignored) (\(specRule)). The keys read there are "
                + LintText.list(knownKeys) + "."
        }
    }

    /// Obsolete NSRequiresCertificateTransparency
    struct CertificateTransparencyKey: LintRuleDefinition {
        static let rule = LintRule.certificateTransparencyKey
        static let severity = LintSeverity.low
        static let specRules = ["R16"]
        static let title = "Obsolete NSRequiresCertificateTransparency"
        static let summary = "Certificate Transparency is no longer an ATS key; the system enforces it for"
            + " publicly trusted certificates."
        static let help = "Remove the key."

        var name: String
        var ignored: String

        var message: String {
            "\(name) is not an ATS key any more and \(ignored) (R16): the system enforces Certificate"
                + " Transparency for publicly trusted certificates issued after 2018-10-15. Remove it."
        }
    }
}
