import Foundation

/// R16: a publicly trusted leaf (chaining to the judged store, not to a root the operator installed)
/// issued after 2018-10-15 carries enough SCTs, from every source (embedded, the TLS extension, a
/// stapled OCSP response).
///
/// Without a log list (`verifying` false) SCTs are counted by distinct log and not verified: 2 for a
/// leaf valid at most 180 days, 3 above. With one, Apple's policy (support article 103214) is applied
/// to the SCTs that verify and whose log counts at the SCT's time (`CTLogFacts.Standing`):
/// - at least 2 from distinct logs in all, and at least one from an RFC 6962 log (not a tiled one);
/// - and either the embedded SCTs: one from a currently approved log, and as many distinct logs as the
///   lifetime needs, counting at most 1 per log operator up to 180 days and 2 above;
/// - or SCTs delivered in the TLS extension or a stapled OCSP response, one of them from a currently
///   approved log, with as many distinct logs in all as the lifetime needs. Apple's text asks only 2
///   here whatever the lifetime; ATS-SPEC R16 asks the lifetime's number, and so does this rule.
/// Lifetime is Apple's: notBefore through notAfter inclusive, any part of a day counting as a day.
public struct CertificateTransparencyRule: ATSRule {
    /// 2018-10-15T00:00:00Z: Apple requires CT for leaves issued after it.
    public static let enforcementStart = Date(timeIntervalSince1970: 1_539_561_600)
    /// 2021-04-21T00:00:00Z: leaves issued from then on get Apple's current table (2 up to 180 days,
    /// 3 above); older ones the table by months.
    public static let currentTableStart = Date(timeIntervalSince1970: 1_618_963_200)

    /// Whether the SCTs were checked against a log list.
    public var verifying: Bool
    public var id: RuleID { .r16 }

    public init(verifying: Bool) {
        self.verifying = verifying
    }

    /// What Apple requires of a leaf: SCTs from so many distinct logs, and, for embedded SCTs, at most
    /// so many counted per log operator (nil: no cap).
    public struct Requirement: Sendable, Equatable {
        public var logs: Int
        public var perOperator: Int?
    }

    /// Days of validity as Apple counts them: notBefore through notAfter inclusive, 86,400 seconds a
    /// day, any time beyond a whole day an extra day.
    public static func lifetimeDays(_ lifetime: TimeInterval) -> Int {
        Int(((lifetime + 1) / 86_400).rounded(.up))
    }

    /// Apple's current table, for a leaf valid `lifetime` seconds (notAfter - notBefore).
    public static func requiredSCTs(lifetime: TimeInterval) -> Int {
        lifetimeDays(lifetime) <= 180 ? 2 : 3
    }

    /// The requirement for a leaf issued at `notBefore` and valid `lifetime` seconds.
    public static func requirement(notBefore: Date, lifetime: TimeInterval) -> Requirement {
        let days = lifetimeDays(lifetime)
        if notBefore >= currentTableStart {
            return days <= 180 ? Requirement(logs: 2, perOperator: 1) : Requirement(logs: 3, perOperator: 2)
        }
        // Apple's earlier table, in months (taken as 30.44 days): fewer than 15 months 2, up to 27
        // months 3, up to 39 months 4, more 5.
        let months = Double(days) / 30.44
        let logs = months < 15 ? 2 : months <= 27 ? 3 : months <= 39 ? 4 : 5
        return Requirement(logs: logs, perOperator: nil)
    }

    public func evaluate(_ facts: CertificateChainFacts) -> RuleResult {
        guard let leaf = facts.leaf, facts.anchor == .system, let notBefore = leaf.notBefore,
              notBefore > Self.enforcementStart, let lifetime = leaf.lifetime else { return .passes }
        let requirement = Self.requirement(notBefore: notBefore, lifetime: lifetime)
        let shortfall = verifying ? Self.policyShortfall(facts.scts, requirement) : Self.countShortfall(facts.scts, requirement)
        guard let shortfall else { return .passes }
        let host = facts.host
        let verifying = verifying
        let all = facts.scts
        return .fails(RuleFailure(id, .certificateTransparency, depth: 0) {
            let counted = all.filter { verifying ? $0.verified == true && $0.log?.standing.counts == true : $0.verified != false }
            let logs = Set(counted.map(\.logID)).count
            let bySource = SCTFacts.Source.allCases.compactMap { source -> String? in
                let count = all.filter { $0.source == source }.count
                return count == 0 ? nil : "\(count) \(source.rawValue)"
            }
            let failing = all.filter { $0.verified == false }.count
            var message = "certificate for \(host) has SCTs from \(logs) distinct log\(logs == 1 ? "" : "s")"
            if !bySource.isEmpty { message += " (\(bySource.joined(separator: ", ")))" }
            if failing > 0 { message += ", \(failing) failing verification against the log list" }
            let idle = all.filter { $0.verified != false }.compactMap { sct -> String? in
                guard let log = sct.log, case .notCounted(let state) = log.standing else { return nil }
                return "\(log.description) (\(state))"
            }
            if !idle.isEmpty { message += ", \(idle.count) from logs that do not count: \(idle.joined(separator: ", "))" }
            message += "; \(shortfall) for a publicly trusted leaf valid \(Self.lifetimeDays(lifetime)) days issued"
                + " after 2018-10-15 (have the CA embed more SCTs, or staple them"
                + (verifying ? ")" : "; SCTs were counted, not verified: --ct-log-list verifies them)")
            return message
        })
    }

    /// Without a log list: distinct logs of the SCTs not known to be bad.
    static func countShortfall(_ scts: [SCTFacts], _ requirement: Requirement) -> String? {
        let logs = Set(scts.filter { $0.verified != false }.map(\.logID)).count
        return logs >= requirement.logs ? nil : "Apple requires \(requirement.logs)"
    }

    /// Apple's policy over the SCTs that verify and whose log counts; nil when it is met, else what is
    /// missing, in words.
    static func policyShortfall(_ scts: [SCTFacts], _ requirement: Requirement) -> String? {
        let counted = scts.filter { $0.verified == true && $0.log?.standing.counts == true }
        let distinct = Set(counted.map(\.logID)).count
        let need = requirement.logs
        guard distinct >= 2 else { return "Apple requires at least 2 from distinct logs, and \(need) for this leaf" }
        guard counted.contains(where: { $0.log?.rfc6962 == true }) else {
            return "Apple requires at least one from an RFC 6962 log, and every SCT that counts is from a tiled"
                + " (static-ct-api) log"
        }
        let approved = counted.filter { $0.log?.standing == .approved }
        let embedded = counted.filter { $0.source == .embedded }
        var perOperator: [String: Set<[UInt8]>] = [:]
        for sct in embedded { perOperator[sct.log?.operatorName ?? "", default: []].insert(sct.logID) }
        let cappedCount = perOperator.values.reduce(0) { $0 + min($1.count, requirement.perOperator ?? Int.max) }
        // Delivered with the handshake: the lifetime's number of distinct logs in all, and a delivered SCT
        // from a currently approved log.
        if approved.contains(where: { $0.source != .embedded }), distinct >= need { return nil }
        // Embedded: the lifetime's number of distinct logs under the per-operator cap, one of them
        // currently approved.
        if approved.contains(where: { $0.source == .embedded }), cappedCount >= need { return nil }
        if embedded.isEmpty {
            return distinct < need ? "Apple requires \(need) from distinct logs"
                : "Apple requires one from a currently approved log (qualified, usable or read-only)"
        }
        if cappedCount >= need {
            return "Apple requires one embedded SCT from a currently approved log (qualified, usable or read-only)"
        }
        let distinctEmbedded = Set(embedded.map(\.logID)).count
        let cap = requirement.perOperator.map { cap in
            cappedCount < distinctEmbedded
                ? " (at most \(cap) per log operator counts: \(cappedCount) of the \(distinctEmbedded) embedded do)"
                : " (at most \(cap) per log operator)"
        } ?? ""
        return "Apple requires \(need) embedded from distinct logs\(cap), or \(need) in all with one delivered"
            + " in the TLS extension or a stapled OCSP response"
    }
}
