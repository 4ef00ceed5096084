/// Turns a policy and a destination into a decision (ATS-SPEC sections 3-7). Pure and thread-safe.
///
/// The data flow reads top to bottom: exception entry (R7-R10), else local exemption (R11), else the
/// global keys (R12); the requirements that follow (R13), then the action for the scheme.
public struct DecisionEngine: Sendable {
    public let policy: Policy
    public let options: EngineOptions
    private let table: ExceptionTable

    public init(policy: Policy, options: EngineOptions = EngineOptions()) {
        self.policy = policy
        self.options = options
        self.table = ExceptionTable(policy: policy, profile: options.profile, builtins: options.builtinExceptions)
    }

    public func decide(_ destination: Destination, context: LoadContext = .app) -> Decision {
        let direct = isDirect(destination.host)
        let basis = self.basis(for: destination.host, direct: direct, context: context)
        let requirements: Requirements
        switch basis {
        case .exception(let match): requirements = Requirements(entry: match.entry)
        case .localExemption: requirements = .none
        case .global(let cause, _): requirements = cause.turnsATSOff ? .none : .full
        }

        var action = Action.allow
        var reason: BlockReason?
        var upgradeVia: CleartextMode?
        if destination.scheme == .http, !requirements.cleartextAllowed {
            switch options.cleartext {
            case .block:
                action = .block
                reason = .cleartextHTTP
            case .upgrade, .redirect:
                action = .upgrade
                upgradeVia = options.cleartext
            }
        }
        return Decision(destination: destination, context: context, profile: options.profile, direct: direct,
                        basis: basis, requirements: requirements, action: action, reason: reason,
                        upgradeVia: upgradeVia, pin: pinnedDomain(for: destination.host))
    }

    /// R6c under the profile: local and unqualified names, addresses in the local networks, and under
    /// ios10 every IP literal.
    public func isDirect(_ host: Host) -> Bool {
        switch host {
        case .name:
            return host.hostClass != .public
        case .address(let address):
            if options.profile == .ios10 { return true }
            return options.localNetworks.contains { $0.contains(address) }
        }
    }

    private func basis(for host: Host, direct: Bool, context: LoadContext) -> Basis {
        if let match = table.lookup(host) { return .exception(match) }

        var notExempt: NotExemptCause?
        if direct {
            if options.profile == .ios9 {
                notExempt = .ios9
            } else if policy.allowsLocalNetworking.raw == .bool(false) {
                // Only a real NO revokes the exemption: R1 gives a non-boolean value presence in R12 alone,
                // and Apple's evaluator treats it as absent here.
                notExempt = .localNetworkingNo
            } else {
                return .localExemption
            }
        }
        return .global(globalCause(context: context), notExempt: notExempt)
    }

    /// R12, in its order.
    private func globalCause(context: LoadContext) -> GlobalCause {
        let arbitrary = policy.allowsArbitraryLoads
        if options.profile != .ios9 {
            let media = policy.allowsArbitraryLoadsForMedia
            let web = policy.allowsArbitraryLoadsInWebContent
            if media.isYes, context == .media { return .mediaLoadsAllowed }
            if web.isYes, context == .web { return .webContentAllowed }
            if policy.allowsLocalNetworking.isPresent {
                return .localNetworkingPresent(overridesArbitraryLoads: arbitrary.isYes)
            }
            if media.isPresent || web.isPresent {
                return .contextKeyPresent(key: media.isPresent ? media.key : web.key,
                                          overridesArbitraryLoads: arbitrary.isYes)
            }
        }
        if arbitrary.isYes { return .arbitraryLoads }
        return .atsDefault(ignoredArbitraryLoads: arbitrary.isIgnoredValue ? arbitrary.raw : nil)
    }

    /// R17: the exact host's pin entry, or its immediate parent's when that entry includes subdomains.
    public func pinnedDomain(for host: Host) -> PinnedDomain? {
        guard !policy.pinnedDomains.isEmpty, case .name(let name) = host else { return nil }
        if let exact = policy.pinnedDomains[name] { return exact }
        guard let dot = name.firstIndex(of: ".") else { return nil }
        let parent = String(name[name.index(after: dot)...])
        if let entry = policy.pinnedDomains[parent], entry.includesSubdomains { return entry }
        return nil
    }
}
