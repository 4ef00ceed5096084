import ATSPolicy
/// Every lint rule of `atsgate lint` by its stable id (scripts and SARIF depend on it). Each rule's
/// severity, justification flag, texts and message live in its own type (Rules/, listed in `Lints.all`).
///
/// Severity rubric: `error` the policy does not do what its author wrote; `high` ATS off broadly;
/// `medium` ATS weakened for a domain or a context; `low` dead or surprising but harmless; `info` worth
/// knowing.
public enum LintRule: String, Sendable, CaseIterable {
    // Global keys (R11, R12)
    case arbitraryLoads = "arbitrary-loads"
    case arbitraryLoadsIgnored = "arbitrary-loads-ignored"
    case arbitraryLoadsForMedia = "arbitrary-loads-for-media"
    case arbitraryLoadsInWebContent = "arbitrary-loads-in-web-content"
    case localNetworking = "local-networking"
    case localNetworkingRevoked = "local-networking-revoked"
    case keyNotInProfile = "key-not-in-profile"
    // Value types (R1, R3)
    case notABoolean = "not-a-boolean"
    case notADictionary = "not-a-dictionary"
    // Exception entries (R4, R9, R10, R14)
    case insecureHTTPLoads = "insecure-http-loads"
    case weakMinimumTLSVersion = "weak-minimum-tls-version"
    case invalidMinimumTLSVersion = "invalid-minimum-tls-version"
    case forwardSecrecyDisabled = "forward-secrecy-disabled"
    case replacesBuiltin = "replaces-builtin"
    case exceptionEnforcesATS = "exception-enforces-ats"
    // Domain keys (R5, R8)
    case domainKeyEmpty = "domain-key-empty"
    case domainKeyScheme = "domain-key-scheme"
    case domainKeyPath = "domain-key-path"
    case domainKeyPort = "domain-key-port"
    case domainKeyWildcard = "domain-key-wildcard"
    case domainKeyWhitespace = "domain-key-whitespace"
    case domainKeyUppercase = "domain-key-uppercase"
    case domainKeyInvalid = "domain-key-invalid"
    case domainKeyTrailingDot = "domain-key-trailing-dot"
    case ipKeyInvalid = "ip-key-invalid"
    case ipKeyNotCanonical = "ip-key-not-canonical"
    case cidrInvalid = "cidr-invalid"
    case cidrHostBits = "cidr-host-bits"
    case duplicateIPKey = "duplicate-ip-key"
    case ipKeyUnsupported = "ip-key-unsupported"
    case ipKeyRequiresIOS17 = "ip-key-requires-ios17"
    case includesSubdomainsOnIP = "includes-subdomains-on-ip"
    // Key names (R2, R3, R16)
    case misspelledKey = "misspelled-key"
    case misplacedKey = "misplaced-key"
    case legacyKey = "legacy-key"
    case unknownKey = "unknown-key"
    case certificateTransparencyKey = "certificate-transparency-key"
    // NSPinnedDomains (R17)
    case pinnedIPKey = "pinned-ip-key"
    case pinNoIdentities = "pin-no-identities"
    case pinIdentitiesNotArray = "pin-identities-not-array"
    case pinIdentitiesEmpty = "pin-identities-empty"
    case pinIdentityInvalid = "pin-identity-invalid"
    case pinIncludesSubdomains = "pin-includes-subdomains"
    // Keys written more than once (the text of the file)
    case duplicateKey = "duplicate-key"
    case duplicateKeySameValue = "duplicate-key-same-value"

    /// The stable id.
    public var id: String { rawValue }
    public var severity: LintSeverity { definition.severity }
    /// App Review asks for a justification of the key this rule reports.
    public var justification: Bool { definition.justification }
    /// One line: what the rule reports.
    public var title: String { definition.title }
    /// What happens at run time, for SARIF's full description.
    public var summary: String { definition.summary }
    /// What to do about it.
    public var help: String { definition.help }
    /// The ATS-SPEC rules behind it.
    public var specRules: [String] { definition.specRules }

    /// The rule's type (Rules/), where its texts and messages live.
    var definition: any LintRuleDefinition.Type {
        guard let definition = Lints.byRule[self] else {
            preconditionFailure("lint rule \(rawValue) has no type in Lints.all")
        }
        return definition
    }
}
