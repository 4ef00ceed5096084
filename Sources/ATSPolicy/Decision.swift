/// What the proxy does with a load (ATS-SPEC section 7).
public enum Action: String, Sendable {
    case allow
    case block
    case upgrade
}

/// The stable code of a block (ATS-SPEC section 7). Scripts depend on these strings.
public enum BlockReason: String, Sendable, CaseIterable {
    case cleartextHTTP = "cleartext-http"
    case cleartextInTunnel = "cleartext-in-tunnel"
    case tlsVersion = "tls-version"
    case cipherSuite = "cipher-suite"
    /// The ClientHello's server name differs from the CONNECT host (the proxy's own rule, not ATS).
    case sniMismatch = "sni-mismatch"
    case certificateUntrusted = "certificate-untrusted"
    case certificateExpired = "certificate-expired"
    case certificateHostname = "certificate-hostname"
    case certificateKeySize = "certificate-key-size"
    case certificateSignatureHash = "certificate-signature-hash"
    /// The leaf is valid longer than Apple allows (R15a: 825 days, 398 for publicly trusted leaves).
    case certificateLifetime = "certificate-lifetime"
    /// The leaf's extended key usage lacks serverAuth (R15a).
    case certificateUsage = "certificate-usage"
    case certificatePin = "certificate-pin"
    case certificateTransparency = "certificate-transparency"
    /// A CA of the chain is one Apple distrusts for certificates issued when the leaf was (R15).
    case certificateDistrusted = "certificate-distrusted"
    /// A TLS 1.2 server without the extended master secret (R18, system connections).
    case extendedMasterSecret = "extended-master-secret"
    case clientNotAllowed = "client-not-allowed"
    case portNotAllowed = "port-not-allowed"
    case authRequired = "auth-required"

    /// The proxy's own access rules (clients, ports, logins, the SNI rule): no ATS rule decides them,
    /// so no record or answer names one for them.
    public var isProxyRule: Bool {
        switch self {
        case .clientNotAllowed, .portNotAllowed, .authRequired, .sniMismatch: true
        default: false
        }
    }
}

/// The state of ATS for a destination (INTERFACE `ats`).
public enum ATSState: String, Sendable {
    case on
    case off
    /// A direct destination under R11.
    case exempt
    /// An exception entry decided (R10).
    case exception
}

/// Why the global keys left ATS on or off (R12).
public enum GlobalCause: Sendable, Equatable {
    /// NSAllowsArbitraryLoadsForMedia = YES and the load is AVFoundation's.
    case mediaLoadsAllowed
    /// NSAllowsArbitraryLoadsInWebContent = YES and the load is WKWebView's.
    case webContentAllowed
    /// NSAllowsLocalNetworking is present, which keeps ATS on for everything else.
    case localNetworkingPresent(overridesArbitraryLoads: Bool)
    /// NSAllowsArbitraryLoadsForMedia or ...InWebContent is present (named), which keeps ATS on.
    case contextKeyPresent(key: String, overridesArbitraryLoads: Bool)
    /// NSAllowsArbitraryLoads = YES.
    case arbitraryLoads
    /// Nothing switches ATS off; `ignoredArbitraryLoads` is a non-boolean NSAllowsArbitraryLoads value.
    case atsDefault(ignoredArbitraryLoads: PlistValue?)

    public var turnsATSOff: Bool {
        switch self {
        case .mediaLoadsAllowed, .webContentAllowed, .arbitraryLoads: true
        case .localNetworkingPresent, .contextKeyPresent, .atsDefault: false
        }
    }
}

/// Why a direct destination (R6c) was not exempt (R11).
public enum NotExemptCause: String, Sendable {
    /// NSAllowsLocalNetworking is NO.
    case localNetworkingNo = "local-networking-no"
    /// The ios9 profile has no local exemption.
    case ios9 = "ios9"
}

/// What decided the requirements for a destination.
public enum Basis: Sendable, Equatable {
    /// An exception entry applies and alone decides (R7-R10).
    case exception(ExceptionMatch)
    /// A direct destination is exempt (R11).
    case localExemption
    /// The global keys decided (R12); `notExempt` says why a direct destination was not exempt.
    case global(GlobalCause, notExempt: NotExemptCause?)
}

/// The engine's answer for one load: the requirements, the action and, for a block, the reason.
public struct Decision: Sendable {
    public var destination: Destination
    public var context: LoadContext
    public var profile: Profile
    /// The destination is direct (R6c) under the configured local networks.
    public var direct: Bool
    public var basis: Basis
    public var requirements: Requirements
    public var action: Action
    /// Set when the action is `block`.
    public var reason: BlockReason?
    /// For `upgrade`: whether the proxy carries the request over HTTPS or redirects the client.
    public var upgradeVia: CleartextMode?
    /// The NSPinnedDomains entry that applies (R17), if any.
    public var pin: PinnedDomain?

    public var ats: ATSState {
        switch basis {
        case .exception: .exception
        case .localExemption: .exempt
        case .global(let cause, _): cause.turnsATSOff ? .off : .on
        }
    }

    /// The exception entry that decided, if any.
    public var exception: ExceptionMatch? {
        if case .exception(let match) = basis { return match }
        return nil
    }

    /// The rule of ATS-SPEC that decided: R7 (name entry), R8 (IP entry), R9 (built-in entry),
    /// R11 (local exemption) or R12 (global keys).
    public var rule: String {
        switch basis {
        case .exception(let match):
            if match.entry.isBuiltin { return "R9" }
            return destination.host.hostClass == .ip ? "R8" : "R7"
        case .localExemption: return "R11"
        case .global: return "R12"
        }
    }
}
