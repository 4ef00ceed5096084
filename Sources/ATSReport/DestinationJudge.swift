import ATSPolicy
import TLSWire
import TrafficLogs

/// Why a destination would be blocked, found by deciding it again under a policy.
public struct Finding: Hashable, Sendable, Comparable {
    /// The block code (ATS-SPEC section 7), or a proxy rule's code.
    public var reason: String
    /// One sentence: what was seen and what the policy requires.
    public var detail: String
    /// An ATS decision (false for the proxy's own rules: ports, clients, SNI, authentication).
    public var isATS: Bool

    public static func < (lhs: Finding, rhs: Finding) -> Bool { (lhs.reason, lhs.detail) < (rhs.reason, rhs.detail) }
}

/// Decides a recorded destination again under a policy: the engine for the destination's requirements
/// (R7-R13), the recorded handshakes against them (R14), the recorded certificate findings when the
/// requirements include certificate checks (R15), pins (R17). Nothing here trusts the action the log
/// recorded for ATS: the log was written under whatever policy the proxy ran with.
public struct DestinationJudge: Sendable {
    public let engine: DecisionEngine

    public init(policy: Policy, options: EngineOptions) {
        var options = options
        // What iOS would do: cleartext a host forbids is blocked (upgrade and redirect are the proxy's).
        options.cleartext = .block
        engine = DecisionEngine(policy: policy, options: options)
    }

    /// The reason of a request no policy was routed to (`--unrouted block`).
    static let unroutedReason = "no-policy"

    /// The proxy's own refusals: not ATS, so no key of the app's dictionary changes them.
    static let proxyReasons: Set<String> = [
        "client-not-allowed", "port-not-allowed", "auth-required", "no-policy", BlockReason.sniMismatch.rawValue,
        "destination-not-allowed", "auth-throttled",
    ]

    /// The destination as the engine sees it; nil when the log's scheme or host is not one.
    public static func destination(_ traffic: DestinationTraffic) -> Destination? {
        guard let scheme = Scheme(rawValue: traffic.scheme), let host = try? Host.parse(traffic.host) else { return nil }
        return Destination(host: host, port: traffic.port, scheme: scheme)
    }

    /// The decision for the destination's first load context (the app's, when it had app loads).
    public func decide(_ traffic: DestinationTraffic) -> Decision? {
        DestinationJudge.destination(traffic).map { engine.decide($0, context: traffic.contexts[0]) }
    }

    /// A decision per load context the records came through (R12 differs for media and web content).
    public func decisions(_ traffic: DestinationTraffic) -> [Decision] {
        guard let destination = DestinationJudge.destination(traffic) else { return [] }
        return traffic.contexts.map { engine.decide(destination, context: $0) }
    }

    /// `traffic` is decided alike under this judge's policy and `other`'s, in every load context it had:
    /// the same requirements, action and ATS state.
    public func decidesAlike(_ traffic: DestinationTraffic, _ other: DestinationJudge) -> Bool {
        let mine = decisions(traffic), theirs = other.decisions(traffic)
        return mine.count == theirs.count && zip(mine, theirs).allSatisfy {
            $0.requirements == $1.requirements && $0.action == $1.action && $0.ats == $1.ats
        }
    }

    /// Every way the recorded traffic of `traffic` would be blocked under this policy, sorted.
    public func findings(_ traffic: DestinationTraffic) -> [Finding] {
        var found: Set<Finding> = []
        if traffic.count(.block) > 0 {
            for (reason, _) in traffic.reasons where DestinationJudge.proxyReasons.contains(reason) {
                found.insert(Finding(reason: reason, detail: DestinationJudge.proxyDetail(reason), isATS: false))
            }
        }
        // A request no policy was routed to was never decided: there is nothing of ATS to judge again.
        guard traffic.reasons[DestinationJudge.unroutedReason] != traffic.records else { return found.sorted() }
        for decision in decisions(traffic) { found.formUnion(findings(traffic, decision)) }
        return found.sorted()
    }

    /// The findings of one load context's decision.
    private func findings(_ traffic: DestinationTraffic, _ decision: Decision) -> Set<Finding> {
        var found: Set<Finding> = []
        func insert(_ reason: String, _ detail: String) {
            let suffix = decision.context == .app || traffic.contexts == [decision.context] ? ""
                : " (\(decision.context.rawValue) loads)"
            found.insert(Finding(reason: reason, detail: detail + suffix, isATS: true))
        }
        let host = decision.destination.host.description
        let requirements = decision.requirements
        switch decision.destination.scheme {
        case .http:
            if decision.action == .block {
                insert(BlockReason.cleartextHTTP.rawValue, "cleartext HTTP to \(host) is not allowed")
            }
        case .https:
            if traffic.reasons[BlockReason.cleartextInTunnel.rawValue] != nil, !requirements.cleartextAllowed {
                insert(BlockReason.cleartextInTunnel.rawValue, "the tunnel to \(host) carried cleartext, not TLS")
            }
            for handshake in traffic.handshakes {
                guard let version = DestinationJudge.wireVersion(handshake.version) else { continue }
                let suite = handshake.cipher.flatMap(CipherSuiteName.code)
                if let violation = requirements.wireViolation(version: version, suite: suite ?? 0x1301 /* judged below */,
                                                              host: host, versionName: handshake.version,
                                                              suiteName: handshake.cipher ?? "?") {
                    // Without a known suite only the version can be judged.
                    if suite != nil || violation.reason == .tlsVersion {
                        insert(violation.reason.rawValue, violation.message)
                    }
                    // The engine names the first rule broken; a suite without forward secrecy under an old
                    // version breaks two, and the fix needs both keys.
                    if violation.reason == .tlsVersion, let suite, version < 0x0303,
                       let second = requirements.wireViolation(version: 0x0303, suite: suite, host: host,
                                                               versionName: handshake.version, suiteName: handshake.cipher ?? "?"),
                       second.reason == .cipherSuite {
                        insert(second.reason.rawValue, second.message)
                    }
                }
            }
            for certificate in traffic.certificateFindings {
                if certificate == BlockReason.certificatePin.rawValue {
                    if let pin = engine.pinnedDomain(for: decision.destination.host) {
                        insert(certificate, "the certificate chain of \(host) matches no identity pinned by "
                            + "NSPinnedDomains entry '\(pin.key)'")
                    }
                } else if requirements.certificateChecks {
                    insert(certificate, "the certificate of \(host) fails ATS's checks (\(certificate))")
                }
            }
        }
        return found
    }

    static func proxyDetail(_ reason: String) -> String {
        switch reason {
        case "port-not-allowed": "the proxy refused the CONNECT port (its --connect-port list), not ATS"
        case "client-not-allowed": "the proxy refused the client (its --allow-client list), not ATS"
        case "auth-required": "the proxy asked for credentials the client did not give, not ATS"
        case "no-policy": "no policy was routed to this client (--unrouted block), not ATS"
        case "destination-not-allowed": "the proxy's destination ACL refused the address (--allow-dest, --deny-dest), not ATS"
        case "auth-throttled": "the proxy refused logins after too many failed ones from the client's address, not ATS"
        default: "the ClientHello's server name differed from the CONNECT host (the proxy's own rule, not ATS)"
        }
    }

    /// `TLSv1.2` -> 0x0303 (and SSLv3, which no ATS key allows).
    static func wireVersion(_ name: String) -> UInt16? {
        if let version = TLSVersion(rawValue: name) { return version.wireValue }
        if name == "SSLv3" { return TLSProtocolVersion.sslv3 }
        if name.hasPrefix("0x"), let value = UInt16(name.dropFirst(2), radix: 16) { return value }
        return nil
    }

    /// The suite needs RSA key exchange (forward secrecy off is enough) rather than no restriction at all.
    static func isRSAKeyExchange(_ name: String) -> Bool {
        guard let code = CipherSuiteName.code(name) else { return false }
        return Requirements(cleartextAllowed: false, minimumTLSVersion: nil, forwardSecrecy: false,
                            certificateChecks: true).cipherPolicy.allows(suite: code, version: 0x0303)
    }
}
