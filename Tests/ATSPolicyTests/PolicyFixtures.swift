import Foundation
import Testing
@testable import ATSPolicy

/// Shared builders for the engine tests: policies from `PlistValue` literals or XML text, engines with
/// options, and decisions for a URL. Everything sits in one namespace so that the other test files of
/// this target (lint) cannot collide with these names.
enum PolicyFixtures {
    static let yes = PlistValue.bool(true)
    static let no = PlistValue.bool(false)

    /// `.string(text)`, short for table rows.
    static func str(_ text: String) -> PlistValue { .string(text) }

    /// An NSExceptionDomains entry with the given per-domain keys; omitted keys are absent.
    static func entry(subdomains: PlistValue? = nil, insecureHTTP: PlistValue? = nil,
                      minimumTLS: PlistValue? = nil, forwardSecrecy: PlistValue? = nil,
                      extra: [String: PlistValue] = [:]) -> PlistValue {
        var keys = extra
        if let subdomains { keys[ATSKey.includesSubdomains] = subdomains }
        if let insecureHTTP { keys[ATSKey.exceptionAllowsInsecureHTTPLoads] = insecureHTTP }
        if let minimumTLS { keys[ATSKey.exceptionMinimumTLSVersion] = minimumTLS }
        if let forwardSecrecy { keys[ATSKey.exceptionRequiresForwardSecrecy] = forwardSecrecy }
        return .dictionary(keys)
    }

    /// An ATS dictionary with top-level keys and NSExceptionDomains entries.
    static func ats(_ topLevel: [String: PlistValue] = [:], exceptions: [String: PlistValue]? = nil,
                    pins: [String: PlistValue]? = nil) -> [String: PlistValue] {
        var dictionary = topLevel
        if let exceptions { dictionary[ATSKey.exceptionDomains] = .dictionary(exceptions) }
        if let pins { dictionary[ATSKey.pinnedDomains] = .dictionary(pins) }
        return dictionary
    }

    static func policy(_ dictionary: [String: PlistValue]) -> Policy {
        Policy(PolicySource(origin: "<test>", format: nil, root: .bare, dictionary: dictionary))
    }

    /// A policy from the body of an XML plist: `body` is what goes inside `<plist>`.
    static func policy(xmlBody body: String) throws -> Policy {
        Policy(try PolicyLoader.parse(data: Data(xmlPlist(body).utf8), origin: "<test xml>"))
    }

    static func xmlPlist(_ body: String) -> String {
        """
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
        <plist version="1.0">
        \(body)
        </plist>
        """
    }

    static func engine(_ dictionary: [String: PlistValue] = [:], profile: Profile = .ios17,
                       builtins: Bool = true, cleartext: CleartextMode = .block,
                       localNetworks: [IPNetwork] = EngineOptions.defaultLocalNetworks) -> DecisionEngine {
        DecisionEngine(policy: policy(dictionary),
                       options: EngineOptions(profile: profile, builtinExceptions: builtins,
                                              localNetworks: localNetworks, cleartext: cleartext))
    }

    static func destination(_ url: String) throws -> Destination {
        try Destination.parse(url: url)
    }

    static func network(_ text: String) -> IPNetwork {
        IPNetwork.parse(text[...])!.network
    }

    static func host(_ text: String) throws -> ATSPolicy.Host {
        try Host.parse(text)
    }

    /// What an exception entry yields (R10): certificate checks iff cleartext is not allowed.
    static func entryRequirements(http: Bool, tls: TLSVersion, fs: Bool) -> Requirements {
        Requirements(cleartextAllowed: http, minimumTLSVersion: tls, forwardSecrecy: fs, certificateChecks: !http)
    }
}
