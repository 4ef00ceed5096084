import ATSPolicy
import EventLoops
import HTTP1
import Inspection

/// The connection's phases and the moves between them. `enter` (ProxyConnection.swift) is the one
/// assignment to `state`, and debug builds check every move there against `State.allows(from:to:)`.
extension ProxyConnection {
    /// The legal transitions (`allows(from:to:)` is this list as code; the tests hold a copy of it):
    /// - accepted (before `start`) -> readingHead | handshaking (a TLS listener's client) | answering
    ///   (a client outside --allow-client) | classifying (a transparent listener's client)
    /// - classifying -> readingHead (HTTP/1.x) | connecting (TLS, or another protocol allowed)
    /// - handshaking (a TLS listener's client) -> readingHead | answering (a plain request to the TLS
    ///   port)
    /// - readingHead -> answering (a verdict, an error, a PAC file, a 407) | authenticating
    ///   | connecting (a tunnel, a forward, an upgrade)
    /// - authenticating -> answering (a 407, a verdict) | connecting
    /// - connecting -> answering (a failure, the CONNECT 200) | exchanging (forward) | upgrading
    ///   | parentHandshake (a tunnel or an upgrade through a parent proxy) | awaitingTunnelBytes (a
    ///   transparent TLS connection, which has no 200 to wait for) | relaying (another protocol allowed)
    /// - parentHandshake -> answering (the parent's refusal, the CONNECT 200) | upgrading
    /// - answering -> readingHead (keep-alive) | awaitingTunnelBytes (after the 200)
    /// - awaitingTunnelBytes -> inspecting (a TLS ClientHello) | relaying or relayingTLS (anything else)
    /// - inspecting -> relaying or relayingTLS (released)
    /// - upgrading -> exchanging | answering (a failure)
    /// - exchanging -> readingHead (keep-alive) | connecting (one retry of a stale pooled origin)
    ///   | answering (a failure before any of the response)
    /// - relaying, relayingTLS -> closed only
    /// Every state but closed -> closed; nothing leaves closed (`close` runs once).
    enum State {
        /// Made, and not started yet (ProxyServer starts it, or refuses its client, at once).
        case accepted
        /// The client's TLS handshake with the proxy (`clientTLS`), its steps on the handshake pool.
        case handshaking
        /// Waiting for (the rest of) a request head in `inbound`.
        case readingHead
        /// A transparent connection's first bytes, read until they say what it is (+Transparent).
        case classifying
        /// The request's credentials are being checked on the blocking pool (a slow hash).
        indirect case authenticating(RequestHead)
        /// Resolving and connecting to the origin or a parent proxy; then what the connector's `next` says.
        case connecting(UpstreamConnector)
        /// Asking the parent proxy to CONNECT to the origin.
        case parentHandshake(ParentHandshake)
        /// Writing an answer of the proxy's own (`outbound`); then what `next` says.
        indirect case answering(next: AfterAnswer)
        /// A tunnel is open: its first client bytes tell TLS from cleartext.
        indirect case awaitingTunnelBytes(Destination, LoadContext)
        /// Watching the tunnel's TLS handshake.
        case inspecting(InspectionBox)
        /// TLS to the origin for `--cleartext upgrade`, before the request goes up.
        case upgrading(UpgradeState)
        /// One forwarded request and its response.
        case exchanging(Exchange)
        /// Bytes move both ways by splice: up (client to origin) and down.
        case relaying(up: Pump, down: Pump)
        /// The same for a client that speaks TLS to the proxy: through user space, its records
        /// opened and sealed on the way.
        case relayingTLS(ClientTLSRelay)
        case closed

        /// A state without its data: what the transition table speaks of.
        enum Kind: CaseIterable {
            case accepted, handshaking, readingHead, classifying, authenticating, connecting, parentHandshake, answering
            case awaitingTunnelBytes, inspecting, upgrading, exchanging, relaying, relayingTLS, closed
        }

        var kind: Kind {
            switch self {
            case .accepted: .accepted
            case .handshaking: .handshaking
            case .readingHead: .readingHead
            case .classifying: .classifying
            case .authenticating: .authenticating
            case .connecting: .connecting
            case .parentHandshake: .parentHandshake
            case .answering: .answering
            case .awaitingTunnelBytes: .awaitingTunnelBytes
            case .inspecting: .inspecting
            case .upgrading: .upgrading
            case .exchanging: .exchanging
            case .relaying: .relaying
            case .relayingTLS: .relayingTLS
            case .closed: .closed
            }
        }

        /// Whether the connection may go from `from` to `to`: the list above.
        static func allows(from: Kind, to: Kind) -> Bool {
            switch (from, to) {
            case (.closed, _): false
            case (_, .closed): true
            case (.accepted, .readingHead), (.accepted, .handshaking), (.accepted, .answering), (.accepted, .classifying): true
            case (.classifying, .readingHead), (.classifying, .connecting): true
            case (.handshaking, .readingHead), (.handshaking, .answering): true
            case (.readingHead, .answering), (.readingHead, .authenticating), (.readingHead, .connecting): true
            case (.authenticating, .answering), (.authenticating, .connecting): true
            case (.connecting, .answering), (.connecting, .exchanging), (.connecting, .upgrading),
                 (.connecting, .parentHandshake), (.connecting, .awaitingTunnelBytes), (.connecting, .relaying): true
            case (.parentHandshake, .answering), (.parentHandshake, .upgrading): true
            case (.answering, .readingHead), (.answering, .awaitingTunnelBytes): true
            case (.awaitingTunnelBytes, .inspecting), (.awaitingTunnelBytes, .relaying),
                 (.awaitingTunnelBytes, .relayingTLS): true
            case (.inspecting, .relaying), (.inspecting, .relayingTLS): true
            case (.upgrading, .exchanging), (.upgrading, .answering): true
            case (.exchanging, .readingHead), (.exchanging, .connecting), (.exchanging, .answering): true
            default: false
            }
        }
    }

    /// What follows a successful connection to the origin.
    enum AfterConnect {
        case tunnel(LoadContext)
        /// Another protocol on the transparent path, allowed: relayed as it is.
        case relay
        case forward(RequestHead)
        case upgrade(RequestHead, Decision, original: Destination)
    }

    /// What follows an answer once it is written.
    enum AfterAnswer {
        case close
        case nextRequest
        case tunnel(Destination, LoadContext)
    }
}
