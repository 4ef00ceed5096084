/// Every lint rule of `atsgate lint`, in one table: the stable id (scripts and SARIF depend on it), the
/// severity, whether App Review asks for a justification, and the texts SARIF shows.
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

    /// The stable id.
    public var id: String { rawValue }
    public var severity: LintSeverity { metadata.severity }
    /// App Review asks for a justification of the key this rule reports.
    public var justification: Bool { metadata.justification }
    /// One line: what the rule reports.
    public var title: String { metadata.title }
    /// What happens at run time, for SARIF's full description.
    public var summary: String { metadata.summary }
    /// What to do about it.
    public var help: String { metadata.help }
    /// The ATS-SPEC rules behind it.
    public var specRules: [String] { metadata.specRules }

    struct Metadata {
        var severity: LintSeverity
        var justification = false
        var specRules: [String]
        var title: String
        var summary: String
        var help: String
    }

    // The table. Keep the wording in step with the messages the checks build.
    var metadata: Metadata {
        switch self {
        case .arbitraryLoads:
            Metadata(severity: .high, justification: true, specRules: ["R12", "R13"],
                     title: "NSAllowsArbitraryLoads=YES turns ATS off",
                     summary: "Every load that no exception entry covers may use cleartext HTTP, any TLS"
                              + " version and no certificate checks.",
                     help: "Remove NSAllowsArbitraryLoads and add NSExceptionDomains entries for the hosts"
                           + " that need an exception. App Review requires a justification.")
        case .arbitraryLoadsIgnored:
            Metadata(severity: .error, justification: true, specRules: ["R12"],
                     title: "NSAllowsArbitraryLoads=YES is ignored",
                     summary: "On iOS 10 and later NSAllowsArbitraryLoads is ignored when"
                              + " NSAllowsLocalNetworking, NSAllowsArbitraryLoadsForMedia or"
                              + " NSAllowsArbitraryLoadsInWebContent is present; only iOS 9 honours it.",
                     help: "Remove NSAllowsArbitraryLoads if the app supports iOS 10 and later only, or"
                           + " remove the key that overrides it if ATS should be off. App Review still asks"
                           + " for a justification while it is YES.")
        case .arbitraryLoadsForMedia:
            Metadata(severity: .medium, justification: true, specRules: ["R12"],
                     title: "NSAllowsArbitraryLoadsForMedia=YES turns ATS off for media",
                     summary: "AVFoundation loads that no exception entry covers may use cleartext HTTP and"
                              + " weak TLS.",
                     help: "Prefer NSExceptionDomains entries for the media hosts. App Review requires a"
                           + " justification.")
        case .arbitraryLoadsInWebContent:
            Metadata(severity: .medium, justification: true, specRules: ["R12"],
                     title: "NSAllowsArbitraryLoadsInWebContent=YES turns ATS off for web content",
                     summary: "WKWebView loads that no exception entry covers may use cleartext HTTP and weak TLS.",
                     help: "Keep it only for a general-purpose browser. App Review requires a justification.")
        case .localNetworking:
            Metadata(severity: .info, specRules: ["R11", "R12"],
                     title: "NSAllowsLocalNetworking=YES exempts local destinations",
                     summary: "Local and unqualified names and local-network addresses are exempt from ATS"
                              + " (the default on iOS 10 and later); the key's presence keeps ATS on for"
                              + " everything else.",
                     help: "Nothing to do; no justification is needed.")
        case .localNetworkingRevoked:
            Metadata(severity: .low, specRules: ["R11"],
                     title: "NSAllowsLocalNetworking present and not YES revokes the local exemption",
                     summary: "Local destinations get full ATS, so cleartext HTTP to printers, .local hosts"
                              + " and local-network addresses is blocked unless an exception entry covers"
                              + " them.",
                     help: "Remove the key to keep the local exemption, or set it to YES.")
        case .keyNotInProfile:
            Metadata(severity: .info, specRules: ["R12", "R17"],
                     title: "Key not honoured by the selected profile",
                     summary: "The key does not exist on the OS generation of the profile and has no effect there.",
                     help: "Nothing to do if the app also targets later OS versions.")
        case .notABoolean:
            Metadata(severity: .error, specRules: ["R1"],
                     title: "Boolean key with a value that is not a boolean",
                     summary: "Only a real plist boolean counts; any other value is ignored and the key"
                              + " keeps its default.",
                     help: "Write <true/> or <false/> (true or false in JSON).")
        case .notADictionary:
            Metadata(severity: .error, specRules: ["R3", "R17"],
                     title: "Value that must be a dictionary is not one",
                     summary: "NSExceptionDomains, NSPinnedDomains and each of their entries must be"
                              + " dictionaries; anything else is ignored.",
                     help: "Make the value a dictionary.")
        case .insecureHTTPLoads:
            Metadata(severity: .medium, justification: true, specRules: ["R10"],
                     title: "NSExceptionAllowsInsecureHTTPLoads=YES allows cleartext HTTP",
                     summary: "The domain may be loaded over cleartext HTTP and its certificates are not checked.",
                     help: "Serve the domain over HTTPS and remove the key. App Review requires a justification.")
        case .weakMinimumTLSVersion:
            Metadata(severity: .medium, justification: true, specRules: ["R4", "R10"],
                     title: "NSExceptionMinimumTLSVersion below TLSv1.2",
                     summary: "Connections to the domain may use TLS 1.0 or 1.1.",
                     help: "Upgrade the server to TLS 1.2 or later and remove the key. App Review requires a"
                           + " justification.")
        case .invalidMinimumTLSVersion:
            Metadata(severity: .error, specRules: ["R4"],
                     title: "NSExceptionMinimumTLSVersion value is not recognised",
                     summary: "Only the strings TLSv1.0, TLSv1.1, TLSv1.2 and TLSv1.3 are read"
                              + " (case-sensitive); anything else falls back to TLSv1.2.",
                     help: "Write one of TLSv1.0, TLSv1.1, TLSv1.2, TLSv1.3.")
        case .forwardSecrecyDisabled:
            Metadata(severity: .medium, specRules: ["R14"],
                     title: "NSExceptionRequiresForwardSecrecy=NO",
                     summary: "Connections to the domain may use RSA key exchange without forward secrecy"
                              + " (TLS 1.2 and below).",
                     help: "Enable ECDHE cipher suites on the server and remove the key (absent means YES).")
        case .replacesBuiltin:
            Metadata(severity: .info, specRules: ["R9"],
                     title: "Entry replaces a built-in exception",
                     summary: "An app entry with the key of a built-in exception replaces the built-in entirely.",
                     help: "Check that the entry keeps what the app's Apple services need"
                           + " (NSIncludesSubdomains in particular).")
        case .exceptionEnforcesATS:
            Metadata(severity: .info, specRules: ["R10"],
                     title: "Exception entry re-enables ATS for its host",
                     summary: "An entry alone decides for its host, so an entry that does not allow"
                              + " cleartext brings ATS back for a host that would otherwise be exempt or"
                              + " covered by arbitrary loads.",
                     help: "Add NSExceptionAllowsInsecureHTTPLoads=YES to the entry if the host should stay"
                           + " exempt; otherwise nothing to do.")
        case .domainKeyEmpty:
            Metadata(severity: .error, specRules: ["R5"],
                     title: "Empty domain key",
                     summary: "An empty key never matches any host.",
                     help: "Write the domain name or remove the entry.")
        case .domainKeyScheme:
            Metadata(severity: .error, specRules: ["R5"],
                     title: "Domain key with a scheme",
                     summary: "Keys are exact host names; a key with a scheme never matches.",
                     help: "Remove the scheme (https://).")
        case .domainKeyPath:
            Metadata(severity: .error, specRules: ["R5"],
                     title: "Domain key with a path",
                     summary: "Keys are exact host names; a key with a path never matches.",
                     help: "Remove the path; exceptions apply to the whole host.")
        case .domainKeyPort:
            Metadata(severity: .error, specRules: ["R5"],
                     title: "Domain key with a port",
                     summary: "Keys are exact host names; a key with a port never matches.",
                     help: "Remove the port; exceptions apply to every port of the host.")
        case .domainKeyWildcard:
            Metadata(severity: .error, specRules: ["R5", "R7"],
                     title: "Domain key with a wildcard",
                     summary: "Keys are exact host names; wildcards are not expanded, so the key never matches.",
                     help: "Use the parent domain as the key with NSIncludesSubdomains=YES.")
        case .domainKeyWhitespace:
            Metadata(severity: .error, specRules: ["R5"],
                     title: "Domain key with white space",
                     summary: "Keys are exact host names; a key with white space never matches.",
                     help: "Remove the white space.")
        case .domainKeyUppercase:
            Metadata(severity: .error, specRules: ["R5"],
                     title: "Domain key with uppercase letters",
                     summary: "Hosts are lowercased before the lookup and keys compared exactly, so a key"
                              + " with uppercase letters never matches.",
                     help: "Write the key in lowercase.")
        case .domainKeyInvalid:
            Metadata(severity: .error, specRules: ["R5"],
                     title: "Domain key that is not a host name",
                     summary: "The key has characters or labels no host name has, so it never matches.",
                     help: "Write the host name (IDNA xn-- form for non-ASCII names).")
        case .domainKeyTrailingDot:
            Metadata(severity: .low, specRules: ["R5"],
                     title: "Domain key with a trailing dot",
                     summary: "The trailing dot is significant: the key matches only hosts spelled with the dot.",
                     help: "Remove the trailing dot unless clients use the dotted spelling.")
        case .ipKeyInvalid:
            Metadata(severity: .error, specRules: ["R8"],
                     title: "Key that looks like an IP address but is not one",
                     summary: "IP keys are read strictly (four decimal octets without leading zeros, or IPv6"
                              + " text); anything else never matches.",
                     help: "Write the address in canonical form.")
        case .ipKeyNotCanonical:
            Metadata(severity: .error, specRules: ["R5", "R8"],
                     title: "IP key not in canonical form",
                     summary: "Exact IP keys are compared as canonical text; another spelling of the address"
                              + " never matches.",
                     help: "Write the address as atsgate check prints it: dotted quad, or RFC 5952 IPv6.")
        case .cidrInvalid:
            Metadata(severity: .error, specRules: ["R8"],
                     title: "Invalid CIDR key",
                     summary: "The address or the prefix length of the CIDR key is invalid, so the entry"
                              + " never matches.",
                     help: "Write ADDRESS/LENGTH with a valid address and a length of 0-32 (IPv4) or 0-128 (IPv6).")
        case .cidrHostBits:
            Metadata(severity: .low, specRules: ["R8"],
                     title: "CIDR key with host bits set",
                     summary: "The bits after the prefix are ignored, so the key means a larger network than"
                              + " its text suggests.",
                     help: "Write the network address.")
        case .duplicateIPKey:
            Metadata(severity: .error, specRules: ["R8"],
                     title: "Two keys for the same address or network",
                     summary: "Two spellings of one network compete; only one entry can apply, and the OS"
                              + " does not define which.",
                     help: "Keep one entry.")
        case .ipKeyUnsupported:
            Metadata(severity: .error, specRules: ["R8"],
                     title: "IP or CIDR key under a profile before iOS 17",
                     summary: "IP and CIDR keys are honoured only with the iOS 17 SDK; before that they"
                              + " never match.",
                     help: "Use the ios17 profile if the app is built with the iOS 17 SDK, or use host names.")
        case .ipKeyRequiresIOS17:
            Metadata(severity: .info, specRules: ["R8"],
                     title: "IP or CIDR key honoured from iOS 17",
                     summary: "IP and CIDR keys work with the iOS 17 SDK; older OS versions ignore them.",
                     help: "Nothing to do if the app requires iOS 17 or later.")
        case .includesSubdomainsOnIP:
            Metadata(severity: .low, specRules: ["R8"],
                     title: "NSIncludesSubdomains on an IP or CIDR key",
                     summary: "Addresses have no subdomains; the key has no effect.",
                     help: "Remove NSIncludesSubdomains; use a CIDR key to cover a range.")
        case .misspelledKey:
            Metadata(severity: .error, specRules: ["R2", "R3"],
                     title: "Misspelled key",
                     summary: "The key is not an ATS key and is ignored; it looks like a known key.",
                     help: "Use the suggested key.")
        case .misplacedKey:
            Metadata(severity: .error, specRules: ["R2", "R3"],
                     title: "Key at the wrong level",
                     summary: "The key belongs to another level of the dictionary and is ignored where it is.",
                     help: "Move it where it belongs.")
        case .legacyKey:
            Metadata(severity: .error, specRules: ["R2"],
                     title: "Legacy exception key",
                     summary: "NSTemporaryException* and NSThirdPartyException* keys are not honoured.",
                     help: "Use the NSException* key of the same name.")
        case .unknownKey:
            Metadata(severity: .medium, specRules: ["R2", "R3"],
                     title: "Unknown key",
                     summary: "The key is not an ATS key and is ignored.",
                     help: "Remove it, or use the ATS key you meant.")
        case .certificateTransparencyKey:
            Metadata(severity: .low, specRules: ["R16"],
                     title: "Obsolete NSRequiresCertificateTransparency",
                     summary: "Certificate Transparency is no longer an ATS key; the system enforces it for"
                              + " publicly trusted certificates.",
                     help: "Remove the key.")
        case .pinnedIPKey:
            Metadata(severity: .error, specRules: ["R17"],
                     title: "NSPinnedDomains key that is an IP address",
                     summary: "Pins apply to domain names only; an IP or CIDR key never matches.",
                     help: "Pin the domain name the app connects to.")
        case .pinNoIdentities:
            Metadata(severity: .error, specRules: ["R17"],
                     title: "Pinned domain without identities",
                     summary: "An entry with neither NSPinnedCAIdentities nor NSPinnedLeafIdentities pins nothing.",
                     help: "Add an identity array, or remove the entry.")
        case .pinIdentitiesNotArray:
            Metadata(severity: .error, specRules: ["R17"],
                     title: "Identity list that is not an array",
                     summary: "NSPinnedCAIdentities and NSPinnedLeafIdentities must be arrays; anything else"
                              + " is ignored.",
                     help: "Make it an array of dictionaries with SPKI-SHA256-BASE64.")
        case .pinIdentitiesEmpty:
            Metadata(severity: .error, specRules: ["R17"],
                     title: "Identity array with no valid identity",
                     summary: "No certificate can match an empty identity array, so connections to the"
                              + " domain fail the pin check.",
                     help: "Add the base64 SHA-256 digest of the pinned SubjectPublicKeyInfo.")
        case .pinIdentityInvalid:
            Metadata(severity: .error, specRules: ["R17"],
                     title: "Invalid pinned identity",
                     summary: "Each identity must be a dictionary whose SPKI-SHA256-BASE64 is the base64"
                              + " text of a 32-byte SHA-256 digest; others are ignored.",
                     help: "Write the base64 SHA-256 digest of the SubjectPublicKeyInfo (44 characters).")
        case .pinIncludesSubdomains:
            Metadata(severity: .info, specRules: ["R17"],
                     title: "NSIncludesSubdomains in a pinned domain covers one level",
                     summary: "A pin entry with NSIncludesSubdomains applies to the domain's immediate"
                              + " subdomains only.",
                     help: "Add entries for deeper subdomains that need the pins.")
        }
    }
}
