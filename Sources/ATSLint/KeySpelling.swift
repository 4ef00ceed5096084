import ATSPolicy
/// The levels of an ATS dictionary that have their own set of keys.
package enum KeyLevel: Sendable, CaseIterable {
    case topLevel
    case exceptionEntry
    case pinnedEntry
    case pinnedIdentity

    /// The keys read at this level (R2, R3, R17).
    var knownKeys: [String] {
        switch self {
        case .topLevel: ATSKey.topLevel
        case .exceptionEntry: ATSKey.exceptionEntry
        case .pinnedEntry: ATSKey.pinnedEntry
        case .pinnedIdentity: [ATSKey.spkiSHA256]
        }
    }

    /// Where a key of this level sits, for messages.
    var place: String {
        switch self {
        case .topLevel: "the top level of NSAppTransportSecurity"
        case .exceptionEntry: "an NSExceptionDomains entry"
        case .pinnedEntry: "an NSPinnedDomains entry"
        case .pinnedIdentity: "an element of NSPinnedCAIdentities or NSPinnedLeafIdentities"
        }
    }

    /// `place` with its preposition: "at the top level ...", "in an NSExceptionDomains entry".
    var location: String { self == .topLevel ? "at \(place)" : "in \(place)" }

    /// The ATS-SPEC rule that lists the keys of this level.
    var specRule: String {
        switch self {
        case .topLevel: "R2"
        case .exceptionEntry: "R3"
        case .pinnedEntry, .pinnedIdentity: "R17"
        }
    }
}

/// What an unread key most likely is.
package enum KeyVerdict: Equatable {
    /// NSTemporaryException* / NSThirdPartyException*: not honoured; `replacement` is read (R2).
    case legacy(replacement: String)
    /// NSRequiresCertificateTransparency (R16).
    case obsoleteCertificateTransparency
    /// A known key of other levels, correctly spelled.
    case misplaced(belongsIn: [KeyLevel])
    /// Close to `suggestion`, a key of `levels` (which may not include the level it sits at).
    case misspelled(suggestion: String, levels: [KeyLevel])
    case unknown
}

/// Suggestions for keys the engine does not read: a table of misspellings seen in real Info.plists,
/// then a case-insensitive comparison and an edit distance over the keys of every level.
public enum KeySpelling {
    /// Edit distance between two names, ignoring case (for "did you mean" suggestions anywhere).
    public static func distance(_ a: String, _ b: String) -> Int {
        editDistance(Array(a.lowercased().unicodeScalars), Array(b.lowercased().unicodeScalars))
    }

    static let certificateTransparency = "NSRequiresCertificateTransparency"

    /// Legacy per-domain keys and the keys that replaced them (R2).
    static let legacyKeys: [String: String] = [
        "NSTemporaryExceptionAllowsInsecureHTTPLoads": ATSKey.exceptionAllowsInsecureHTTPLoads,
        "NSTemporaryExceptionMinimumTLSVersion": ATSKey.exceptionMinimumTLSVersion,
        "NSTemporaryExceptionRequiresForwardSecrecy": ATSKey.exceptionRequiresForwardSecrecy,
        "NSThirdPartyExceptionAllowsInsecureHTTPLoads": ATSKey.exceptionAllowsInsecureHTTPLoads,
        "NSThirdPartyExceptionMinimumTLSVersion": ATSKey.exceptionMinimumTLSVersion,
        "NSThirdPartyExceptionRequiresForwardSecrecy": ATSKey.exceptionRequiresForwardSecrecy,
    ]

    /// Known misspellings, lowercased, and the key meant. Case variants need no row.
    static let misspellings: [String: String] = {
        let rows: [(String, [String])] = [
            (ATSKey.allowsArbitraryLoads, [
                "NSAllowArbitraryLoads", "NSAllowsArbitraryLoad", "NSAllowArbitraryLoad", "NSAllowsArbitaryLoads",
                "NSAllowsAribtraryLoads", "NSAllowsArbitraryLoading", "NSAllowsArbitrary", "NSAllowsAbitraryLoads",
            ]),
            (ATSKey.allowsArbitraryLoadsForMedia, [
                "NSAllowsArbitraryLoadsInMedia", "NSAllowArbitraryLoadsForMedia", "NSAllowsArbitraryLoadsForMedias",
                "NSAllowsArbitraryLoadsForAVFoundation", "NSAllowsArbitraryMediaLoads",
            ]),
            (ATSKey.allowsArbitraryLoadsInWebContent, [
                "NSAllowsArbitraryLoadsForWebContent", "NSAllowArbitraryLoadsInWebContent",
                "NSAllowsArbitraryLoadsInWebContents", "NSAllowsArbitraryLoadsInWebView",
                "NSAllowsArbitraryLoadsInWebKit", "NSAllowsArbitraryWebContentLoads",
            ]),
            (ATSKey.allowsLocalNetworking, [
                "NSAllowLocalNetworking", "NSAllowsLocalNetwork", "NSAllowsLocalNetworks", "NSAllowsLocalNetworkLoads",
            ]),
            (ATSKey.exceptionDomains, [
                "NSExceptionDomain", "NSExceptionsDomains", "NSExceptionDomians", "NSExceptionDomainss",
                "NSExceptionalDomains", "NSDomainExceptions",
            ]),
            (ATSKey.pinnedDomains, ["NSPinnedDomain", "NSPinningDomains", "NSPinDomains"]),
            (ATSKey.includesSubdomains, [
                "NSIncludeSubdomains", "NSIncludesSubdomain", "NSIncludeSubdomain", "NSIncludesSubDomain",
                "NSIncludeSubDomain", "NSIncludeSubdomaims", "NSIncludesSubdomians", "NSIncludesAllSubdomains",
            ]),
            (ATSKey.exceptionAllowsInsecureHTTPLoads, [
                "NSExceptionAllowInsecureHTTPLoads", "NSExceptionAllowsInsecureHTTPLoad",
                "NSExceptionAllowsInsecureHTTPSLoads",
                "NSExceptionAllowsInsecureLoads", "NSExceptionAllowsHTTPLoads", "NSAllowsInsecureHTTPLoads",
                "NSAllowInsecureHTTPLoads", "NSExceptionAllowsInsecureHTTP", "NSExceptionAllowsInsecureHTTPLoading",
            ]),
            (ATSKey.exceptionMinimumTLSVersion, [
                "NSExceptionMinTLSVersion", "NSExceptionMinimumTLS", "NSExceptionMinimumTLSVersions",
                "NSExceptionMinimalTLSVersion", "NSMinimumTLSVersion", "NSExceptionTLSVersion",
                "NSExceptionMinimumTLSVerison",
            ]),
            (ATSKey.exceptionRequiresForwardSecrecy, [
                "NSExceptionRequiresForwardSecracy", "NSExceptionRequireForwardSecrecy",
                "NSExceptionRequiresForwardSecurity",
                "NSExceptionRequiresForwardSecrets", "NSRequiresForwardSecrecy", "NSExceptionForwardSecrecy",
                "NSExceptionRequiresForwardSecrecey", "NSExceptionRequiresPerfectForwardSecrecy",
            ]),
            (ATSKey.pinnedCAIdentities, [
                "NSPinnedCAIdentity", "NSPinnedCertificateAuthorityIdentities", "NSPinnedCAs",
            ]),
            (ATSKey.pinnedLeafIdentities, ["NSPinnedLeafIdentity", "NSPinnedLeafs", "NSPinnedLeaves"]),
            (ATSKey.spkiSHA256, ["SPKI-SHA256", "SPKI-SHA-256-BASE64", "SPKI_SHA256_BASE64", "SPKI-SHA256-BASE-64"]),
        ]
        var table: [String: String] = [:]
        for (key, misspellings) in rows {
            for misspelling in misspellings { table[misspelling.lowercased()] = key }
        }
        return table
    }()

    /// The levels whose known keys include `key`, in `KeyLevel` order.
    static func levels(of key: String) -> [KeyLevel] {
        KeyLevel.allCases.filter { $0.knownKeys.contains(key) }
    }

    /// Classifies a key that `level` does not read.
    static func classify(_ key: String, at level: KeyLevel) -> KeyVerdict {
        if let replacement = legacyKeys[key] { return .legacy(replacement: replacement) }
        if key == certificateTransparency, level != .pinnedIdentity { return .obsoleteCertificateTransparency }
        let elsewhere = levels(of: key)
        if !elsewhere.isEmpty { return .misplaced(belongsIn: elsewhere) }
        guard let suggestion = suggestion(for: key, at: level) else { return .unknown }
        if let replacement = legacyKeys[suggestion] { return .legacy(replacement: replacement) }
        if suggestion == certificateTransparency { return .obsoleteCertificateTransparency }
        return .misspelled(suggestion: suggestion, levels: levels(of: suggestion))
    }

    /// The key `key` most likely means: a table row, a case-insensitive match, or the closest key within
    /// a small edit distance; keys of `level` win ties.
    static func suggestion(for key: String, at level: KeyLevel) -> String? {
        let lower = key.lowercased()
        if let known = misspellings[lower] { return known }
        var candidates = level.knownKeys
        for other in KeyLevel.allCases where other != level {
            candidates += other.knownKeys.filter { !candidates.contains($0) }
        }
        candidates += legacyKeys.keys.sorted() + [certificateTransparency]
        if let exact = candidates.first(where: { $0.lowercased() == lower }) { return exact }
        // Edit distances beyond this length are meaningless for these keys and cost quadratic time.
        guard lower.unicodeScalars.count <= 80 else { return nil }
        let typed = Array(lower.unicodeScalars)
        var best: (key: String, distance: Int)?
        for candidate in candidates {
            let target = Array(candidate.lowercased().unicodeScalars)
            let allowed = max(1, min(3, target.count / 6))
            guard abs(target.count - typed.count) <= allowed else { continue }
            let distance = editDistance(typed, target)
            if distance <= allowed, distance < (best?.distance ?? Int.max) { best = (candidate, distance) }
        }
        return best?.key
    }

    /// Optimal string alignment distance: insertions, deletions, substitutions and adjacent transpositions.
    static func editDistance(_ a: [Unicode.Scalar], _ b: [Unicode.Scalar]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous2 = [Int](repeating: 0, count: b.count + 1)
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                var value = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    value = min(value, previous2[j - 2] + 1)
                }
                current[j] = value
            }
            (previous2, previous, current) = (previous, current, previous2)
        }
        return previous[b.count]
    }
}
