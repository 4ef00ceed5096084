/// What the proxy does with cleartext HTTP to a host that forbids it (ATS-SPEC section 7).
public enum CleartextMode: String, Sendable, CaseIterable {
    /// Answer 403 with the reason.
    case block
    /// Carry the request to the origin over HTTPS under the host's requirements.
    case upgrade
    /// Answer 308 to the https URL.
    case redirect
}

/// The operator's settings that shape decisions, beside the app's dictionary.
public struct EngineOptions: Sendable {
    public var profile: Profile
    /// Built-in exceptions (R9); on by default.
    public var builtinExceptions: Bool
    /// Networks whose addresses are direct destinations (R6c).
    public var localNetworks: [IPNetwork]
    public var cleartext: CleartextMode

    public init(profile: Profile = .ios17, builtinExceptions: Bool = true,
                localNetworks: [IPNetwork] = EngineOptions.defaultLocalNetworks,
                cleartext: CleartextMode = .block) {
        self.profile = profile
        self.builtinExceptions = builtinExceptions
        self.localNetworks = localNetworks
        self.cleartext = cleartext
    }

    /// R6c's default local networks.
    public static let defaultLocalNetworks: [IPNetwork] = [
        "127.0.0.0/8", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16",
        "::1/128", "fe80::/10", "fc00::/7",
    ].map { IPNetwork.parse($0[...])!.network }
}
