import TLSWire

/// One loop's counters for /metrics. Plain integers touched only on the loop's queue (no atomics on
/// the hot path); a scrape sums every loop's copy.
package struct LoopMetrics {
    package struct DecisionKey: Hashable, Comparable {
        package var app: String
        /// The record's `device` ("" when none matched).
        package var device: String = ""
        package var action: String
        package var reason: String
        package var enforced: Bool

        package static func < (lhs: DecisionKey, rhs: DecisionKey) -> Bool {
            (lhs.app, lhs.device, lhs.action, lhs.reason, lhs.enforced ? 1 : 0)
                < (rhs.app, rhs.device, rhs.action, rhs.reason, rhs.enforced ? 1 : 0)
        }
    }

    package var decisions: [DecisionKey: Int] = [:]
    package var connectionsAccepted = 0
    /// Per loop, in loop order (filled by a scrape, one entry per loop visited): how the accepted
    /// connections spread over the loops, and how many each holds open now. A lab reads the balance
    /// here: one loop with every keep-alive client leaves the other CPUs idle.
    package var loops: [LoopLoad] = []

    package struct LoopLoad {
        package var accepted: Int
        package var open: Int

        package init(accepted: Int, open: Int) {
            self.accepted = accepted
            self.open = open
        }
    }
    package var bytesUp = 0
    package var bytesDown = 0
    /// TLS handshakes the proxy refused or could not complete, by reason.
    /// Keyed by reason and the rule that decided ("" when none did, e.g. an origin's own alert).
    package var handshakeFailures: [HandshakeKey: Int] = [:]

    /// Connections to origins (or through parents) by the parent used ("" for direct) and how they
    /// came out ("connected", or the reason that ended them: a dns-, upstream- or parent- code).
    package var upstream: [UpstreamKey: Int] = [:]

    package struct UpstreamKey: Hashable, Comparable {
        package var parent: String
        package var result: String

        package static func < (lhs: UpstreamKey, rhs: UpstreamKey) -> Bool { (lhs.parent, lhs.result) < (rhs.parent, rhs.result) }
    }

    package struct HandshakeKey: Hashable, Comparable {
        package var reason: String
        package var rule: String

        package static func < (lhs: HandshakeKey, rhs: HandshakeKey) -> Bool { (lhs.reason, lhs.rule) < (rhs.reason, rhs.rule) }
    }

    /// Inspected handshakes by app, the group the server chose and whether the client offered a
    /// post-quantum group.
    package var keyExchanges: [KeyExchangeKey: Int] = [:]

    package struct KeyExchangeKey: Hashable, Comparable {
        package var app: String
        package var device: String = ""
        package var group: NamedGroup?
        package var postQuantumOffered: Bool

        /// The group's IANA name; empty without one.
        package var groupName: String { group?.name ?? "" }
        /// The server chose a post-quantum group.
        package var postQuantumChosen: Bool { group?.isPostQuantum == true }

        package static func < (lhs: KeyExchangeKey, rhs: KeyExchangeKey) -> Bool {
            (lhs.app, lhs.device, lhs.groupName, lhs.postQuantumOffered ? 1 : 0)
                < (rhs.app, rhs.device, rhs.groupName, rhs.postQuantumOffered ? 1 : 0)
        }
    }

    /// Handshakes the client itself refused after the server's Certificate (its pinning or trust
    /// evaluation), by app and the alert it sent (`encrypted` for TLS 1.3's hidden one).
    package var clientRefusals: [ClientRefusalKey: Int] = [:]

    package struct ClientRefusalKey: Hashable, Comparable {
        package var app: String
        package var device: String = ""
        package var alert: String

        package static func < (lhs: ClientRefusalKey, rhs: ClientRefusalKey) -> Bool {
            (lhs.app, lhs.device, lhs.alert) < (rhs.app, rhs.device, rhs.alert)
        }
    }

    /// Request durations by kind and action (`atsgate_request_duration_seconds`).
    package var requestDurations = RequestDurations()

    /// Records of the transparent gate by path (`transparent`, `quic`) and action.
    package var transparent: [PathKey: Int] = [:]

    package struct PathKey: Hashable, Comparable {
        package var path: String
        package var result: String

        package static func < (lhs: PathKey, rhs: PathKey) -> Bool { (lhs.path, lhs.result) < (rhs.path, rhs.result) }
    }

    /// The QUIC listener's datagrams by what they were, and the attempts its table remembers (filled
    /// by a scrape from the first loop, which reads QUIC).
    package var quicDatagrams: [String: Int] = [:]
    package var quicRemembered = 0

    package init() {}

    /// Counts one logged record (the loops' counters, and the live page's totals: LiveFeed).
    package mutating func count(_ record: DecisionRecord) {
        let action = record.loggedAction
        let reason = record.loggedReason ?? ""
        let app = record.app ?? "", device = record.device ?? ""
        decisions[DecisionKey(app: app, device: device, action: action, reason: reason, enforced: record.enforced), default: 0] += 1
        bytesUp += record.bytesUp
        bytesDown += record.bytesDown
        if let keyExchange = record.keyExchange {
            keyExchanges[KeyExchangeKey(app: app, device: device, group: keyExchange.group,
                                        postQuantumOffered: keyExchange.postQuantumOffered), default: 0] += 1
        }
        if let refusal = record.clientRefusal {
            clientRefusals[ClientRefusalKey(app: app, device: device, alert: refusal.alertLabel), default: 0] += 1
        }
        if record.reason?.isHandshakeFailure == true {
            handshakeFailures[HandshakeKey(reason: reason, rule: record.rule?.rawValue ?? ""), default: 0] += 1
        }
        if record.upstreamIP != nil {
            upstream[UpstreamKey(parent: record.parent ?? "", result: "connected"), default: 0] += 1
        } else if record.reason?.isUpstreamFailure == true {
            upstream[UpstreamKey(parent: record.parent ?? "", result: reason), default: 0] += 1
        }
        requestDurations.count(record)
        if record.path != .proxy { transparent[PathKey(path: record.path.rawValue, result: action), default: 0] += 1 }
    }

    package mutating func add(_ other: LoopMetrics) {
        decisions.merge(other.decisions, uniquingKeysWith: +)
        connectionsAccepted += other.connectionsAccepted
        bytesUp += other.bytesUp
        bytesDown += other.bytesDown
        handshakeFailures.merge(other.handshakeFailures, uniquingKeysWith: +)
        keyExchanges.merge(other.keyExchanges, uniquingKeysWith: +)
        clientRefusals.merge(other.clientRefusals, uniquingKeysWith: +)
        upstream.merge(other.upstream, uniquingKeysWith: +)
        requestDurations.add(other.requestDurations)
        transparent.merge(other.transparent, uniquingKeysWith: +)
        quicDatagrams.merge(other.quicDatagrams, uniquingKeysWith: +)
        quicRemembered += other.quicRemembered
    }
}
