/// The key names of the ATS dictionary (R2, R3, R17), in one place.
public enum ATSKey {
    public static let allowsArbitraryLoads = "NSAllowsArbitraryLoads"
    public static let allowsArbitraryLoadsForMedia = "NSAllowsArbitraryLoadsForMedia"
    public static let allowsArbitraryLoadsInWebContent = "NSAllowsArbitraryLoadsInWebContent"
    public static let allowsLocalNetworking = "NSAllowsLocalNetworking"
    public static let exceptionDomains = "NSExceptionDomains"
    public static let pinnedDomains = "NSPinnedDomains"

    public static let includesSubdomains = "NSIncludesSubdomains"
    public static let exceptionAllowsInsecureHTTPLoads = "NSExceptionAllowsInsecureHTTPLoads"
    public static let exceptionMinimumTLSVersion = "NSExceptionMinimumTLSVersion"
    public static let exceptionRequiresForwardSecrecy = "NSExceptionRequiresForwardSecrecy"

    public static let pinnedCAIdentities = "NSPinnedCAIdentities"
    public static let pinnedLeafIdentities = "NSPinnedLeafIdentities"
    public static let spkiSHA256 = "SPKI-SHA256-BASE64"

    /// Top-level keys the engine reads (R2).
    public static let topLevel: [String] = [
        allowsArbitraryLoads, allowsArbitraryLoadsForMedia, allowsArbitraryLoadsInWebContent,
        allowsLocalNetworking, exceptionDomains, pinnedDomains,
    ]
    /// Per-domain keys of NSExceptionDomains entries (R3).
    public static let exceptionEntry: [String] = [
        includesSubdomains, exceptionAllowsInsecureHTTPLoads, exceptionMinimumTLSVersion,
        exceptionRequiresForwardSecrecy,
    ]
    /// Keys of NSPinnedDomains entries (R17).
    public static let pinnedEntry: [String] = [includesSubdomains, pinnedCAIdentities, pinnedLeafIdentities]
}

/// A TLS protocol version as ATS names it (R4).
public enum TLSVersion: String, Sendable, Comparable, CaseIterable {
    case tls10 = "TLSv1.0"
    case tls11 = "TLSv1.1"
    case tls12 = "TLSv1.2"
    case tls13 = "TLSv1.3"

    /// The protocol version number on the wire.
    public var wireValue: UInt16 {
        switch self {
        case .tls10: 0x0301
        case .tls11: 0x0302
        case .tls12: 0x0303
        case .tls13: 0x0304
        }
    }

    public static func < (lhs: TLSVersion, rhs: TLSVersion) -> Bool { lhs.wireValue < rhs.wireValue }
}

/// Which OS generation's rules apply (ATS-SPEC section 1).
public enum Profile: String, Sendable, CaseIterable {
    case ios9
    case ios10
    case ios17
}

/// The API a load comes through (ATS-SPEC section 1).
public enum LoadContext: String, Sendable, CaseIterable {
    /// URLSession and everything else.
    case app
    /// AVFoundation.
    case media
    /// WKWebView.
    case web
}
