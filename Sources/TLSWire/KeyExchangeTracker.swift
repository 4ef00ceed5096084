/// Follows the server's plaintext handshake messages to the group its key exchange uses: the TLS 1.3
/// ServerHello's key share (after a HelloRetryRequest, the second ServerHello's), or the TLS 1.0-1.2
/// ServerKeyExchange's curve. Feed it every message of the server's direction, in order; it reads
/// only the few that matter and never throws, so watching the groups cannot change how a handshake
/// is judged.
public struct KeyExchangeTracker: Sendable, Equatable {
    /// What the server's messages settled.
    public enum Outcome: Sendable, Equatable {
        /// An (EC)DHE or KEM key exchange over this group.
        case group(NamedGroup)
        /// No group to name: an RSA or PSK-only key exchange, static (EC)DH, a finite-field prime of the
        /// server's own, or a key share or ServerKeyExchange that could not be read (`error`).
        case noGroup
    }

    /// Nil until the server's messages settle it; a TLS 1.2 resumption (no ServerKeyExchange) never does.
    public private(set) var outcome: Outcome?
    /// The server answered with a HelloRetryRequest.
    public private(set) var sawHelloRetryRequest = false
    /// The group that HelloRetryRequest asked the client for (nil when its key_share was unreadable).
    public private(set) var helloRetryGroup: NamedGroup?
    /// The version the (last) ServerHello chose.
    public private(set) var negotiatedVersion: UInt16?
    /// Why a key share or ServerKeyExchange could not be read.
    public private(set) var error: TLSWireError?
    /// The TLS 1.2 suite's method, while its ServerKeyExchange is awaited.
    private var awaiting: ServerKeyExchange.Method?

    public init() {}

    /// The group the server chose: the settled one, else the one a HelloRetryRequest asked for (a
    /// handshake may end between the two).
    public var group: NamedGroup? {
        if case .group(let group) = outcome { return group }
        return outcome == nil ? helloRetryGroup : nil
    }

    /// Takes the next message the server sent.
    public mutating func observe(_ message: HandshakeMessage) {
        guard outcome == nil else { return }
        switch message.type {
        case .serverHello:
            guard let hello = try? ServerHello(message) else { return }
            observe(hello)
        case .serverKeyExchange:
            guard let method = awaiting else { return }
            do {
                let exchange = try ServerKeyExchange(message, method: method)
                outcome = exchange.group.map(Outcome.group) ?? Outcome.noGroup
            } catch {
                self.error = error
                outcome = Outcome.noGroup
            }
        case .serverHelloDone where awaiting != nil:
            // An (EC)DHE suite whose server skipped the ServerKeyExchange: the client will refuse it.
            outcome = Outcome.noGroup
        default:
            break
        }
    }

    /// Takes a ServerHello the caller has already parsed.
    public mutating func observe(_ hello: ServerHello) {
        guard outcome == nil else { return }
        negotiatedVersion = hello.negotiatedVersion
        if let error = hello.keyExchangeError { self.error = error }
        if hello.isHelloRetryRequest {
            sawHelloRetryRequest = true
            helloRetryGroup = hello.selectedGroup
        } else if hello.negotiatedVersion >= TLSProtocolVersion.tls13 {
            if let share = hello.serverShare, let expected = share.group.keyShareLengths?.server,
               share.keyExchangeLength != expected {
                // A share of the wrong size is no key exchange over that group; the client will refuse it.
                error = .malformed(message: "ServerHello", reason: "key_share server_share for \(share.group) has "
                                   + "\(share.keyExchangeLength) bytes, not \(expected)")
                outcome = Outcome.noGroup
                return
            }
            outcome = hello.selectedGroup.map(Outcome.group) ?? Outcome.noGroup
        } else if let method = ServerKeyExchange.Method(cipherSuite: hello.cipherSuite) {
            awaiting = method
        } else {
            outcome = Outcome.noGroup
        }
    }
}
