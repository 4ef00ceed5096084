import ATSPolicy
import TrafficLogs

/// The narrowest change to an app's dictionary that lets a blocked destination through, or why no key can.
public struct DestinationFix: Sendable {
    /// The edits that concern this destination's host (shared with its other ports and schemes): keys on
    /// the exact host, never a parent's.
    public var changes: [PolicyChange] = []
    /// What the changes also do beyond this destination (insecure loads turn certificate checks off).
    public var scope: String?
    /// One parent entry with NSIncludesSubdomains that would fix this host and its blocked siblings at
    /// once: shown beside the fix, used by `--consolidate`.
    public var alternative: ConsolidatedFix?
    /// Findings no key fixes, each with what to do instead.
    public var unfixable: [(finding: Finding, advice: String)] = []
    /// The destination was decided again under the policy with `changes`, and only `unfixable` remain.
    public var verified = false

    public var needsJustification: Bool { changes.contains(where: \.needsJustification) }
}

/// A parent entry that replaces several hosts' own entries, and what it opens besides them.
public struct ConsolidatedFix: Sendable {
    public var parent: String
    public var changes: [PolicyChange]
    /// The blocked hosts it fixes.
    public var hosts: [String]
    /// The recorded destinations (scheme, host, port) of those hosts.
    public var destinations: Int
    /// Other recorded destinations under the parent (decided exactly as before under it).
    public var others: Int

    /// What the entry opens that the recording does not need, in one sentence.
    public var opens: String {
        "it also allows cleartext, and turns certificate checks off, for \(parent) itself and every other "
            + "subdomain of it, recorded or not"
    }

    /// `covers 2 recorded destinations (a.media.example.net, b.media.example.net)`.
    public var summary: String {
        var text = "covers \(destinations) recorded destination\(destinations == 1 ? "" : "s") ("
            + hosts.joined(separator: ", ") + ")"
        if others > 0 { text += " and \(others) other\(others == 1 ? "" : "s") under it, decided as before" }
        return text
    }
}
/// Computes fixes with the decision engine: each candidate change is applied to the policy and the
/// recorded traffic decided again; a change is only suggested when that re-decision shows it works,
/// and a parent entry only when nothing else recorded under it would be decided differently.
struct FixPlanner {
    let source: PolicySource
    let options: EngineOptions
    let traffic: [DestinationTraffic]
    /// Findings per destination (same order as `traffic`) under the unchanged policy.
    let findings: [[Finding]]
    let judge: DestinationJudge

    /// What one host needs, gathered over its destinations.
    private struct Needs {
        var cleartext = false
        var minimumVersion: TLSVersion?
        var forwardSecrecyOff = false
        /// A suite outside even the RSA set: only cleartext-allowed requirements accept it (R14).
        var anyCipher = false
        var decision: Decision
    }

    /// Fixes per destination index (nil for a destination with nothing blocked), and every change: the
    /// narrowest (each host its own keys), and consolidated (parent entries where they apply).
    func plan() -> (fixes: [DestinationFix?], narrowest: [PolicyChange], consolidated: [PolicyChange]) {
        // Decided once: every step below asks again about the same destinations.
        let decisions = traffic.map(judge.decide)
        let hosts = decisions.map { $0?.destination.host.description }
        var gathered = gatherNeeds(decisions)
        if !gathered.globalChanges.isEmpty {
            let relaxed = DestinationJudge(policy: Policy(source.applying(gathered.globalChanges)), options: options)
            if globalChangeAltersOthers(relaxed, blockedHosts: Set(gathered.needs.keys), hosts: hosts) {
                gathered.globalChanges = []
            } else {
                dropHostsFixedGlobally(&gathered.needs, relaxed: relaxed, hosts: hosts)
            }
        }
        var edits = hostEntries(gathered.needs, decisions: decisions)
        edits.global = gathered.globalChanges
        edits.scopes = certificateScopes(gathered.needs, hosts: hosts)
        let (narrowest, consolidated) = changeLists(edits)
        let fixes = verifiedFixes(edits, unfixable: gathered.unfixable, decisions: decisions, hosts: hosts)
        return (fixes, narrowest, consolidated)
    }

    /// What the blocked destinations ask of the dictionary: the keys each host needs, the findings no key
    /// fixes (with what to do instead), and the global key for local destinations.
    private struct Gathered {
        var needs: [String: Needs] = [:]
        var unfixable: [Int: [(Finding, String)]] = [:]
        var globalChanges: [PolicyChange] = []
    }

    /// The changes worked out per host, and what they say about the host's other loads.
    private struct Edits {
        var global: [PolicyChange] = []
        /// The narrowest: each host its own keys.
        var byHost: [String: [PolicyChange]] = [:]
        /// A parent entry that would replace the host's own, where one is proven.
        var alternatives: [String: ConsolidatedFix] = [:]
        /// What the host's changes also do beyond its blocked loads.
        var scopes: [String: String] = [:]
    }

    /// Step 1: every blocked destination's findings, turned into the keys its host needs or the advice
    /// for what no key fixes.
    private func gatherNeeds(_ decisions: [Decision?]) -> Gathered {
        var gathered = Gathered()
        for (index, found) in findings.enumerated() where !found.isEmpty {
            guard let decision = decisions[index] else {
                gathered.unfixable[index] = found.map { ($0, "the log's host '\(traffic[index].host)' is not one ATS can name") }
                continue
            }
            let host = decision.destination.host.description
            var hostNeeds = gathered.needs[host] ?? Needs(decision: decision)
            if case .global(_, .localNetworkingNo?) = decision.basis, found.contains(where: \.isATS) {
                // A local destination that NSAllowsLocalNetworking=NO took out of the exemption (R11):
                // the key the profile reads for local destinations is the fix.
                let change = PolicyChange.setGlobal(key: ATSKey.allowsLocalNetworking, value: .bool(true))
                if !gathered.globalChanges.contains(change) { gathered.globalChanges.append(change) }
            }
            for finding in found {
                if let advice = addNeed(of: finding, at: index, decision: decision, to: &hostNeeds) {
                    gathered.unfixable[index, default: []].append((finding, advice))
                }
            }
            gathered.needs[host] = hostNeeds
        }
        return gathered
    }

    /// Adds what `finding` (of the destination at `index`) needs to its host's needs; returns what to do
    /// instead when no key of the dictionary fixes it.
    private func addNeed(of finding: Finding, at index: Int, decision: Decision, to hostNeeds: inout Needs) -> String? {
        let host = decision.destination.host.description
        switch finding.reason {
        case BlockReason.cleartextHTTP.rawValue, BlockReason.cleartextInTunnel.rawValue:
            hostNeeds.cleartext = true
        case BlockReason.tlsVersion.rawValue:
            let seen = traffic[index].handshakes.compactMap { TLSVersion(rawValue: $0.version) }
            let minimum = decision.requirements.minimumTLSVersion
            let lowest = seen.filter { minimum == nil || $0 < minimum! }.min()
            if let lowest {
                hostNeeds.minimumVersion = min(lowest, hostNeeds.minimumVersion ?? lowest)
            } else {
                return "no ATS key allows a version below TLSv1.0: fix the server (enable TLSv1.2 or later)"
            }
        case BlockReason.cipherSuite.rawValue:
            let weak = traffic[index].handshakes.compactMap(\.cipher)
                .filter { !decision.requirements.cipherPolicy.allows(
                    suite: CipherSuiteName.code($0) ?? 0, version: 0x0303) }
            hostNeeds.forwardSecrecyOff = true
            if !weak.allSatisfy(DestinationJudge.isRSAKeyExchange) { hostNeeds.anyCipher = true }
        case BlockReason.certificatePin.rawValue:
            let pin = judge.engine.pinnedDomain(for: decision.destination.host)?.key ?? host
            return "the pins: NSPinnedDomains entry '\(pin)' pins no key of the chain \(host) serves; add the "
                + "SPKI-SHA256-BASE64 of the server's (or its CA's) key to NSPinnedCAIdentities or "
                + "NSPinnedLeafIdentities, or fix the server's certificate"
        case BlockReason.certificateDistrusted.rawValue:
            return "fix the server: \(host)'s certificate comes from a CA that Apple distrusts for certificates issued"
                + " after a date; get one from another CA (no ATS key makes the device trust it)"
        case let reason where reason.hasPrefix("certificate-"):
            return "fix the server: give \(host) a certificate that passes (\(reason)); the only key that would "
                + "allow it, NSExceptionAllowsInsecureHTTPLoads=YES, turns certificate checks off for \(host) altogether"
        default:
            return "not an ATS decision: no key of the app's dictionary changes it; fix the proxy's configuration "
                + "or the client"
        }
        return nil
    }

    /// Step 2: the global key only when it changes nothing else recorded (other local destinations that
    /// were fine under ATS would lose it); otherwise the hosts get exception entries like any other.
    private func globalChangeAltersOthers(_ relaxed: DestinationJudge, blockedHosts: Set<String>,
                                          hosts: [String?]) -> Bool {
        let others = traffic.indices.filter { index in
            guard let host = hosts[index] else { return false }
            return !blockedHosts.contains(host)
        }
        return others.contains(where: { !judge.decidesAlike(traffic[$0], relaxed) })
    }

    /// Step 3: hosts the global change already fixes need no entry.
    private func dropHostsFixedGlobally(_ needs: inout [String: Needs], relaxed: DestinationJudge, hosts: [String?]) {
        var stillBlocked: Set<String> = []
        for index in traffic.indices where !findings[index].isEmpty {
            if let host = hosts[index], relaxed.findings(traffic[index]).contains(where: \.isATS) { stillBlocked.insert(host) }
        }
        for host in needs.keys where !stillBlocked.contains(host) { needs[host] = nil }
    }

    /// Step 4: each host's entry. Hosts that need only cleartext may share a parent entry (offered as the
    /// alternative); the rest get an entry of their own.
    private func hostEntries(_ needs: [String: Needs], decisions: [Decision?]) -> Edits {
        var edits = Edits()
        var cleartextOnly: Set<String> = []
        for (host, hostNeeds) in needs {
            let onlyCleartext = hostNeeds.cleartext && hostNeeds.minimumVersion == nil && !hostNeeds.forwardSecrecyOff
            if onlyCleartext, case .name = hostNeeds.decision.destination.host, !ownsExactEntry(hostNeeds.decision) {
                cleartextOnly.insert(host)
            } else {
                edits.byHost[host] = entryChanges(host: host, needs: hostNeeds)
            }
        }
        for group in parentGroups(cleartextOnly, decisions: decisions) {
            for member in group.hosts { edits.alternatives[member] = group }
        }
        for host in cleartextOnly { edits.byHost[host] = entryChanges(host: host, needs: needs[host]!) }
        return edits
    }

    /// Step 5: said where it matters: insecure loads also turn certificate checks off for the host's HTTPS
    /// (R10, R15).
    private func certificateScopes(_ needs: [String: Needs], hosts: [String?]) -> [String: String] {
        var scopes: [String: String] = [:]
        let httpsHosts = Set(traffic.indices.filter { traffic[$0].scheme == Scheme.https.rawValue }.compactMap { hosts[$0] })
        for (host, hostNeeds) in needs where (hostNeeds.cleartext || hostNeeds.anyCipher) && httpsHosts.contains(host) {
            let note = "NSExceptionAllowsInsecureHTTPLoads also turns certificate checks off for \(host)'s HTTPS loads"
            scopes[host] = scopes[host].map { $0 + "; " + note } ?? note
        }
        return scopes
    }

    /// Step 6: every change once, the global key first, then the hosts by name: each host's own keys
    /// (narrowest), or its parent entry where one is proven (consolidated).
    private func changeLists(_ edits: Edits) -> (narrowest: [PolicyChange], consolidated: [PolicyChange]) {
        var narrowest = edits.global
        var consolidated = edits.global
        var seen: Set<[String]> = [], seenConsolidated: Set<[String]> = []
        for host in edits.byHost.keys.sorted() {
            let own = edits.byHost[host]!
            for change in own where seen.insert(change.keyPath).inserted { narrowest.append(change) }
            for change in edits.alternatives[host]?.changes ?? own where seenConsolidated.insert(change.keyPath).inserted {
                consolidated.append(change)
            }
        }
        return (narrowest, consolidated)
    }

    /// Step 7: each blocked destination's fix, verified by deciding the destination again under the
    /// policy with its changes.
    private func verifiedFixes(_ edits: Edits, unfixable: [Int: [(Finding, String)]], decisions: [Decision?],
                               hosts: [String?]) -> [DestinationFix?] {
        var fixes: [DestinationFix?] = Array(repeating: nil, count: traffic.count)
        var verifier: (key: String, judge: DestinationJudge)?
        for (index, found) in findings.enumerated() where !found.isEmpty {
            var fix = DestinationFix()
            fix.unfixable = unfixable[index] ?? []
            let decision = decisions[index]
            let host = hosts[index]
            if case .global(_, .localNetworkingNo?)? = decision?.basis { fix.changes = edits.global }
            if let host, let changes = edits.byHost[host] { fix.changes += changes }
            fix.scope = host.flatMap { edits.scopes[$0] }
            fix.alternative = host.flatMap { edits.alternatives[$0] }
            // One judge per host: a host's ports and schemes share its changes, and sit next to each other
            // (destinations are sorted by host), so only the last judge is kept.
            let cacheKey = (host ?? traffic[index].host) + (fix.changes.isEmpty ? "" : " changed")
            if verifier?.key != cacheKey {
                verifier = (cacheKey, fix.changes.isEmpty ? judge
                    : DestinationJudge(policy: Policy(source.applying(fix.changes)), options: options))
            }
            let after = verifier!.judge.findings(traffic[index])
            let remaining = Set(after.map(\.reason))
            fix.verified = remaining == Set(fix.unfixable.map(\.finding.reason))
            fixes[index] = fix
        }
        return fixes
    }

    /// The host has an app entry of its own (an exact key), which is where its keys belong.
    private func ownsExactEntry(_ decision: Decision) -> Bool {
        guard let match = decision.exception else { return false }
        return match.kind == .exact && !match.entry.isBuiltin
    }

    /// Edits that give `host` the keys it needs: in its own entry when it has one, else in a new entry
    /// that starts as a copy of the entry that decided it (so its other requirements stay as they were).
    private func entryChanges(host: String, needs: Needs) -> [PolicyChange] {
        var changes: [PolicyChange] = []
        let decision = needs.decision
        if !ownsExactEntry(decision), let entry = decision.exception?.entry {
            // An app entry with a built-in's key replaces the built-in for all its subdomains (R9).
            if entry.isBuiltin, entry.key == host, entry.includesSubdomains {
                changes.append(.setEntryKey(domain: host, key: ATSKey.includesSubdomains, value: .bool(true)))
            }
            if entry.allowsInsecureHTTPLoads {
                changes.append(.setEntryKey(domain: host, key: ATSKey.exceptionAllowsInsecureHTTPLoads, value: .bool(true)))
            }
            if entry.minimumTLSVersion != .tls12, needs.minimumVersion == nil {
                changes.append(.setEntryKey(domain: host, key: ATSKey.exceptionMinimumTLSVersion,
                                            value: .string(entry.minimumTLSVersion.rawValue)))
            }
            if !entry.requiresForwardSecrecy, !needs.forwardSecrecyOff {
                changes.append(.setEntryKey(domain: host, key: ATSKey.exceptionRequiresForwardSecrecy, value: .bool(false)))
            }
        }
        if needs.cleartext || needs.anyCipher {
            let change = PolicyChange.setEntryKey(domain: host, key: ATSKey.exceptionAllowsInsecureHTTPLoads, value: .bool(true))
            if !changes.contains(change) { changes.append(change) }
        }
        if let version = needs.minimumVersion {
            changes.append(.setEntryKey(domain: host, key: ATSKey.exceptionMinimumTLSVersion, value: .string(version.rawValue)))
        }
        if needs.forwardSecrecyOff {
            let change = PolicyChange.setEntryKey(domain: host, key: ATSKey.exceptionRequiresForwardSecrecy, value: .bool(false))
            if !changes.contains(change) { changes.append(change) }
        }
        return changes
    }

    /// Two-label suffixes under which registrations sit; never suggested as a parent entry.
    private static let sharedSuffixes: Set<String> = [
        "co.uk", "org.uk", "ac.uk", "gov.uk", "com.au", "net.au", "org.au", "co.jp", "ne.jp", "or.jp", "co.nz",
        "com.br", "com.cn", "com.mx", "co.in", "co.kr", "co.za", "com.tr", "com.tw", "github.io", "appspot.com",
        "cloudfront.net", "herokuapp.com", "azurewebsites.net", "s3.amazonaws.com",
    ]

    /// Parents with NSIncludesSubdomains that can replace several hosts' own entries: the most specific
    /// ancestor shared by two or more of `hosts`, accepted only when the engine shows that every member's
    /// cleartext block goes and every other recorded destination under it keeps its decision.
    private func parentGroups(_ hosts: Set<String>, decisions: [Decision?]) -> [ConsolidatedFix] {
        let candidates = parentCandidates(hosts)
        // The recorded destinations under each candidate (the name itself or a subdomain), found once.
        var under: [String: [Int]] = [:]
        for (index, decision) in decisions.enumerated() {
            guard let decision, case .name(let host) = decision.destination.host else { continue }
            var rest = Substring(host)
            while true {
                if candidates[String(rest)] != nil { under[String(rest), default: []].append(index) }
                guard let dot = rest.firstIndex(of: ".") else { break }
                rest = rest[rest.index(after: dot)...]
            }
        }
        var assigned: Set<String> = []
        var groups: [ConsolidatedFix] = []
        // Most specific first (more labels), then by name for a stable result.
        let ordered = candidates.keys.sorted {
            let a = $0.split(separator: ".").count, b = $1.split(separator: ".").count
            return a != b ? a > b : $0 < $1
        }
        for parent in ordered {
            let members = candidates[parent]!.subtracting(assigned)
            guard members.count >= 2 else { continue }
            let changes: [PolicyChange] = [
                .setEntryKey(domain: parent, key: ATSKey.includesSubdomains, value: .bool(true)),
                .setEntryKey(domain: parent, key: ATSKey.exceptionAllowsInsecureHTTPLoads, value: .bool(true)),
            ]
            let candidate = DestinationJudge(policy: Policy(source.applying(changes)), options: options)
            guard let covered = provenCoverage(candidate, members: members, under: under[parent] ?? [],
                                               decisions: decisions) else { continue }
            assigned.formUnion(members)
            let count = under[parent]?.count ?? 0
            groups.append(ConsolidatedFix(parent: parent, changes: changes, hosts: members.sorted(), destinations: covered,
                                          others: count - covered))
        }
        return groups
    }

    /// The ancestors of `hosts` (two labels or more, stopping at a shared suffix), each with the hosts under
    /// it.
    private func parentCandidates(_ hosts: Set<String>) -> [String: Set<String>] {
        var candidates: [String: Set<String>] = [:]
        for host in hosts {
            var labels = host.split(separator: ".", omittingEmptySubsequences: false)
            while labels.count > 2 {
                labels.removeFirst()
                let parent = labels.joined(separator: ".")
                if FixPlanner.sharedSuffixes.contains(parent) { break }
                candidates[parent, default: []].insert(host)
            }
        }
        return candidates
    }

    /// How many of the recorded destinations `under` a parent entry belong to `members`, when the policy
    /// with that entry (`candidate`) is proven over all of them; nil when a member keeps an ATS block
    /// that a key could fix, or another destination under it is decided differently.
    private func provenCoverage(_ candidate: DestinationJudge, members: Set<String>, under: [Int],
                                decisions: [Decision?]) -> Int? {
        var covered = 0
        for index in under {
            let recorded = traffic[index]
            guard let before = decisions[index] else { continue }
            let host = before.destination.host.description
            if members.contains(host) {
                covered += 1
                // Members keep nothing ATS-blocked apart from what no key fixes.
                let left = candidate.findings(recorded).filter { $0.isATS && !$0.reason.hasPrefix("certificate-") }
                if !left.isEmpty { return nil }
            } else {
                if !judge.decidesAlike(recorded, candidate) || candidate.findings(recorded) != findings[index] {
                    return nil
                }
            }
        }
        return covered
    }
}
