extension Decision {
    /// The human sentence for the decision: what happens, why, and which key would change it.
    /// Built on demand so the proxy's hot path never formats text it does not log.
    public var message: String {
        let host = destination.host.description
        switch (destination.scheme, action) {
        case (.http, .block):
            return "cleartext HTTP to \(host) is not allowed: \(whyCleartextForbidden)"
        case (.http, .upgrade):
            let how = upgradeVia == .redirect ? "redirected to HTTPS" : "upgraded to HTTPS"
            return "cleartext HTTP to \(host) is \(how): \(whyCleartextForbidden)"
        case (.http, _):
            return "cleartext HTTP to \(host) is allowed: \(whyATSRelaxed)"
        case (.https, _):
            if ats == .on || ats == .exception {
                return "HTTPS to \(host) is allowed if the handshake meets \(requirementsSummary): \(whyATSApplies)"
            }
            return "HTTPS to \(host) is allowed with no ATS requirements: \(whyATSRelaxed)"
        }
    }

    /// `TLSv1.2+, forward secrecy, certificate checks` and so on.
    public var requirementsSummary: String {
        var parts: [String] = []
        if let minimum = requirements.minimumTLSVersion { parts.append("\(minimum.rawValue) or later") }
        parts.append(requirements.forwardSecrecy ? "forward secrecy" : "no forward secrecy required")
        parts.append(requirements.certificateChecks ? "certificate checks" : "no certificate checks")
        return parts.joined(separator: ", ")
    }

    private var host: String { destination.host.description }

    private var entryName: String {
        guard let entry = exception?.entry else { return "" }
        return entry.isBuiltin ? "the built-in exception '\(entry.key)'" : "NSExceptionDomains entry '\(entry.key)'"
    }

    private var matchPhrase: String {
        guard let match = exception else { return "" }
        switch match.kind {
        case .exact: return "\(entryName) applies"
        case .subdomain: return "\(entryName) applies to its subdomains"
        case .cidr: return "\(entryName) contains \(host)"
        }
    }

    private var notExemptPhrase: String? {
        guard case .global(_, let notExempt?) = basis else { return nil }
        switch notExempt {
        case .localNetworkingNo:
            return "\(host) is a local destination but NSAllowsLocalNetworking=NO, so it is not exempt"
        case .ios9:
            return "the ios9 profile has no local exemption; \(withArticle(destination.hostClass.rawValue)) host needs an NSExceptionDomains entry"
        }
    }

    /// Why cleartext is forbidden, ending with the key that would allow it.
    private var whyCleartextForbidden: String {
        if exception != nil {
            return "\(matchPhrase) and does not set NSExceptionAllowsInsecureHTTPLoads=YES"
                + " (set it in that entry)"
        }
        var because: [String] = []
        if let notExemptPhrase { because.append(notExemptPhrase) }
        if case .global(let cause, _) = basis, let phrase = globalPhrase(cause) { because.append(phrase) }
        because.append("no NSExceptionDomains entry allows it")
        return because.joined(separator: "; ") + " (add NSExceptionAllowsInsecureHTTPLoads=YES for \(host))"
    }

    /// Why ATS applies to an HTTPS load, with the key that would relax it.
    private var whyATSApplies: String {
        if exception != nil {
            return "\(matchPhrase) (relax NSExceptionMinimumTLSVersion or NSExceptionRequiresForwardSecrecy there)"
        }
        var because: [String] = []
        if let notExemptPhrase { because.append(notExemptPhrase) }
        if case .global(let cause, _) = basis { because.append(globalPhrase(cause) ?? "ATS applies by default") }
        return because.joined(separator: "; ") + " (add an NSExceptionDomains entry for \(host) to relax it)"
    }

    /// Why ATS does not forbid the load, with the key that would enforce it.
    private var whyATSRelaxed: String {
        switch basis {
        case .exception(let match):
            if match.entry.isBuiltin {
                return "\(matchPhrase) and allows HTTP (an app entry '\(match.entry.key)' would replace it)"
            }
            return "\(matchPhrase) and sets NSExceptionAllowsInsecureHTTPLoads=YES"
        case .localExemption:
            return "\(host) is a direct (\(destination.hostClass.rawValue)) destination, exempt from ATS"
                + " (set NSAllowsLocalNetworking=NO to enforce ATS for it)"
        case .global(let cause, _):
            return (globalPhrase(cause) ?? "ATS applies")
                + " (add an NSExceptionDomains entry for \(host) to enforce ATS for it)"
        }
    }

    /// The phrase for a global cause; nil when nothing beyond the default needs saying.
    private func globalPhrase(_ cause: GlobalCause) -> String? {
        switch cause {
        case .mediaLoadsAllowed:
            return "NSAllowsArbitraryLoadsForMedia=YES turns ATS off for media (AVFoundation) loads"
        case .webContentAllowed:
            return "NSAllowsArbitraryLoadsInWebContent=YES turns ATS off for web content (WKWebView) loads"
        case .localNetworkingPresent(let overrides):
            return overrides
                ? "NSAllowsArbitraryLoads=YES is ignored because NSAllowsLocalNetworking is present"
                : "ATS applies (NSAllowsLocalNetworking only exempts local destinations)"
        case .contextKeyPresent(let key, let overrides):
            return overrides
                ? "NSAllowsArbitraryLoads=YES is ignored because \(key) is present"
                : "ATS applies to \(context.rawValue) loads (\(key) only affects its own context)"
        case .arbitraryLoads:
            return "NSAllowsArbitraryLoads=YES turns ATS off"
        case .atsDefault(let ignored?):
            return "NSAllowsArbitraryLoads is \(withArticle(ignored.typeName)) (\(ignored.shortDescription)),"
                + " not a boolean, and is ignored"
        case .atsDefault(nil):
            return nil
        }
    }
}
