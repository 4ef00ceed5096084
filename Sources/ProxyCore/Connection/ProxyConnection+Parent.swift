import ATSPolicy
import EventLoops
import Glibc
import HTTP1
import POSIX
import ProxyAccess
import ProxyAnswers

/// Through a parent proxy: a tunnel (and an upgrade's TLS) is opened with a CONNECT of our own to the
/// parent, carrying the parent's credentials and nothing of the client's; the tunnel's bytes then
/// flow exactly as on a direct connection, TLS inspection and every ATS decision included. Reaching
/// the parent, and passing over one that cannot be reached, is UpstreamConnector's; a parent that
/// refuses the CONNECT or answers garbage ends the request here.
extension ProxyConnection {
    /// The CONNECT to the parent: the request going out, the answer's head coming in.
    final class ParentHandshake {
        let parent: ParentProxy
        let address: SocketAddress
        /// The origin, and what follows once the parent has connected to it.
        let destination: Destination
        let next: AfterConnect
        var request: [UInt8]
        /// The answer so far; only bytes of the head are ever read from the socket (what follows it is
        /// the origin's and stays there for the tunnel).
        var response: [UInt8] = []

        init(parent: ParentProxy, address: SocketAddress, destination: Destination, next: AfterConnect,
             request: [UInt8]) {
            self.parent = parent
            self.address = address
            self.destination = destination
            self.next = next
            self.request = request
        }
    }

    /// `CONNECT host:port` with the parent's own credentials.
    static func connectRequest(authority: String, parent: ParentProxy) -> [UInt8] {
        var text = "CONNECT \(authority) HTTP/1.1\r\nHost: \(authority)\r\n"
        if let authorization = parent.authorization { text += "Proxy-Authorization: \(authorization)\r\n" }
        return Array((text + "\r\n").utf8)
    }

    /// Connected to `parent` (at `address`): asks it to CONNECT to `destination`.
    func startParentHandshake(to parent: ParentProxy, at address: SocketAddress, for destination: Destination,
                              then next: AfterConnect) {
        let authority = hostForURL(destination) + ":\(destination.port)"
        let handshake = ParentHandshake(parent: parent, address: address, destination: destination, next: next,
                                        request: Self.connectRequest(authority: authority, parent: parent))
        enterParentHandshake(handshake)
        let seconds = Int(generation.configuration.timeouts.connect)
        arm(after: generation.configuration.timeouts.connect) { [self] in
            parentAnswered(.fail(.parentTimeout, status: 504,
                                 message: "the parent proxy \(parent) did not answer CONNECT \(authority) in \(seconds) s"))
        }
        parentHandshakeWrite()
    }

    func parentHandshakeWrite() {
        guard case .parentHandshake(let handshake) = state, let upstream else {
            return impossible("a CONNECT to the parent written")
        }
        switch upstream.write(&handshake.request) {
        case .done:
            upstream.wantWrite(false)
            upstream.wantRead(true)
        case .wouldBlock:
            upstream.wantWrite(true)
        case .failed:
            parentBroke(handshake, "the connection failed while sending CONNECT")
        }
    }

    /// Reads the parent's answer up to the end of its head, never past it.
    func parentHandshakeRead() {
        guard case .parentHandshake(let handshake) = state, let upstream else {
            return impossible("the parent's answer read")
        }
        let peeked = recv(upstream.fd, loop.scratch.baseAddress, loop.scratch.count, Int32(MSG_PEEK))
        if peeked < 0 {
            if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { return }
            return parentBroke(handshake, "reading its answer failed: \(String(cString: strerror(errno)))")
        }
        if peeked == 0 {
            return parentBroke(handshake, "it closed the connection without answering CONNECT")
        }
        let known = handshake.response.count
        let combined = handshake.response + UnsafeRawBufferPointer(rebasing: loop.scratch[..<peeked])
        let bounds = combined.withUnsafeBytes { bytes in
            Result { () throws(MessageSyntax.Violation) in
                try MessageSyntax.headBounds(bytes, maximumLength: ResponseHead.maximumLength)
            }
        }
        let end: Int?
        switch bounds {
        case .failure(let violation):
            // A bare LF or CR: the head the parent meant has ended, and it is not one we read.
            return parentBroke(handshake, "its answer to CONNECT is not HTTP: \(violation.problem)")
        case .success(let found):
            end = found?.end
        }
        // Take what belongs to the head (all of what was peeked while the head has not ended).
        let take = end.map { $0 - known } ?? peeked
        if take > 0 {
            _ = try? SystemCall.read(upstream.fd, into: UnsafeMutableRawBufferPointer(rebasing: loop.scratch[..<take]))
        }
        handshake.response = Array(combined[..<(known + take)])
        // Not even the start of a status line: no need to wait for more of it.
        if !handshake.response.starts(with: Self.httpPrefix.prefix(handshake.response.count)) {
            return parentBroke(handshake, "its answer to CONNECT is not HTTP")
        }
        guard end != nil else {
            if handshake.response.count > ResponseHead.maximumLength {
                return parentBroke(handshake, "its answer to CONNECT has no end of head within 64 KiB")
            }
            return
        }
        let parsed = handshake.response.withUnsafeBytes { bytes in
            Result { () throws(ResponseHead.Malformed) in try ResponseHead.parse(bytes) }
        }
        let authority = hostForURL(handshake.destination) + ":\(handshake.destination.port)"
        switch parsed {
        case .failure(let error):
            parentBroke(handshake, "its answer to CONNECT is not HTTP: \(error.problem)")
        case .success(nil):
            parentBroke(handshake, "its answer to CONNECT is not HTTP")
        case .success(let head?):
            let status = head.statusLine
            switch head.status {
            case 200..<300:
                upstream.wantRead(false)
                connected(to: handshake.address, via: handshake.parent, handshake.destination, then: handshake.next)
            case 407:
                let credentials = handshake.parent.user.map { "refused the credentials of user '\($0)'" }
                    ?? "wants credentials (give them in --parent http://USER:PASSWORD@HOST:PORT)"
                parentAnswered(.fail(.parentAuth, status: 502,
                                     message: "the parent proxy \(handshake.parent) \(credentials): \(status)",
                                     answer: NextHopAnswer(receivedStatus: head.status)))
            default:
                parentAnswered(.fail(.parentRefused, status: 502,
                                     message: "the parent proxy \(handshake.parent) refused CONNECT \(authority): \(status)",
                                     answer: NextHopAnswer(receivedStatus: head.status)))
            }
        }
    }

    private static let httpPrefix = Array("HTTP/1.".utf8)

    /// The parent answered garbage or broke the connection: 502 `parent-protocol`, and it is passed
    /// over for a while.
    private func parentBroke(_ handshake: ParentHandshake, _ problem: String) {
        generation.daemon.parentHealth.markDown(handshake.parent)
        parentAnswered(.fail(.parentProtocol, status: 502, message: "the parent proxy \(handshake.parent): \(problem)"))
    }

    private func parentAnswered(_ verdict: Verdict) {
        // Late: the timeout's entry was due in the clock tick that saw the connection move on.
        guard case .parentHandshake = state else { return }
        upstream?.close()
        upstream = nil
        respond(verdict)
    }
}
