import ATSPolicy
import DecisionLog
import POSIX
import ProxyAccess
import ProxyAnswers
import TLSClient
import TLSWire

/// One QUIC connection attempt whose ClientHello was read: who sent it, where it was going when that
/// is known, and the ClientHello.
package struct QUICAttempt {
    package var sender: SocketAddress
    /// The QUIC listener's address (`--route port:N` matches its port).
    package var listener: SocketAddress
    /// Where the datagram was going: known under TPROXY; nil after a NAT redirect, which rewrote it.
    package var original: SocketAddress?
    package var hello: QUICClientHello

    package init(sender: SocketAddress, listener: SocketAddress, original: SocketAddress?, hello: QUICClientHello) {
        self.sender = sender
        self.listener = listener
        self.original = original
        self.hello = hello
    }

    /// The destination the client would reach over TCP: the server name's host (else the original
    /// address) on the original port, else 443, the port the gateway redirects QUIC from.
    package var destination: Destination? {
        let port = original?.port ?? 443
        if let name = hello.serverName,
           let parsed = try? Destination.parse(authority: name, scheme: .https, portRequired: false) {
            return Destination(host: parsed.host, port: port, scheme: .https)
        }
        return original.map { Destination(host: .address($0.ip), port: $0.port, scheme: .https) }
    }

    /// The attempt's record, its outcome not yet applied, and the verdict that applies it: always
    /// `quic-fallback` (the attempt is dropped), with the decision the app's policy makes for the same
    /// destination over TCP in the record (and in its message), where the fallback will be judged.
    /// The device's own attempts (`system`: Apple's services by their server name) are recorded as
    /// app `system`, and dropped all the same: the device falls back to TCP, where they are its own too.
    package func judged(router: AppRouter, devices: DeviceTable, context: LoadContext?, time: Double,
                        system: SystemTrafficRules = SystemTrafficRules(mode: .judge, destinations: .none))
        -> (record: DecisionRecord, verdict: Verdict) {
        var record = DecisionRecord.begin(client: sender, method: "-", time: time)
        record.path = .quic
        record.originalDestination = original
        record.sni = hello.serverName
        record.keyExchange = KeyExchangeFacts(group: nil, postQuantumOffered: hello.clientHello.offersPostQuantum)
        if !devices.isEmpty { record.device = devices.name(client: sender.ip, user: nil) }
        let dropped = "QUIC version \(hello.version) attempt dropped so that the client falls back to TCP"
        if let destination, let own = system.classify(tunnelTo: destination.host, address: original?.ip,
                                                       port: UInt16(destination.port), userAgent: nil) {
            record.app = SystemTraffic.app
            record.policy = SystemTraffic.app
            record.target = destination
            return (record, .block(.quicFallback, message: "\(dropped); \(own.message)"))
        }
        let (selected, kind, _) = router.choose(user: nil, client: sender.ip, port: listener.port, product: nil)
        record.route = kind
        guard let selected else {
            record.target = destination
            record.unrouted = true
            return (record, .block(.quicFallback, message: dropped + "; no policy for it: no --route matched and --unrouted is block"))
        }
        let app = router.apps[selected]
        record.app = app.id
        record.policy = app.label
        guard let destination else {
            return (record, .block(.quicFallback, message: dropped + "; it named no server and NAT hid its destination"))
        }
        let decision = app.engine.decide(destination, context: context ?? .app)
        record.decision = decision
        let target = "\(destination.host):\(destination.port)"
        let asTCP = decision.action == .block ? "TCP to \(target) would be blocked: \(decision.message)"
                                              : "TCP to \(target) is judged by its TLS handshake"
        return (record, .block(.quicFallback, message: "\(dropped); \(asTCP)"))
    }
}
