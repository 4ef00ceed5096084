import ATSPolicy
import TrafficLogs

/// The app's dictionary with the needed exceptions added and the unused keys removed, and the proof:
/// every recorded destination decided again under it.
public struct SuggestedPolicy: Sendable {
    public var source: PolicySource
    public var added: [PolicyChange]
    public var removed: [UnusedKey]
    /// Destinations still blocked under the suggestion, with why: what could not be proven.
    public var unproven: [(url: String, reasons: [String])]
    /// Removing the unused keys all together changed a decision, so they were kept (each alone changes none).
    public var keptUnused: Bool

    public var isProven: Bool { unproven.isEmpty }

    /// Builds the suggestion and proves it: under it, every recorded destination must be blocked for
    /// nothing it was not blocked for before (same action or better), a destination whose host needed
    /// nothing must be decided exactly as before, and what stays blocked is listed as unproven. Each
    /// removal alone changes no decision; should they change one together, they are all taken back.
    static func make(source: PolicySource, options: EngineOptions, traffic: [DestinationTraffic],
                     findings: [[Finding]], added: [PolicyChange], unused: [UnusedKey]) -> SuggestedPolicy {
        let original = DestinationJudge(policy: Policy(source), options: options)
        // Hosts with something blocked: the changes are for them, and a key such as
        // NSExceptionAllowsInsecureHTTPLoads relaxes all of a host's loads, not only the blocked ones.
        var fixedHosts: Set<String> = []
        // Only ATS findings count: the proxy's own refusals (a port, a client) are no key's business.
        for (index, recorded) in traffic.enumerated() where findings[index].contains(where: \.isATS) {
            fixedHosts.insert(original.decide(recorded)?.destination.host.description ?? recorded.host)
        }
        func prove(_ candidate: PolicySource) -> (ok: Bool, unproven: [(String, [String])]) {
            let judge = DestinationJudge(policy: Policy(candidate), options: options)
            var ok = true
            var unproven: [(String, [String])] = []
            for (index, recorded) in traffic.enumerated() {
                let after = judge.findings(recorded)
                // Never blocked for something new.
                if !Set(after).isSubset(of: Set(findings[index])) { ok = false }
                // A host that needed nothing is decided exactly as before: no change may relax (or
                // tighten) what it did not ask for.
                if let before = original.decide(recorded), !fixedHosts.contains(before.destination.host.description),
                   !original.decidesAlike(recorded, judge) {
                    ok = false
                }
                let stillBlocked = after.filter(\.isATS)
                if !stillBlocked.isEmpty { unproven.append((recorded.url, stillBlocked.map(\.reason))) }
            }
            return (ok, unproven)
        }
        let withAdditions = source.applying(added)
        let full = withAdditions.applying(unused.map(\.change))
        let proof = prove(full)
        if proof.ok {
            return SuggestedPolicy(source: full, added: added, removed: unused, unproven: proof.unproven, keptUnused: false)
        }
        let fallback = prove(withAdditions)
        var unproven = fallback.unproven
        if !fallback.ok { unproven.append(("(the suggestion)", ["a recorded destination is blocked for a new reason"])) }
        return SuggestedPolicy(source: withAdditions, added: added, removed: [], unproven: unproven,
                               keptUnused: !unused.isEmpty)
    }
}
