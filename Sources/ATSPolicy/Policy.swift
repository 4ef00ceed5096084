import Foundation

/// A top-level boolean key as it appears in the dictionary (R1): present or not, and its value if it
/// is a real boolean. A value of another type is ignored but still counts as present.
public struct BooleanSetting: Sendable, Equatable {
    public var key: String
    /// The raw value, nil when the key is absent.
    public var raw: PlistValue?

    public var isPresent: Bool { raw != nil }
    public var isYes: Bool { raw == .bool(true) }
    /// Present with a value that is not a boolean, so the default applies.
    public var isIgnoredValue: Bool { raw != nil && raw?.boolValue == nil }
}

/// One NSExceptionDomains entry, as the engine applies it (R3, R4, R10).
public struct ExceptionEntry: Sendable, Equatable {
    /// The key as written (`example.com`) or the built-in's domain.
    public var key: String
    public var isBuiltin: Bool
    public var includesSubdomains: Bool
    public var allowsInsecureHTTPLoads: Bool
    public var minimumTLSVersion: TLSVersion
    public var requiresForwardSecrecy: Bool

    public init(key: String, isBuiltin: Bool = false, includesSubdomains: Bool = false,
                allowsInsecureHTTPLoads: Bool = false, minimumTLSVersion: TLSVersion = .tls12,
                requiresForwardSecrecy: Bool = true) {
        self.key = key
        self.isBuiltin = isBuiltin
        self.includesSubdomains = includesSubdomains
        self.allowsInsecureHTTPLoads = allowsInsecureHTTPLoads
        self.minimumTLSVersion = minimumTLSVersion
        self.requiresForwardSecrecy = requiresForwardSecrecy
    }

    /// Reads an entry; only real booleans count (R1) and only the four exact version strings (R4).
    init(key: String, dictionary: [String: PlistValue]) {
        self.key = key
        self.isBuiltin = false
        includesSubdomains = dictionary[ATSKey.includesSubdomains]?.boolValue ?? false
        allowsInsecureHTTPLoads = dictionary[ATSKey.exceptionAllowsInsecureHTTPLoads]?.boolValue ?? false
        minimumTLSVersion = dictionary[ATSKey.exceptionMinimumTLSVersion]?.stringValue
            .flatMap(TLSVersion.init(rawValue:)) ?? .tls12
        requiresForwardSecrecy = dictionary[ATSKey.exceptionRequiresForwardSecrecy]?.boolValue ?? true
    }

    /// The name to show for the entry: the key, or `builtin:KEY` for a built-in (INTERFACE `exception`).
    public var displayName: String { isBuiltin ? "builtin:\(key)" : key }

    /// Built-in exceptions every app has (R9).
    public static let builtins: [ExceptionEntry] = [
        ("apple.com", TLSVersion.tls12), ("setup.icloud.com", .tls12),
        ("ls.apple.com", .tls10), ("gs.apple.com", .tls10), ("geo.apple.com", .tls10),
        ("is.autonavi.com", .tls10), ("apple-mapkit.com", .tls10),
    ].map {
        ExceptionEntry(key: $0.0, isBuiltin: true, includesSubdomains: true, allowsInsecureHTTPLoads: true,
                       minimumTLSVersion: $0.1, requiresForwardSecrecy: false)
    }
}

/// One NSPinnedDomains entry (R17). Identities are SHA-256 digests of SubjectPublicKeyInfo.
public struct PinnedDomain: Sendable, Hashable {
    public var key: String
    public var includesSubdomains: Bool
    /// nil when the array is absent; entries that are not valid base64 SHA-256 digests are dropped.
    public var caIdentities: [Data]?
    public var leafIdentities: [Data]?
}

/// An ATS dictionary interpreted by the rules of ATS-SPEC section 2.
public struct Policy: Sendable {
    public var source: PolicySource
    public var allowsArbitraryLoads: BooleanSetting
    public var allowsArbitraryLoadsForMedia: BooleanSetting
    public var allowsArbitraryLoadsInWebContent: BooleanSetting
    public var allowsLocalNetworking: BooleanSetting
    /// The app's own exception entries by key; values that are not dictionaries are left out (R3).
    public var exceptionDomains: [String: ExceptionEntry]
    public var pinnedDomains: [String: PinnedDomain]

    public init(_ source: PolicySource) {
        self.source = source
        let dictionary = source.dictionary
        func setting(_ key: String) -> BooleanSetting { BooleanSetting(key: key, raw: dictionary[key]) }
        allowsArbitraryLoads = setting(ATSKey.allowsArbitraryLoads)
        allowsArbitraryLoadsForMedia = setting(ATSKey.allowsArbitraryLoadsForMedia)
        allowsArbitraryLoadsInWebContent = setting(ATSKey.allowsArbitraryLoadsInWebContent)
        allowsLocalNetworking = setting(ATSKey.allowsLocalNetworking)

        var exceptions: [String: ExceptionEntry] = [:]
        for (key, value) in dictionary[ATSKey.exceptionDomains]?.dictionaryValue ?? [:] {
            guard let entry = value.dictionaryValue else { continue }
            exceptions[key] = ExceptionEntry(key: key, dictionary: entry)
        }
        exceptionDomains = exceptions

        var pins: [String: PinnedDomain] = [:]
        for (key, value) in dictionary[ATSKey.pinnedDomains]?.dictionaryValue ?? [:] {
            guard let entry = value.dictionaryValue else { continue }
            pins[key] = PinnedDomain(
                key: key,
                includesSubdomains: entry[ATSKey.includesSubdomains]?.boolValue ?? false,
                caIdentities: Policy.identities(entry[ATSKey.pinnedCAIdentities]),
                leafIdentities: Policy.identities(entry[ATSKey.pinnedLeafIdentities]))
        }
        pinnedDomains = pins
    }

    /// The embedded default: an empty dictionary, full ATS.
    public static let empty = Policy(.empty)

    /// Decodes an identity array; nil when absent or not an array.
    static func identities(_ value: PlistValue?) -> [Data]? {
        guard let items = value?.arrayValue else { return nil }
        return items.compactMap { item in
            item.dictionaryValue?[ATSKey.spkiSHA256]?.stringValue.flatMap(spkiDigest)
        }
    }

    /// A base64 SHA-256 digest (32 bytes), or nil.
    public static func spkiDigest(_ text: String) -> Data? {
        guard let data = Data(base64Encoded: text), data.count == 32 else { return nil }
        return data
    }
}
