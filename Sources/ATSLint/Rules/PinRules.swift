import ATSPolicy
/// NSPinnedDomains entries and identities (R17).
/// Each type is one lint rule: its id, severity, justification flag, texts and message together.
extension Lints {
    /// NSPinnedDomains key that is an IP address
    struct PinnedIPKey: LintRuleDefinition {
        static let rule = LintRule.pinnedIPKey
        static let severity = LintSeverity.error
        static let specRules = ["R17"]
        static let title = "NSPinnedDomains key that is an IP address"
        static let summary = "Pins apply to domain names only; an IP or CIDR key never matches."
        static let help = "Pin the domain name the app connects to."

        var label: String

        var message: String {
            "\(label) is an IP address; NSPinnedDomains applies to domain names only, so the entry never"
                + " matches (R17). Pin the domain name the app connects to."
        }
    }

    /// Pinned domain without identities
    struct PinNoIdentities: LintRuleDefinition {
        static let rule = LintRule.pinNoIdentities
        static let severity = LintSeverity.error
        static let specRules = ["R17"]
        static let title = "Pinned domain without identities"
        static let summary = "An entry with neither NSPinnedCAIdentities nor NSPinnedLeafIdentities pins nothing."
        static let help = "Add an identity array, or remove the entry."

        var host: String

        var message: String {
            "NSPinnedDomains entry \(host) has neither NSPinnedCAIdentities nor NSPinnedLeafIdentities, so"
                + " it pins nothing (R17). Add an identity array, or remove the entry."
        }
    }

    /// Identity list that is not an array
    struct PinIdentitiesNotArray: LintRuleDefinition {
        static let rule = LintRule.pinIdentitiesNotArray
        static let severity = LintSeverity.error
        static let specRules = ["R17"]
        static let title = "Identity list that is not an array"
        static let summary = "NSPinnedCAIdentities and NSPinnedLeafIdentities must be arrays; anything else"
            + " is ignored."
        static let help = "Make it an array of dictionaries with SPKI-SHA256-BASE64."

        var name: String
        var host: String
        var value: PlistValue

        var message: String {
            "\(name) of \(host) is \(LintText.describe(value)), not an array, and is ignored (R17). Make it"
                + " an array of dictionaries with \(ATSKey.spkiSHA256)."
        }
    }

    /// Identity array with no valid identity
    struct PinIdentitiesEmpty: LintRuleDefinition {
        static let rule = LintRule.pinIdentitiesEmpty
        static let severity = LintSeverity.error
        static let specRules = ["R17"]
        static let title = "Identity array with no valid identity"
        static let summary = "No certificate can match an empty identity array, so connections to the"
            + " domain fail the pin check."
        static let help = "Add the base64 SHA-256 digest of the pinned SubjectPublicKeyInfo."

        var name: String
        var host: String
        /// The array is empty (else none of its identities is valid).
        var isEmpty: Bool

        var message: String {
            let what = isEmpty ? "is empty" : "has no valid identity"
            return "\(name) of \(host) \(what), so no certificate can match it and connections to \(host) fail the"
                + " pin check (R17). Add the base64 SHA-256 digest of the pinned SubjectPublicKeyInfo."
        }
    }

    /// Invalid pinned identity
    struct PinIdentityInvalid: LintRuleDefinition {
        static let rule = LintRule.pinIdentityInvalid
        static let severity = LintSeverity.error
        static let specRules = ["R17"]
        static let title = "Invalid pinned identity"
        static let summary = "Each identity must be a dictionary whose SPKI-SHA256-BASE64 is the base64"
            + " text of a 32-byte SHA-256 digest; others are ignored."
        static let help = "Write the base64 SHA-256 digest of the SubjectPublicKeyInfo (44 characters)."

        enum Problem: Sendable {
            case notADictionary(PlistValue)
            case noDigest
            case notAString(PlistValue)
            /// `whiteSpace`: the text is valid base64 once white space is removed.
            case notBase64(whiteSpace: Bool)
            case wrongLength(Int)
        }
        /// "NSPinnedLeafIdentities[0] of 'example.com'".
        var element: String
        var problem: Problem

        var message: String {
            let digest = ATSKey.spkiSHA256
            switch problem {
            case .notADictionary(let item):
                return "\(element) is \(LintText.describe(item)), not a dictionary with \(digest), and is"
                    + " ignored (R17)."
            case .noDigest:
                return "\(element) has no \(digest) key, so it is ignored (R17)."
            case .notAString(let value):
                return "\(digest) of \(element) is \(LintText.describe(value)), not a base64 string, so the"
                    + " identity is ignored (R17). Write the digest as base64 text."
            case .notBase64(let whiteSpace):
                return "\(digest) of \(element) is not valid base64, so the identity is ignored (R17)."
                    + (whiteSpace ? " Remove the white space." : "")
            case .wrongLength(let count):
                return "\(digest) of \(element) decodes to \(count) bytes; a SHA-256 digest is 32 bytes"
                    + " (44 base64 characters), so the identity is ignored (R17)."
            }
        }
    }

    /// NSIncludesSubdomains in a pinned domain covers one level
    struct PinIncludesSubdomains: LintRuleDefinition {
        static let rule = LintRule.pinIncludesSubdomains
        static let severity = LintSeverity.info
        static let specRules = ["R17"]
        static let title = "NSIncludesSubdomains in a pinned domain covers one level"
        static let summary = "A pin entry with NSIncludesSubdomains applies to the domain's immediate"
            + " subdomains only."
        static let help = "Add entries for deeper subdomains that need the pins."

        var host: String
        var key: String

        var message: String {
            "NSIncludesSubdomains=YES extends the pins of \(host) to its immediate subdomains only"
                + " (a.\(LintText.bounded(key)), not a.b.\(LintText.bounded(key))) (R17). Add entries for"
                + " deeper subdomains that need the pins."
        }
    }
}
