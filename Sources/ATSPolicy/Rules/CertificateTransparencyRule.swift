import Foundation

/// R16: a publicly trusted leaf (chaining to the system store) issued after 2018-10-15 carries SCTs from
/// enough distinct logs: 2 when it is valid for at most 180 days, 3 above. SCTs count from every source
/// (embedded, the TLS extension, a stapled OCSP response). An SCT a log list check found bad
/// (`verified == false`) does not count; unverified ones (no log list) do: without a log list the rule
/// counts and does not verify.
public struct CertificateTransparencyRule: ATSRule {
    /// 2018-10-15T00:00:00Z: Apple requires CT for leaves issued after it.
    public static let enforcementStart = Date(timeIntervalSince1970: 1_539_561_600)

    /// Whether the SCTs were checked against a log list (for the message).
    public var verifying: Bool
    public var id: RuleID { .r16 }

    public init(verifying: Bool) {
        self.verifying = verifying
    }

    /// Apple's threshold for a leaf valid `lifetime` seconds.
    public static func requiredSCTs(lifetime: TimeInterval) -> Int {
        lifetime <= 180 * 86_400 ? 2 : 3
    }

    public func evaluate(_ facts: CertificateChainFacts) -> RuleResult {
        guard let leaf = facts.leaf, facts.anchor == .system, let notBefore = leaf.notBefore,
              notBefore > Self.enforcementStart, let lifetime = leaf.lifetime else { return .passes }
        let counted = facts.scts.filter { $0.verified != false }
        let logs = Set(counted.map(\.logID)).count
        let required = Self.requiredSCTs(lifetime: lifetime)
        guard logs < required else { return .passes }
        let host = facts.host
        let verifying = verifying
        let all = facts.scts
        return .fails(RuleFailure(id, .certificateTransparency) {
            let bySource = SCTFacts.Source.allCases.compactMap { source -> String? in
                let count = all.filter { $0.source == source }.count
                return count == 0 ? nil : "\(count) \(source.rawValue)"
            }
            let rejected = all.filter { $0.verified == false }.count
            let days = Int((lifetime / 86_400).rounded(.up))
            var message = "certificate for \(host) has SCTs from \(logs) distinct log\(logs == 1 ? "" : "s")"
            if !bySource.isEmpty { message += " (\(bySource.joined(separator: ", ")))" }
            if rejected > 0 { message += ", \(rejected) failing verification against the log list" }
            message += "; Apple requires \(required) for a publicly trusted leaf valid \(days) days issued after"
                + " 2018-10-15 (have the CA embed more SCTs, or staple them"
                + (verifying ? ")" : "; SCTs were counted, not verified: --ct-log-list verifies them)")
            return message
        })
    }
}

