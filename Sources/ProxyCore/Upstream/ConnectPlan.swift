import ATSPolicy
import DNS
import ProxyAccess
import ProxyAnswers

/// The upstream connector's choices, as a value with no I/O: which way to try (the origin, or the
/// parent proxies in order) and, when a way fails, what comes next: the next parent, or the verdict
/// whose failure says most. UpstreamConnector does the resolving and connecting and tells it what
/// happened; its tests tell it the same with no socket.
struct ConnectPlan {
    /// What the connector does next.
    enum Step {
        /// Resolve `host` and race its addresses: the origin's (`via` nil) or a parent proxy's.
        case connect(Host, port: Int, via: ParentProxy?)
        /// Pass this parent over for a while (ParentHealth): it could not be reached.
        case passOver(ParentProxy)
        /// Give up: the client's answer.
        case refuse(Verdict)
    }

    let destination: Destination
    /// Parents still to try, in order; none from the start: straight to the origin.
    private(set) var parents: ArraySlice<ParentProxy>
    /// The parent being tried (or tried last).
    private(set) var parent: ParentProxy?
    /// The families of this way's name that gave no address, and why.
    private(set) var lookupFailures: [LookupFailure] = []
    /// Every address a family gave was refused by the destination ACL: the answer, when no other
    /// family leaves an address to try.
    private(set) var denial: Verdict?
    /// Why the parents tried so far failed, for the message when none is left.
    private(set) var parentProblems: [String] = []

    init(destination: Destination, parents: [ParentProxy]) {
        self.destination = destination
        self.parents = parents[...]
    }

    /// The first way: straight to the origin, or the first parent. Through a parent, which resolves
    /// the name itself, `refusedThroughParent` is the destination ACL's verdict on the host as the
    /// client named it.
    mutating func start(refusedThroughParent: Verdict?) -> [Step] {
        if parents.isEmpty { return [.connect(destination.host, port: destination.port, via: nil)] }
        if let refusedThroughParent { return [.refuse(refusedThroughParent)] }
        return nextParent()
    }

    /// A family of this way's name gave no address.
    mutating func lookupFailed(_ failure: LookupFailure) {
        lookupFailures.append(failure)
    }

    /// The destination ACL refused every address a family of the origin's name gave.
    mutating func denied(_ verdict: Verdict) {
        denial = verdict
    }

    /// The race of this way's addresses ended without a connection, after `attempted` attempts
    /// (`problem`: the last error, or "no address"). Nothing tried: a refusal says most (a name of the
    /// host's own may also lack an IPv6 address), then why the name gave no address.
    mutating func raceFailed(_ problem: String, attempted: Int) -> [Step] {
        if parent != nil {
            let why = attempted == 0 && !lookupFailures.isEmpty
                ? "cannot resolve it: " + lookupFailures.map(\.message).joined(separator: "; ")
                : "cannot connect: \(problem)"
            return parentFailed(why)
        }
        if attempted == 0, let denial { return [.refuse(denial)] }
        if attempted == 0, !lookupFailures.isEmpty { return [.refuse(lookupVerdict)] }
        return [.refuse(.fail(.upstreamRefused, status: 502,
                              message: "cannot connect to \(destination.host):\(destination.port): \(problem)"))]
    }

    /// No connection within the connect timeout (`seconds`).
    mutating func timedOut(after seconds: Int) -> [Step] {
        if parent != nil { return parentFailed("connecting timed out after \(seconds) s") }
        return [.refuse(.fail(.upstreamTimeout, status: 504,
                              message: "connecting to \(destination.host):\(destination.port) timed out after \(seconds) s"))]
    }

    /// Why the name gave no address at all, as the reason that says most: a resolver that did not
    /// answer, then one that failed, then the name's absence (NXDOMAIN, or NODATA for every family).
    var lookupVerdict: Verdict {
        let message = "cannot resolve \(destination.host): " + lookupFailures.map(\.message).joined(separator: "; ")
        if lookupFailures.contains(where: { $0.kind == .timeout }) { return .fail(.dnsTimeout, status: 504, message: message) }
        if let failure = lookupFailures.first(where: { $0.kind == .failure }) {
            return .fail(.dnsFailure, status: 502, message: message, answer: NextHopAnswer(rcode: failure.rcode))
        }
        // NXDOMAIN says more than NODATA (which a name with an address of the other family also gives).
        let rcode = lookupFailures.contains { $0.kind == .nxdomain } ? "NXDOMAIN" : lookupFailures.first?.rcode
        return .fail(.dnsNXDomain, status: 502, message: message, answer: NextHopAnswer(rcode: rcode))
    }

    /// The parent being tried could not be reached: it is passed over, and the next one tried.
    private mutating func parentFailed(_ problem: String) -> [Step] {
        guard let parent else { return [] }
        parentProblems.append("parent \(parent): \(problem)")
        return [.passOver(parent)] + nextParent()
    }

    /// The next parent in order, or 502 `parent-unreachable` naming why each one failed.
    private mutating func nextParent() -> [Step] {
        guard let next = parents.popFirst() else {
            return [.refuse(.fail(.parentUnreachable, status: 502,
                                  message: "no parent proxy could reach \(destination.host):\(destination.port): "
                                      + parentProblems.joined(separator: "; ")))]
        }
        parent = next
        lookupFailures = []
        denial = nil
        return [.connect(next.host, port: next.port, via: next)]
    }
}
