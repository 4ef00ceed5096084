import EventLoops
import Glibc
import POSIX
import TLSClient

/// A TLS listener's client (`--listen-tls`): the handshake with the proxy, its steps on the handshake
/// pool while this loop keeps the socket. After it the connection reads its first request head as
/// any other, its bytes passing through `clientTLS` (ClientTLS.swift).
///
/// A client that stalls mid-handshake costs a socket and a timer entry, never a thread; garbage and a
/// plain HTTP request to the TLS port are refused on their first bytes; each of them is closed within
/// the head timeout with a record (`client-timeout`, `client-tls`, `bad-request`).
extension ProxyConnection {
    /// Starts the handshake with this generation's certificate and key; the head timeout covers it
    /// and the first request head together.
    func startTLS() {
        enterHandshaking()
        arm(after: generation.configuration.timeouts.head) { [self] in headTimedOut() }
        guard let identity = generation.configuration.listeners.tlsIdentity else {
            return handshakeFailed("the TLS listener has no certificate (--listen-cert, --listen-key)")
        }
        do {
            clientTLS = ClientTLS(session: try TLSServerSession(context: identity))
        } catch {
            return handshakeFailed("cannot start TLS: \(error.description)")
        }
    }

    /// Reads the client's next handshake bytes and hands them to one step on the pool.
    func handshakeRead() {
        guard case .handshaking = state, let tls = clientTLS else { return impossible("a TLS handshake read") }
        guard !tls.stepping else { return client.wantRead(false) }
        var received: [UInt8] = []
        var ended = false
        // One step gets what is there now, up to 64 KiB (a ClientHello, even a post-quantum one, is
        // a few KiB; the client's second flight is smaller).
        readLoop: while received.count < loop.scratch.count {
            switch try? SystemCall.read(client.fd, into: loop.scratch) {
            case .done(let count)?:
                received += UnsafeRawBufferPointer(rebasing: loop.scratch[..<count])
                if count < loop.scratch.count { break readLoop }
            case .wouldBlock?:
                break readLoop
            case .endOfFile?, nil:
                ended = true
                break readLoop
            }
        }
        if received.isEmpty {
            guard ended else { return }
            // Connected and left without a byte: a port check, not worth a record (as on the plain port).
            guard tls.started else { return close() }
            return handshakeFailed("the client closed the connection during the TLS handshake")
        }
        if !tls.started {
            tls.started = true
            if refusedFirstBytes(received) { return }
        }
        tls.stepping = true
        client.wantRead(false)
        let session = tls.session
        let loop = self.loop
        let bytes = received
        let clientEnded = ended
        nonisolated(unsafe) weak let connection = self
        ClientTLS.handshakes.submit {
            bytes.withUnsafeBytes { session.receive($0) }
            let result = session.handshake()
            var flight: [UInt8] = []
            session.takeOutput(appendingTo: &flight)
            loop.execute { connection?.handshakeStepped(result, flight: flight, clientEnded: clientEnded) }
        }
    }

    /// A handshake step is back from the pool (on the loop again).
    private func handshakeStepped(_ result: TLSIOResult, flight: [UInt8], clientEnded: Bool) {
        guard let tls = clientTLS else { return }
        tls.stepping = false
        // Late: timed out or stopped meanwhile; the step's result goes with the session.
        guard case .handshaking = state else { return }
        switch result {
        case .done:
            tls.handshakeStepped(flight: flight, done: true)
            guard tls.flush(client) != .failed else { return handshakeFailed("writing to the client failed") }
            // The client's first request may have come with its Finished: readHead opens it.
            enterReadingHead()
            readHead()
        case .wantRead, .wantWrite:
            tls.handshakeStepped(flight: flight, done: false)
            if clientEnded { return handshakeFailed("the client closed the connection during the TLS handshake") }
            switch tls.flush(client) {
            case .failed: return handshakeFailed("writing to the client failed")
            case .wouldBlock: client.wantWrite(true)
            case .done: break
            }
            client.wantRead(true)
        case .failed(let problem):
            // OpenSSL's alert for the client, if it wrote one.
            tls.handshakeStepped(flight: flight, done: false)
            _ = tls.flush(client)
            handshakeFailed(Self.handshakeProblem(problem))
        case .closed, .bytes:
            handshakeFailed("the client closed the connection during the TLS handshake")
        }
    }

    /// Writes the rest of a handshake flight the socket did not take at once.
    func handshakeFlush() {
        guard case .handshaking = state, let tls = clientTLS else { return impossible("a TLS handshake flushed") }
        switch tls.flush(client) {
        case .failed: handshakeFailed("writing to the client failed")
        case .wouldBlock: break
        case .done: client.wantWrite(false)
        }
    }

    /// Refuses first bytes that are not a TLS handshake record (true when it did): a plain HTTP
    /// request (a client given `http://` for the TLS port) gets a cleartext 400 saying so, as nginx
    /// answers one on its TLS port; anything else is closed with a record.
    private func refusedFirstBytes(_ bytes: [UInt8]) -> Bool {
        guard let first = bytes.first, first != 0x16 else { return false }
        if (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(first) {
            // Answered in cleartext: the client speaks no TLS.
            clientTLS = nil
            respond(.answer(status: 400, .badRequest,
                            message: "a plain HTTP request on the TLS listener: this port takes TLS first "
                                + "(an https:// proxy URL, e.g. curl --proxy https://HOST:PORT)"))
            return true
        }
        let hex = String(first, radix: 16, uppercase: true)
        handshakeFailed("not a TLS handshake: the first byte is 0x\(hex.count == 1 ? "0" : "")\(hex), not 0x16")
        return true
    }

    /// OpenSSL's words for a failed handshake, with what to do when the client refused the proxy's
    /// certificate (the commonest cause: a device without the CA).
    static func handshakeProblem(_ problem: String) -> String {
        let detail = problem.replacing("TLS handshake failed: ", with: "")
        var message = "the client's TLS handshake with the proxy failed: \(detail)"
        if ["unknown ca", "bad certificate", "certificate unknown"].contains(where: { detail.contains("alert \($0)") }) {
            message += " (the client does not trust the proxy's certificate: give it the CA that signed --listen-cert)"
        }
        return message
    }

    /// Ends a handshake that failed, with its record (action error, reason client-tls).
    private func handshakeFailed(_ message: String) {
        respond(.answer(status: 400, .clientTLS, message: message), .cut)
    }
}
