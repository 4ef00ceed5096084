import ATSPolicy
/// Domain keys that never match, or match only from iOS 17 (R5, R8).
/// Each type is one lint rule: its id, severity, justification flag, texts and message together.
extension Lints {
    /// Empty domain key
    struct DomainKeyEmpty: LintRuleDefinition {
        static let rule = LintRule.domainKeyEmpty
        static let severity = LintSeverity.error
        static let specRules = ["R5"]
        static let title = "Empty domain key"
        static let summary = "An empty key never matches any host."
        static let help = "Write the domain name or remove the entry."

        var table: DomainTable

        var message: String {
            "An empty \(table.name) key never matches any host (R5). Write the domain name or remove the entry."
        }
    }

    /// Domain key with a scheme
    struct DomainKeyScheme: NeverMatchingKeyRule {
        static let rule = LintRule.domainKeyScheme
        static let severity = LintSeverity.error
        static let specRules = ["R5"]
        static let title = "Domain key with a scheme"
        static let summary = "Keys are exact host names; a key with a scheme never matches."
        static let help = "Remove the scheme (https://)."

        var key: NeverMatchingNameKey
    }

    /// Domain key with a path
    struct DomainKeyPath: NeverMatchingKeyRule {
        static let rule = LintRule.domainKeyPath
        static let severity = LintSeverity.error
        static let specRules = ["R5"]
        static let title = "Domain key with a path"
        static let summary = "Keys are exact host names; a key with a path never matches."
        static let help = "Remove the path; exceptions apply to the whole host."

        var key: NeverMatchingNameKey
    }

    /// Domain key with a port
    struct DomainKeyPort: NeverMatchingKeyRule {
        static let rule = LintRule.domainKeyPort
        static let severity = LintSeverity.error
        static let specRules = ["R5"]
        static let title = "Domain key with a port"
        static let summary = "Keys are exact host names; a key with a port never matches."
        static let help = "Remove the port; exceptions apply to every port of the host."

        var key: NeverMatchingNameKey
    }

    /// Domain key with a wildcard
    struct DomainKeyWildcard: NeverMatchingKeyRule {
        static let rule = LintRule.domainKeyWildcard
        static let severity = LintSeverity.error
        static let specRules = ["R5", "R7"]
        static let title = "Domain key with a wildcard"
        static let summary = "Keys are exact host names; wildcards are not expanded, so the key never matches."
        static let help = "Use the parent domain as the key with NSIncludesSubdomains=YES."

        var key: NeverMatchingNameKey
    }

    /// Domain key with white space
    struct DomainKeyWhitespace: NeverMatchingKeyRule {
        static let rule = LintRule.domainKeyWhitespace
        static let severity = LintSeverity.error
        static let specRules = ["R5"]
        static let title = "Domain key with white space"
        static let summary = "Keys are exact host names; a key with white space never matches."
        static let help = "Remove the white space."

        var key: NeverMatchingNameKey
    }

    /// Domain key with uppercase letters
    struct DomainKeyUppercase: NeverMatchingKeyRule {
        static let rule = LintRule.domainKeyUppercase
        static let severity = LintSeverity.error
        static let specRules = ["R5"]
        static let title = "Domain key with uppercase letters"
        static let summary = "Hosts are lowercased before the lookup and keys compared exactly, so a key"
            + " with uppercase letters never matches."
        static let help = "Write the key in lowercase."

        var key: NeverMatchingNameKey
    }

    /// Domain key that is not a host name
    struct DomainKeyInvalid: NeverMatchingKeyRule {
        static let rule = LintRule.domainKeyInvalid
        static let severity = LintSeverity.error
        static let specRules = ["R5"]
        static let title = "Domain key that is not a host name"
        static let summary = "The key has characters or labels no host name has, so it never matches."
        static let help = "Write the host name (IDNA xn-- form for non-ASCII names)."

        var key: NeverMatchingNameKey
    }

    /// Domain key with a trailing dot
    struct DomainKeyTrailingDot: LintRuleDefinition {
        static let rule = LintRule.domainKeyTrailingDot
        static let severity = LintSeverity.low
        static let specRules = ["R5"]
        static let title = "Domain key with a trailing dot"
        static let summary = "The trailing dot is significant: the key matches only hosts spelled with the dot."
        static let help = "Remove the trailing dot unless clients use the dotted spelling."

        enum Situation: Sendable {
            /// The dot is the key's only problem: it matches, but only the dotted spelling.
            case onlyProblem(label: String, key: String, fixed: String)
            /// The first of several problems of a key that never matches.
            case neverMatches(NeverMatchingNameKey)
        }
        var situation: Situation

        var message: String {
            switch situation {
            case .onlyProblem(let label, let key, let fixed):
                return "\(label) ends with a dot, which is significant: it matches only hosts spelled"
                    + " \(LintText.quoted(key)) with the dot, not \(LintText.quoted(fixed)) (R5)."
                    + " Write \(LintText.quoted(fixed)) unless clients use the dotted spelling."
            case .neverMatches(let key):
                return key.text
            }
        }
    }

    /// Key that looks like an IP address but is not one
    struct IPKeyInvalid: LintRuleDefinition {
        static let rule = LintRule.ipKeyInvalid
        static let severity = LintSeverity.error
        static let specRules = ["R8"]
        static let title = "Key that looks like an IP address but is not one"
        static let summary = "IP keys are read strictly (four decimal octets without leading zeros, or IPv6"
            + " text); anything else never matches."
        static let help = "Write the address in canonical form."

        var label: String
        var key: String
        /// `010.0.0.1` read as decimal octets.
        var decimal: String?
        /// What a resolver reads the key as.
        var resolved: IPAddress?

        var message: String {
            var message = "\(label) looks like an IP address but is not one as keys are read (four decimal octets"
                + " 0-255 without leading zeros, or IPv6 text), so the entry never matches (R8)."
            if let fix = decimal ?? resolved?.description { message += " Write '\(fix)'." }
            if let resolved, let decimal, resolved.description != decimal {
                message += " Note that a resolver reads \(LintText.quoted(key)) as \(resolved)."
            }
            return message
        }
    }

    /// IP key not in canonical form
    struct IPKeyNotCanonical: LintRuleDefinition {
        static let rule = LintRule.ipKeyNotCanonical
        static let severity = LintSeverity.error
        static let specRules = ["R5", "R8"]
        static let title = "IP key not in canonical form"
        static let summary = "Exact IP keys are compared as canonical text; another spelling of the address"
            + " never matches."
        static let help = "Write the address as atsgate check prints it: dotted quad, or RFC 5952 IPv6."

        var label: String
        var address: IPAddress

        var message: String {
            "\(label) is not in canonical form: an exact IP key is compared as text with the host's"
                + " canonical form (lowercase, RFC 5952 for IPv6, dotted quad for IPv4-mapped addresses),"
                + " so the entry never matches (R5, R8). Write '\(address)'."
        }
    }

    /// Invalid CIDR key
    struct CIDRInvalid: LintRuleDefinition {
        static let rule = LintRule.cidrInvalid
        static let severity = LintSeverity.error
        static let specRules = ["R8"]
        static let title = "Invalid CIDR key"
        static let summary = "The address or the prefix length of the CIDR key is invalid, so the entry"
            + " never matches."
        static let help = "Write ADDRESS/LENGTH with a valid address and a length of 0-32 (IPv4) or 0-128 (IPv6)."

        var label: String
        /// What does not parse (DomainKeyText.cidrProblem).
        var problem: String

        var message: String {
            "\(label) is not a valid CIDR key: \(problem), so the entry never"
                + " matches (R8). Write ADDRESS/LENGTH, e.g. '10.0.0.0/8'."
        }
    }

    /// CIDR key with host bits set
    struct CIDRHostBits: LintRuleDefinition {
        static let rule = LintRule.cidrHostBits
        static let severity = LintSeverity.low
        static let specRules = ["R8"]
        static let title = "CIDR key with host bits set"
        static let summary = "The bits after the prefix are ignored, so the key means a larger network than"
            + " its text suggests."
        static let help = "Write the network address."

        var label: String
        var network: IPNetwork

        var message: String {
            "\(label) has host bits set: it is read as \(network) (R8). Write '\(network)'"
                + " so that the key says what it matches."
        }
    }

    /// Two keys for the same address or network
    struct DuplicateIPKey: LintRuleDefinition {
        static let rule = LintRule.duplicateIPKey
        static let severity = LintSeverity.error
        static let specRules = ["R8"]
        static let title = "Two keys for the same address or network"
        static let summary = "Two spellings of one network compete; only one entry can apply, and the OS"
            + " does not define which."
        static let help = "Keep one entry."

        var key: String
        var others: [String]
        /// The canonical address or network both keys name.
        var canonical: String
        /// The key that wins (ExceptionTable.preferredKey).
        var winner: String

        var message: String {
            let what = canonical.contains("/") ? "network" : "address"
            let outcome = key == winner
                ? "this entry applies and the other is dead"
                : "only \(LintText.quoted(winner)) applies, so this entry is dead"
            return "\(LintText.quoted(key)) and \(LintText.list(others.map(LintText.quoted))) name the same \(what) \(canonical);"
                + " \(outcome) (atsgate prefers the key written in canonical form, then the first in sort"
                + " order; the OS does not define which) (R8). Keep one."
        }
    }

    /// IP or CIDR key under a profile before iOS 17
    struct IPKeyUnsupported: LintRuleDefinition {
        static let rule = LintRule.ipKeyUnsupported
        static let severity = LintSeverity.error
        static let specRules = ["R8"]
        static let title = "IP or CIDR key under a profile before iOS 17"
        static let summary = "IP and CIDR keys are honoured only with the iOS 17 SDK; before that they"
            + " never match."
        static let help = "Use the ios17 profile if the app is built with the iOS 17 SDK, or use host names."

        var label: String
        /// "a CIDR key" or "an IP address key".
        var what: String
        var profile: Profile

        var message: String {
            "\(label) is \(what), which only the iOS 17 SDK honours: under the \(profile.rawValue) profile"
                + " the entry never matches (R8). Use host names, or lint with --profile ios17 if the app is"
                + " built with the iOS 17 SDK."
        }
    }

    /// IP or CIDR key honoured from iOS 17
    struct IPKeyRequiresIOS17: LintRuleDefinition {
        static let rule = LintRule.ipKeyRequiresIOS17
        static let severity = LintSeverity.info
        static let specRules = ["R8"]
        static let title = "IP or CIDR key honoured from iOS 17"
        static let summary = "IP and CIDR keys work with the iOS 17 SDK; older OS versions ignore them."
        static let help = "Nothing to do if the app requires iOS 17 or later."

        var label: String
        var what: String

        var message: String {
            "\(label) is \(what): it works with the iOS 17 SDK (profile ios17), but older OS versions"
                + " ignore it (R8)."
        }
    }

    /// NSIncludesSubdomains on an IP or CIDR key
    struct IncludesSubdomainsOnIP: LintRuleDefinition {
        static let rule = LintRule.includesSubdomainsOnIP
        static let severity = LintSeverity.low
        static let specRules = ["R8"]
        static let title = "NSIncludesSubdomains on an IP or CIDR key"
        static let summary = "Addresses have no subdomains; the key has no effect."
        static let help = "Remove NSIncludesSubdomains; use a CIDR key to cover a range."

        var value: PlistValue
        var host: String

        var message: String {
            "NSIncludesSubdomains (\(LintText.bounded(value.shortDescription))) has no effect on the IP key"
                + " \(host): addresses have no subdomains (R8). Remove it; a CIDR key covers a range."
        }
    }
}
