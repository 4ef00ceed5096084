import ATSPolicy
import DecisionLog
import HTTP1
import Inspection
import POSIX
import ProxyAnswers
import TLSWire

/// The transparent path (`--listen-transparent`, `--listen-tproxy`): a connection a firewall sent here
/// on its way to somewhere else. Its first bytes say what it is (TransparentFirstBytes); from there it
/// is the proxy path's own code: a ClientHello is a CONNECT to its server name (or the address) whose
/// 200 is implicit, an HTTP request an absolute-form one by its `Host`; both go to the original
/// destination and nowhere else (never re-resolved: UpstreamConnector's pinned address).
extension ProxyConnection {
    /// Where a transparent connection was going; nil on the proxy path.
    var originalDestination: SocketAddress? {
        if case .redirected(let address)? = transparent { address } else { nil }
    }

    /// A new record for the connection's next request, on its path.
    func beginRecord(_ method: String) {
        record = .begin(client: clientAddress, method: method)
        guard let transparent else { return }
        record.path = .transparent
        record.originalDestination = transparent.address
    }

    /// Starts reading a transparent connection's first bytes, under the head timeout; one that was not
    /// redirected, or was going to the proxy itself, is closed at once.
    func startTransparent() {
        if case .loop(_, let why)? = transparent {
            return respond(.block(.transparentLoop, message: "transparent connection not relayed: \(why)"), .cut)
        }
        enterClassifying()
        arm(after: generation.configuration.timeouts.head) { [self] in
            let seconds = Int(generation.configuration.timeouts.head)
            record.recordFailure(.clientTimeout, message: inbound.isEmpty ? "the client sent nothing in \(seconds) s"
                : "no whole ClientHello or HTTP request line in \(seconds) s: " + TransparentFirstBytes.describe(inbound))
            finish()
        }
    }

    func classifyFirstBytes() {
        guard case .classifying = state, let original = originalDestination else {
            return impossible("a transparent connection's first bytes read")
        }
        let outcome = readClient()
        // Gone before a byte (a port scan's connect, a reset): nothing to tell it by, so another protocol.
        if outcome == .failed || (outcome == .ended && inbound.isEmpty) {
            return transparentOther(outcome == .failed ? "the client connection failed before it sent a byte"
                                                       : "the client closed the connection before sending a byte", to: original)
        }
        switch TransparentFirstBytes.classify(inbound) {
        case .needMore where outcome == .ended:
            transparentOther("the client closed after " + TransparentFirstBytes.describe(inbound), to: original)
        case .needMore:
            break
        case .http:
            // From here the proxy path's request head reading, which takes the same bytes from the start.
            start()
            readHead()
        case .tls(let hello):
            disarm()
            transparentTLS(hello, to: original)
        case .other(let what):
            transparentOther(what, to: original)
        }
    }

    /// A ClientHello: the tunnel to the original destination, named by the server name (or the address
    /// when it names none), judged and inspected as a CONNECT to that name is.
    private func transparentTLS(_ hello: ClientHello, to original: SocketAddress) {
        rawAnswer = .alert(recordVersion: inbound.count >= 3 ? UInt16(inbound[1]) << 8 | UInt16(inbound[2]) : 0x0303)
        record.sni = hello.serverName
        let named = hello.serverName.flatMap { try? Destination.parse(authority: $0, scheme: .https, portRequired: false) }
        let destination = Destination(host: named?.host ?? .address(original.ip), port: original.port, scheme: .https)
        let system = generation.configuration.systemTraffic.classify(tunnelTo: destination.host, address: original.ip,
                                                                     port: UInt16(original.port), userAgent: nil)
        guard choosePolicy(product: nil, target: destination, system: system) else { return }
        let loadContext = generation.configuration.context ?? LoadContext.infer(userAgent: nil)
        record.decision = policy.decide(destination, context: loadContext)
        exemptSystemTraffic()
        openUpstream(destination, nameCheck: named == nil || system != nil ? .off : generation.configuration.transparent.sniCheck,
                     then: .tunnel(loadContext))
    }

    /// Neither TLS nor HTTP: closed, or relayed as it is (`--transparent-other`).
    private func transparentOther(_ what: String, to original: SocketAddress) {
        disarm()
        rawAnswer = .cut
        let destination = Destination(host: .address(original.ip), port: original.port, scheme: .https)
        let system = generation.configuration.systemTraffic.classify(tunnelTo: destination.host, address: original.ip,
                                                                     port: UInt16(original.port), userAgent: nil)
        guard choosePolicy(product: nil, target: destination, system: system) else { return }
        if system != nil {
            // The device's own (APNs to Apple's range, an operator's --system-dest): relayed as it is.
            record.decision = policy.decide(destination, context: .app)
            exemptSystemTraffic()
            return openUpstream(destination, then: .relay)
        }
        let message = "\(what); transparent connection to \(original)"
        guard generation.configuration.transparent.other == .allow else {
            return respond(.block(.otherProtocol, message: message + " closed (--transparent-other block)"), .cut)
        }
        enforce(.note(.otherProtocol, message: message + " relayed (--transparent-other allow)"))
        openUpstream(destination, then: .relay)
    }

    /// An HTTP request's destination on the transparent path: its `Host` on the original port (the
    /// original address without one); nil when that `Host` is no valid authority.
    func transparentTarget(_ head: RequestHead) -> Destination? {
        guard let original = originalDestination else { return nil }
        var destination = Destination(host: .address(original.ip), port: original.port, scheme: .http)
        if let host = head.field(.host), !host.isEmpty {
            guard let named = try? Destination.parse(authority: host, scheme: .http, portRequired: false) else { return nil }
            destination.host = named.host
        }
        return destination
    }

    /// An HTTP request on the transparent path, to `transparentTarget`.
    /// `named`: `transparentTarget(head)`, as `dispatch` already read it.
    func forwardTransparent(_ head: RequestHead, named: Destination?) {
        guard let destination = named else {
            return respond(.answer(status: 400, .badRequest, message: "Host \(head.field(.host) ?? "") is not a valid authority"))
        }
        forward(head, to: destination)
    }
}
