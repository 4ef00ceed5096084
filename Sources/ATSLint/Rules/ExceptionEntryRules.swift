import ATSPolicy
/// What an NSExceptionDomains entry weakens or changes (R4, R9, R10, R14).
/// Each type is one lint rule: its id, severity, justification flag, texts and message together.
extension Lints {
    /// NSExceptionAllowsInsecureHTTPLoads=YES allows cleartext HTTP
    struct InsecureHTTPLoads: LintRuleDefinition {
        static let rule = LintRule.insecureHTTPLoads
        static let severity = LintSeverity.medium
        static let justification = true
        static let specRules = ["R10"]
        static let title = "NSExceptionAllowsInsecureHTTPLoads=YES allows cleartext HTTP"
        static let summary = "The domain may be loaded over cleartext HTTP and its certificates are not checked."
        static let help = "Serve the domain over HTTPS and remove the key. App Review requires a justification."

        /// The entry's key, quoted.
        var host: String
        var includesSubdomains: Bool

        var message: String {
            "NSExceptionAllowsInsecureHTTPLoads=YES allows cleartext HTTP to \(host)"
                + "\(includesSubdomains ? " and its subdomains" : "")"
                + " and turns off its certificate checks (R10, R15). Serve it over HTTPS and remove the key;"
                + " App Review requires a justification."
        }
    }

    /// NSExceptionMinimumTLSVersion below TLSv1.2
    struct WeakMinimumTLSVersion: LintRuleDefinition {
        static let rule = LintRule.weakMinimumTLSVersion
        static let severity = LintSeverity.medium
        static let justification = true
        static let specRules = ["R4", "R10"]
        static let title = "NSExceptionMinimumTLSVersion below TLSv1.2"
        static let summary = "Connections to the domain may use TLS 1.0 or 1.1."
        static let help = "Upgrade the server to TLS 1.2 or later and remove the key. App Review requires a"
            + " justification."

        var version: TLSVersion
        var host: String

        var message: String {
            "NSExceptionMinimumTLSVersion \(version.rawValue) lets connections to \(host) use TLS versions"
                + " below TLSv1.2 (R4, R10). Upgrade the server to TLS 1.2 or later and remove the key;"
                + " App Review requires a justification."
        }
    }

    /// NSExceptionMinimumTLSVersion value is not recognised
    struct InvalidMinimumTLSVersion: LintRuleDefinition {
        static let rule = LintRule.invalidMinimumTLSVersion
        static let severity = LintSeverity.error
        static let specRules = ["R4"]
        static let title = "NSExceptionMinimumTLSVersion value is not recognised"
        static let summary = "Only the strings TLSv1.0, TLSv1.1, TLSv1.2 and TLSv1.3 are read"
            + " (case-sensitive); anything else falls back to TLSv1.2."
        static let help = "Write one of TLSv1.0, TLSv1.1, TLSv1.2, TLSv1.3."

        var value: PlistValue
        var host: String
        /// The version the value most likely means.
        var suggestion: TLSVersion?

        var message: String {
            var message = "NSExceptionMinimumTLSVersion is \(LintText.describe(value)), not one of TLSv1.0, TLSv1.1,"
                + " TLSv1.2, TLSv1.3 (case-sensitive strings), so it is ignored and the minimum for \(host) stays"
                + " TLSv1.2 (R4)."
            if let suggestion { message += " Write \"\(suggestion.rawValue)\"." }
            return message
        }
    }

    /// NSExceptionRequiresForwardSecrecy=NO
    struct ForwardSecrecyDisabled: LintRuleDefinition {
        static let rule = LintRule.forwardSecrecyDisabled
        static let severity = LintSeverity.medium
        static let specRules = ["R14"]
        static let title = "NSExceptionRequiresForwardSecrecy=NO"
        static let summary = "Connections to the domain may use RSA key exchange without forward secrecy"
            + " (TLS 1.2 and below)."
        static let help = "Enable ECDHE cipher suites on the server and remove the key (absent means YES)."

        var host: String

        var message: String {
            "NSExceptionRequiresForwardSecrecy=NO lets connections to \(host) use RSA key exchange without"
                + " forward secrecy in TLS 1.2 and below (R14). Enable ECDHE cipher suites on the server and"
                + " remove the key (absent means YES). No App Review justification is needed."
        }
    }

    /// Entry replaces a built-in exception
    struct ReplacesBuiltin: LintRuleDefinition {
        static let rule = LintRule.replacesBuiltin
        static let severity = LintSeverity.info
        static let specRules = ["R9"]
        static let title = "Entry replaces a built-in exception"
        static let summary = "An app entry with the key of a built-in exception replaces the built-in entirely."
        static let help = "Check that the entry keeps what the app's Apple services need"
            + " (NSIncludesSubdomains in particular)."

        var builtin: ExceptionEntry
        /// The app's entry as the engine reads it.
        var entry: ExceptionEntry?

        var message: String {
            let key = LintText.quoted(builtin.key)
            var message = "The app's entry \(key) replaces the built-in exception for \(builtin.key) entirely (R9):"
                + " the built-in allows cleartext HTTP and \(builtin.minimumTLSVersion.rawValue) without forward secrecy"
                + " for \(builtin.key) and its subdomains; this entry's own keys now decide."
            if let entry, !entry.includesSubdomains {
                message += " It does not set NSIncludesSubdomains=YES, so subdomains such as www.\(builtin.key) fall"
                    + " back to the global rules."
            }
            return message
        }
    }

    /// Exception entry re-enables ATS for its host
    struct ExceptionEnforcesATS: LintRuleDefinition {
        static let rule = LintRule.exceptionEnforcesATS
        static let severity = LintSeverity.info
        static let specRules = ["R10"]
        static let title = "Exception entry re-enables ATS for its host"
        static let summary = "An entry alone decides for its host, so an entry that does not allow"
            + " cleartext brings ATS back for a host that would otherwise be exempt or"
            + " covered by arbitrary loads."
        static let help = "Add NSExceptionAllowsInsecureHTTPLoads=YES to the entry if the host should stay"
            + " exempt; otherwise nothing to do."

        /// What would allow cleartext without the entry ("NSAllowsArbitraryLoads=YES turns ATS off for x").
        var relaxation: String
        /// The rule behind the relaxation (R7, R8, R9, R11, R12).
        var relaxationRule: String
        /// " (media loads)" when not every context is relaxed, else "".
        var contexts: String
        var host: Host
        /// What HTTPS needs under the entry.
        var requirementsSummary: String

        var message: String {
            "Without this entry \(relaxation)\(contexts) (\(relaxationRule)); the entry alone decides for"
                + " \(host) (R10) and brings ATS back: cleartext HTTP is blocked and HTTPS needs"
                + " \(requirementsSummary). Add NSExceptionAllowsInsecureHTTPLoads=YES to the entry if"
                + " \(host) should stay as it was."
        }
    }
}
