import ATSPolicy
import DecisionLog
import DNS
import EventLoops
import Inspection
import POSIX
import ProxyAccess
import ProxyAnswers

/// Everything between "the verdict allows" and "connected": the origin's name resolved (or a parent
/// proxy's), the destination ACL on every address it gives, Happy Eyeballs over what is left, an idle
/// pooled connection taken instead when there is one, and failover from parent to parent.
///
/// Owned by the connection's `connecting` state, as its HappyEyeballs is by it, and confined to the
/// connection's loop. It reports one outcome, once: connected, or refused with the verdict that says
/// most. Its choices (which parent next, which failure says most) are ConnectPlan's; it does the I/O.
final class UpstreamConnector {
    enum Outcome {
        /// A connection to the origin, or to the parent proxy `via` (a tunnel's CONNECT to it is the
        /// connection's to make); `fromPool`: an idle pooled one. `dns`: what the origin's name said.
        case connected(Channel, SocketAddress, via: ParentProxy?, fromPool: Bool, dns: DNSFacts)
        /// No way worked: the client's answer. `via`: the parent tried last.
        case refused(Verdict, via: ParentProxy?, dns: DNSFacts)
    }

    /// What the connection does once connected: carried for it, never read here.
    let next: ProxyConnection.AfterConnect
    private var plan: ConnectPlan
    /// A forwarded request may reuse an idle pooled connection.
    private let pooled: Bool
    private let generation: Generation
    private let loop: EventLoop
    private let pool: UpstreamPool
    /// The destination ACL of the request's route, and the client address it judges.
    private let acl: DestinationACL
    private let client: IPAddress
    /// A transparent connection's original destination: the one address tried, never resolved; its
    /// host's name is only looked up when `nameCheck` asks, to compare (`nameMismatch`).
    private let pinned: SocketAddress?
    private let nameCheck: SNIAddressCheck
    /// The server name does not resolve to the pinned address: why, for the record.
    private(set) var nameMismatch: String?
    /// The race of the current way's addresses.
    private var eyeballs: HappyEyeballs?
    private var connectTimerArmed = false
    /// When the current way's name was asked for (CLOCK_MONOTONIC seconds): `dns_ms` is this
    /// request's own wait, also when it joined a lookup already in flight.
    private var resolutionStarted = 0.0
    /// What the origin's name said so far (a parent's own name is not the record's).
    private(set) var dns = DNSFacts()
    /// Set from `start` until the outcome is reported or the connection cancels: whatever arrives
    /// after that is late.
    private var report: ((UpstreamConnector, Outcome) -> Void)?

    var destination: Destination { plan.destination }
    /// The parent being tried (or tried last); nil: straight to the origin.
    var parent: ParentProxy? { plan.parent }

    init(destination: Destination, pinned: SocketAddress? = nil, nameCheck: SNIAddressCheck = .off, parents: [ParentProxy],
         pooled: Bool, then next: ProxyConnection.AfterConnect, generation: Generation, loop: EventLoop,
         pool: UpstreamPool, acl: DestinationACL, client: IPAddress) {
        plan = ConnectPlan(destination: destination, parents: parents)
        self.pinned = pinned
        self.nameCheck = nameCheck
        self.pooled = pooled
        self.next = next
        self.generation = generation
        self.loop = loop
        self.pool = pool
        self.acl = acl
        self.client = client
    }

    /// Starts on the first way; `report` gets the outcome, possibly before this returns.
    func start(_ report: @escaping (UpstreamConnector, Outcome) -> Void) {
        self.report = report
        if pinned != nil, nameCheck != .off, case .name(let name) = destination.host { return checkName(name) }
        // The parent resolves: the name or literal as the client gave it is checked instead.
        let refused = plan.parents.isEmpty ? nil : acl.refusalThroughParent(destination, client: client)
        perform(plan.start(refusedThroughParent: refused))
    }

    /// Looks the server name up and compares its addresses with the pinned one (ServerNameCheck), then
    /// goes on to the pinned address whatever the answer: what a mismatch means is the connection's.
    private func checkName(_ name: String) {
        var check = ServerNameCheck(name: name, address: pinned!.ip, answers: generation.resolver.answerCount(for: destination.host))
        resolutionStarted = monotonic()
        arm(after: generation.configuration.dns.timeout + 1)
        generation.resolver.resolve(destination.host, on: loop) { [self] resolution in
            guard report != nil, check.waiting else { return }
            dns.add(waited: resolution.lookupMilliseconds.map { _ in (monotonic() - resolutionStarted) * 1000 }, stale: resolution.isStale)
            guard let outcome = check.add(resolution.result.mapError { .init($0.message) }) else { return }
            if !outcome.isEmpty { nameMismatch = outcome }
            perform(plan.start(refusedThroughParent: nil))
        }
    }

    /// The connection closed: every attempt stops, and nothing is reported.
    func cancel() {
        report = nil
        eyeballs?.cancel()
        loop.clock.cancel(self)
    }

    private func perform(_ steps: [ConnectPlan.Step]) {
        for step in steps {
            switch step {
            case .connect(let host, let port, let via):
                return connect(to: host, port: port, via: via)
            case .passOver(let parent):
                generation.daemon.parentHealth.markDown(parent)
            case .refuse(let verdict):
                return finish(.refused(verdict, via: plan.parent, dns: dns))
            }
        }
    }

    /// Resolves `host` and races its addresses: the origin's, or the parent's (`via`).
    private func connect(to host: Host, port: Int, via parent: ParentProxy?) {
        // A transparent connection's original address is the one candidate, through the ACL as usual.
        let host = parent == nil ? pinned.map { .address($0.ip) } ?? host : host
        let eyeballs = HappyEyeballs(loop: loop, answers: generation.resolver.answerCount(for: host)) { [self] outcome in
            raced(outcome)
        }
        self.eyeballs = eyeballs
        connectTimerArmed = false
        resolutionStarted = monotonic()
        // The resolver answers by --dns-timeout; the connect timeout starts with the first attempt.
        arm(after: generation.configuration.dns.timeout + 1)
        generation.resolver.resolve(host, on: loop) { [self] resolution in
            // Late: the name answered after the outcome, or for a parent already passed over.
            guard report != nil, self.eyeballs === eyeballs else { return }
            if parent == nil {
                let waited = resolution.lookupMilliseconds.map { _ in (monotonic() - resolutionStarted) * 1000 }
                dns.add(waited: waited, stale: resolution.isStale)
            }
            switch resolution.result {
            case .failure(let failure):
                plan.lookupFailed(failure)
                eyeballs.familyFailed()
            case .success(var addresses):
                // The one place where resolved addresses become connection candidates: the
                // destination ACL filters the origin's here, and Happy Eyeballs races what is left. A
                // parent's own addresses are the operator's choice and skip it; through a parent, the
                // origin's name is never resolved here (`start` checks it as the client gave it).
                if parent == nil {
                    switch acl.permitted(addresses, for: destination, client: client) {
                    case .allowed(let permitted):
                        addresses = permitted
                    case .denied(let verdict):
                        plan.denied(verdict)
                        return eyeballs.familyFailed()
                    }
                }
                let candidates = addresses.map { SocketAddress(ip: $0, port: port) }
                if pooled, takePooled(candidates, via: parent) { return }
                if !connectTimerArmed, !candidates.isEmpty {
                    connectTimerArmed = true
                    arm(after: generation.configuration.timeouts.connect)
                }
                eyeballs.add(candidates, family: resolution.family)
            }
        }
    }

    /// An idle pooled connection to one of `candidates`, taken instead of a new one.
    private func takePooled(_ candidates: [SocketAddress], via parent: ParentProxy?) -> Bool {
        for address in candidates {
            guard let channel = pool.take(address, viaParent: parent != nil) else { continue }
            eyeballs?.cancel()
            finish(.connected(channel, address, via: parent, fromPool: true, dns: dns))
            return true
        }
        return false
    }

    private func raced(_ outcome: HappyEyeballs.Outcome) {
        guard report != nil else {
            // A race is cancelled whenever the connector stops, and a cancelled race reports nothing.
            assertionFailure("a race reported after its connector stopped")
            if case .connected(let channel, _) = outcome { channel.close() }
            return
        }
        switch outcome {
        case .connected(let channel, let address):
            finish(.connected(channel, address, via: plan.parent, fromPool: false, dns: dns))
        case .failed(let problem):
            perform(plan.raceFailed(problem, attempted: eyeballs?.attempted ?? 0))
        }
    }

    private func timedOut() {
        // Late: the entry was due in the clock tick that also saw the outcome.
        guard report != nil else { return }
        eyeballs?.cancel()
        perform(plan.timedOut(after: Int(generation.configuration.timeouts.connect)))
    }

    /// The connector's one timeout (resolving, then connecting), replaced by each arming.
    private func arm(after seconds: Double) {
        loop.clock.schedule(self, after: seconds, repeating: false) { [self] in timedOut() }
    }

    private func finish(_ outcome: Outcome) {
        guard let report else { return }
        self.report = nil
        loop.clock.cancel(self)
        report(self, outcome)
    }
}
