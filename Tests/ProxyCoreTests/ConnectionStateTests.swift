import Testing
@testable import ProxyCore

/// The connection's transition table: every move `State.allows` permits is one the doc comment's
/// list names, and every move the list names is permitted.
@Suite struct ConnectionStateTests {
    typealias Kind = ProxyConnection.State.Kind

    /// The list in ProxyConnection+State.swift's doc comment, copied out by hand, not from the code.
    static let documented: [Kind: Set<Kind>] = [
        .accepted: [.readingHead, .handshaking, .answering, .classifying, .closed],
        .classifying: [.readingHead, .connecting, .closed],
        .handshaking: [.readingHead, .answering, .closed],
        .readingHead: [.answering, .authenticating, .connecting, .closed],
        .authenticating: [.answering, .connecting, .closed],
        .connecting: [.answering, .exchanging, .upgrading, .parentHandshake, .awaitingTunnelBytes, .relaying, .closed],
        .parentHandshake: [.answering, .upgrading, .closed],
        .answering: [.readingHead, .awaitingTunnelBytes, .closed],
        .awaitingTunnelBytes: [.inspecting, .relaying, .relayingTLS, .closed],
        .inspecting: [.relaying, .relayingTLS, .closed],
        .upgrading: [.exchanging, .answering, .closed],
        .exchanging: [.readingHead, .connecting, .answering, .closed],
        .relaying: [.closed],
        .relayingTLS: [.closed],
        .closed: [],
    ]

    @Test func theListNamesEveryState() {
        #expect(Set(Self.documented.keys) == Set(Kind.allCases))
    }

    @Test(arguments: Kind.allCases, Kind.allCases)
    func aMoveIsAllowedExactlyWhenTheListNamesIt(from: Kind, to: Kind) {
        let listed = Self.documented[from]?.contains(to) == true
        #expect(ProxyConnection.State.allows(from: from, to: to) == listed, "\(from) -> \(to)")
    }
}
