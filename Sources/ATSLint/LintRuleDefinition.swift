import ATSPolicy
/// One lint rule as a type: the id (a `LintRule` case, which scripts and SARIF depend on), the severity,
/// whether App Review asks for a justification, the texts SARIF shows, and the message of one finding,
/// built from what the pass found. The passes (GlobalKeyPass.swift and the others) decide when a rule
/// applies; the rule's type, in Rules/, says everything about it.
package protocol LintRuleDefinition: Sendable {
    static var rule: LintRule { get }
    static var severity: LintSeverity { get }
    /// App Review asks for a justification of the key this rule reports.
    static var justification: Bool { get }
    /// The ATS-SPEC rules behind it.
    static var specRules: [String] { get }
    /// One line: what the rule reports.
    static var title: String { get }
    /// What happens at run time, for SARIF's full description.
    static var summary: String { get }
    /// What to do about it.
    static var help: String { get }
    /// What happens at run time and what to do, naming the key and citing the rule.
    var message: String { get }
}

extension LintRuleDefinition {
    static var justification: Bool { false }
}

/// The lint rules' types (Rules/), and the one list of them.
package enum Lints {
    /// Every rule's type, in `LintRule` order (a test checks that each case has exactly one).
    static let all: [any LintRuleDefinition.Type] = [
        ArbitraryLoads.self, ArbitraryLoadsIgnored.self, ArbitraryLoadsForMedia.self, ArbitraryLoadsInWebContent.self,
        LocalNetworking.self, LocalNetworkingRevoked.self, KeyNotInProfile.self,
        NotABoolean.self, NotADictionary.self,
        InsecureHTTPLoads.self, WeakMinimumTLSVersion.self, InvalidMinimumTLSVersion.self, ForwardSecrecyDisabled.self,
        ReplacesBuiltin.self, ExceptionEnforcesATS.self,
        DomainKeyEmpty.self, DomainKeyScheme.self, DomainKeyPath.self, DomainKeyPort.self, DomainKeyWildcard.self,
        DomainKeyWhitespace.self, DomainKeyUppercase.self, DomainKeyInvalid.self, DomainKeyTrailingDot.self,
        IPKeyInvalid.self, IPKeyNotCanonical.self, CIDRInvalid.self, CIDRHostBits.self, DuplicateIPKey.self,
        IPKeyUnsupported.self, IPKeyRequiresIOS17.self, IncludesSubdomainsOnIP.self,
        MisspelledKey.self, MisplacedKey.self, LegacyKey.self, UnknownKey.self, CertificateTransparencyKey.self,
        PinnedIPKey.self, PinNoIdentities.self, PinIdentitiesNotArray.self, PinIdentitiesEmpty.self,
        PinIdentityInvalid.self, PinIncludesSubdomains.self,
        DuplicateKey.self, DuplicateKeySameValue.self,
    ]

    static let byRule: [LintRule: any LintRuleDefinition.Type] =
        Dictionary(all.map { ($0.rule, $0) }) { first, _ in first }
}

/// The domain-key rules that report a name key that never matches: the message is the key's, whichever
/// of its problems names the rule (the first in `checkNameKey`'s order).
package protocol NeverMatchingKeyRule: LintRuleDefinition {
    var key: NeverMatchingNameKey { get }
}

extension NeverMatchingKeyRule {
    var message: String { key.text }
}

/// A name key that never matches (R5), taken apart: the one message of the domain-key rules, each of
/// which reports it under the id of the key's first problem.
package struct NeverMatchingNameKey: Sendable {
    /// "NSExceptionDomains key 'http://example.com'".
    var label: String
    /// "a scheme ('http://')", "a port (':8080')".
    var traits: [String]
    /// Why what is left is still not a host name.
    var invalidReason: String?
    /// The key to use instead.
    var suggestion: String?
    /// The key had a wildcard or a leading dot: the author wanted the subdomains.
    var coversSubdomains: Bool
    /// The entry's NSIncludesSubdomains.
    var includesSubdomains: Bool
    var table: DomainTable
    /// The table already has an entry under the suggestion.
    var suggestionExists: Bool

    var text: String {
        var message = "\(label) never matches any host (R5): keys are compared as exact lowercase host names,"
            + " without scheme, port, path or wildcard"
        if !traits.isEmpty { message += ", and this one has \(LintText.list(traits))" }
        if let reason = invalidReason { message += traits.isEmpty ? ", and this one is not a host name (\(reason))"
                                                                  : "; it is not a host name (\(reason))" }
        message += "."
        if let suggestion {
            message += " Use \(LintText.quoted(suggestion))"
            if coversSubdomains {
                if includesSubdomains {
                    message += " (its NSIncludesSubdomains=YES covers the subdomains"
                } else {
                    message += " with NSIncludesSubdomains=YES (to cover its subdomains"
                }
                message += table == .pins ? ", one level deep for pins)" : ")"
            }
            message += " instead."
            if suggestionExists {
                message += " An entry \(LintText.quoted(suggestion)) already exists: merge the two."
            }
        }
        return message
    }
}
