import ATSPolicy
import DNS
import ProxyAccess
import Testing
import ProxyAnswers
@testable import ProxyCore

/// The upstream connector's choices as a value (ConnectPlan): which way is tried next and which failure
/// the client is told, fed what the resolver and the race said, with no socket.
@Suite struct UpstreamConnectorTests {
    typealias Step = ConnectPlan.Step

    private static let first = ParentProxy(host: .name("first.lab"), port: 3128)
    private static let second = ParentProxy(host: .name("second.lab"), port: 8080)

    private func plan(parents: [ParentProxy] = []) throws -> ConnectPlan {
        ConnectPlan(destination: try Destination.parse(authority: "api.example.com:443", scheme: .https,
                                                       portRequired: true),
                    parents: parents)
    }

    /// Steps as text: "connect HOST:PORT [via PARENT]", "pass over PARENT", "refuse STATUS REASON [rcode]".
    private func names(_ steps: [Step]) -> [String] {
        steps.map { step in
            switch step {
            case .connect(let host, let port, let via): "connect \(host):\(port)" + (via.map { " via \($0)" } ?? "")
            case .passOver(let parent): "pass over \(parent)"
            case .refuse(let verdict): "refuse " + summary(verdict)
            }
        }
    }

    private func summary(_ verdict: Verdict) -> String {
        switch verdict {
        case .fail(let reason, let status, _, let answer):
            "\(status) \(reason.rawValue)" + (answer.rcode.map { " \($0)" } ?? "")
        case .block(let reason, _, _):
            "403 \(reason.rawValue)"
        default:
            "\(verdict.status)"
        }
    }

    private func message(_ steps: [Step]) -> String? {
        guard case .refuse(let verdict)? = steps.last else { return nil }
        switch verdict {
        case .fail(_, _, let message, _): return message
        case .block(_, let message, _): return message
        default: return nil
        }
    }

    /// lookupVerdict's order: a resolver that did not answer, then one that failed, then the name's
    /// absence, NXDOMAIN saying more than NODATA; in whatever order the families answered.
    @Test(arguments: [
        ([failure(.nxdomain), failure(.timeout)], "504 dns-timeout"),
        ([failure(.timeout), failure(.failure, rcode: "SERVFAIL")], "504 dns-timeout"),
        ([failure(.noData), failure(.failure, rcode: "SERVFAIL")], "502 dns-failure SERVFAIL"),
        ([failure(.failure, rcode: "REFUSED"), failure(.nxdomain)], "502 dns-failure REFUSED"),
        ([failure(.noData), failure(.nxdomain)], "502 dns-nxdomain NXDOMAIN"),
        ([failure(.nxdomain), failure(.noData)], "502 dns-nxdomain NXDOMAIN"),
        ([failure(.noData), failure(.noData)], "502 dns-nxdomain NOERROR"),
        ([failure(.noData)], "502 dns-nxdomain NOERROR"),
    ] as [([LookupFailure], String)])
    func aNameWithNoAddressIsAnsweredWithTheFailureThatSaysMost(failures: [LookupFailure], expected: String) throws {
        var plan = try plan()
        for failure in failures { plan.lookupFailed(failure) }
        let steps = plan.raceFailed("no address", attempted: 0)
        #expect(names(steps) == ["refuse " + expected])
        #expect(message(steps) == "cannot resolve api.example.com: " + failures.map(\.message).joined(separator: "; "))
    }

    /// What the race says when it ends with nothing: the ACL's refusal before a lookup failure when
    /// nothing was tried; once an address was tried, the connect error.
    @Test(arguments: [
        (true, true, 0, "refuse 403 destination-not-allowed"),
        (true, false, 0, "refuse 403 destination-not-allowed"),
        (false, true, 0, "refuse 502 dns-nxdomain NXDOMAIN"),
        (true, true, 2, "refuse 502 upstream-refused"),
        (false, false, 1, "refuse 502 upstream-refused"),
    ] as [(Bool, Bool, Int, String)])
    func aDenialSaysMoreThanALookupFailureAndAnAttemptMoreThanBoth(denied: Bool, lookupFailed: Bool, attempted: Int,
                                                                   expected: String) throws {
        var plan = try plan()
        if lookupFailed { plan.lookupFailed(failure(.nxdomain)) }
        if denied { plan.denied(.block(.destinationNotAllowed, message: "127.0.0.1 is loopback (see --allow-dest)")) }
        let steps = plan.raceFailed("connect 198.18.0.1:443: Connection refused", attempted: attempted)
        #expect(names(steps) == [expected])
        if attempted > 0 {
            #expect(message(steps) == "cannot connect to api.example.com:443: connect 198.18.0.1:443: Connection refused")
        }
    }

    @Test func withoutParentsTheOriginIsTriedAndItsTimeoutIsA504() throws {
        var plan = try plan()
        #expect(names(plan.start(refusedThroughParent: nil)) == ["connect api.example.com:443"])
        let steps = plan.timedOut(after: 10)
        #expect(names(steps) == ["refuse 504 upstream-timeout"])
        #expect(message(steps) == "connecting to api.example.com:443 timed out after 10 s")
        #expect(plan.parent == nil)
    }

    /// The ACL's verdict on the host as the client named it matters only through a parent (which
    /// resolves it); straight to the origin, each resolved address is checked instead.
    @Test(arguments: [true, false])
    func aDestinationRefusedThroughAParentIsNeverSentToOne(throughParents: Bool) throws {
        var plan = try plan(parents: throughParents ? [Self.first] : [])
        let refused = Verdict.block(.destinationNotAllowed, message: "api.example.com is not allowed")
        let steps = plan.start(refusedThroughParent: refused)
        #expect(names(steps) == [throughParents ? "refuse 403 destination-not-allowed" : "connect api.example.com:443"])
        #expect(plan.parent == nil)
    }

    /// Each parent that cannot be reached (refused, unresolvable, timed out) is passed over and the
    /// next tried; with none left, 502 parent-unreachable names why each failed, in order.
    @Test func parentsAreTriedInOrderAndTheLastFailureNamesThemAll() throws {
        var plan = try plan(parents: [Self.first, Self.second])
        #expect(names(plan.start(refusedThroughParent: nil)) == ["connect first.lab:3128 via first.lab:3128"])
        #expect(plan.parent == Self.first)
        plan.lookupFailed(LookupFailure(.nxdomain, "first.lab: NXDOMAIN"))
        #expect(names(plan.raceFailed("no address", attempted: 0))
                == ["pass over first.lab:3128", "connect second.lab:8080 via second.lab:8080"])
        #expect(plan.parent == Self.second)
        #expect(plan.lookupFailures.isEmpty, "the next parent's lookups start afresh")
        let steps = plan.timedOut(after: 10)
        #expect(names(steps) == ["pass over second.lab:8080", "refuse 502 parent-unreachable"])
        #expect(message(steps) == "no parent proxy could reach api.example.com:443: "
                + "parent first.lab:3128: cannot resolve it: first.lab: NXDOMAIN; "
                + "parent second.lab:8080: connecting timed out after 10 s")
        #expect(plan.parent == Self.second, "the record names the parent tried last")
    }

    /// A parent whose name resolved and whose connect failed says the connect error, even when one
    /// of its families gave no address.
    @Test(arguments: [0, 1])
    func aParentsFailureSaysWhatWentWrongWithIt(attempted: Int) throws {
        var plan = try plan(parents: [Self.first])
        _ = plan.start(refusedThroughParent: nil)
        plan.lookupFailed(LookupFailure(.noData, "first.lab: no IPv6 address"))
        let steps = plan.raceFailed("connect 198.18.0.9:3128: Connection refused", attempted: attempted)
        #expect(names(steps) == ["pass over first.lab:3128", "refuse 502 parent-unreachable"])
        let why = attempted == 0 ? "cannot resolve it: first.lab: no IPv6 address"
                                 : "cannot connect: connect 198.18.0.9:3128: Connection refused"
        #expect(message(steps) == "no parent proxy could reach api.example.com:443: parent first.lab:3128: \(why)")
    }
}

/// A family's lookup of the origin's name that gave no address.
private func failure(_ kind: LookupFailure.Kind, rcode: String? = nil) -> LookupFailure {
    LookupFailure(kind, "api.example.com: \(kind)", rcode: rcode)
}
