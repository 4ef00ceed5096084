import ATSPolicy
import DecisionLog
import EventLoops
import Inspection
import POSIX
import ProxyAccess

/// The connection's side of reaching the origin: it hands the way there to an UpstreamConnector
/// (Upstream/UpstreamConnector.swift), which its `connecting` state owns, and takes the one outcome:
/// a refusal answered, a parent's handshake (+Parent) for a tunnel or an upgrade through a parent, or
/// on to what follows the connection.
extension ProxyConnection {
    /// Connects to the origin, directly or through the parent proxies the request's route and
    /// `--parent` name; a forward may take a pooled connection. Then `next`. A transparent connection
    /// goes to its original address only, directly (a parent would resolve the name again); its
    /// server name is checked against that address as `nameCheck` says.
    func openUpstream(_ destination: Destination, pooled: Bool = false, nameCheck: SNIAddressCheck = .off,
                      then next: AfterConnect) {
        assert(upstream == nil, "a connection opens its upstream with none open")
        let pinned = originalDestination.map { SocketAddress(ip: $0.ip, port: destination.port) }
        let parents = pinned == nil ? generation.parents.parents(for: destination, route: routeEgress()) : []
        let connector = UpstreamConnector(destination: destination, pinned: pinned, nameCheck: nameCheck,
                                          parents: parents, pooled: pooled, then: next,
                                          generation: generation, loop: loop, pool: pool,
                                          acl: generation.destinationACLs[aclIndex], client: clientAddress.ip)
        // The connector keeps its own timeouts; whatever the connection had armed (a retried
        // exchange's idle timer) ends here.
        disarm()
        enterConnecting(connector)
        upstreamFromPool = false
        parent = nil
        connector.start { [self] connector, outcome in upstreamReached(outcome, from: connector) }
    }

    /// The way out a route names for this request (`parent=URL`, `direct`); nil when no route does.
    private func routeEgress() -> Egress? {
        let router = generation.router
        guard router.routes.contains(where: { $0.egress != nil }) else { return nil }
        return router.egress(user: proxyUser, client: clientAddress.ip, port: localPort,
                             product: AppRouter.product(ofUserAgent: record.userAgent))
    }

    private func upstreamReached(_ outcome: UpstreamConnector.Outcome, from connector: UpstreamConnector) {
        guard case .connecting(let current) = state, current === connector else {
            // A closing connection cancels its connector, and a cancelled one reports nothing.
            if case .connected(let channel, _, _, _, _) = outcome { channel.close() }
            return impossible("an upstream outcome")
        }
        switch outcome {
        case .refused(let verdict, let via, let dns):
            record.parent = via?.description
            record.noteDNS(dns)
            respond(verdict)
        case .connected(let channel, let address, let via, let fromPool, let dns):
            record.parent = via?.description
            record.noteDNS(dns)
            upstream = channel
            upstreamFromPool = fromPool
            if let mismatch = connector.nameMismatch {
                let block = generation.configuration.transparent.sniCheck == .block
                guard enforce(block ? .block(.sniMismatchAddress, message: mismatch + " (--sni-check block)")
                                    : .note(.sniMismatchAddress, message: mismatch + " (--sni-check report)")) else { return }
            }
            // Absolute-form requests go straight to the parent; a tunnel or an upgrade asks it to
            // CONNECT first.
            if let via, !connector.next.isForward {
                return startParentHandshake(to: via, at: address, for: connector.destination, then: connector.next)
            }
            connected(to: address, via: via, connector.destination, then: connector.next)
        }
    }

    /// What a stop's record says of a connection still connecting: the parent being tried, and
    /// what the origin's name said so far.
    func noteUpstreamSoFar() {
        if case .connecting(let connector) = state {
            record.parent = connector.parent?.description
            record.noteDNS(connector.dns)
        }
    }

    /// Connected to the origin (or through the parent to it): on to what `next` says.
    func connected(to address: SocketAddress, via parent: ParentProxy?, _ destination: Destination,
                   then next: AfterConnect) {
        disarm()
        upstreamAddress = address
        record.noteUpstream(address: address, connectedAfter: monotonic() - started)
        self.parent = parent
        if let parent { generation.daemon.parentHealth.markUp(parent) }
        switch next {
        case .tunnel(let loadContext):
            // A transparent client sent its ClientHello already, and waits for no 200.
            if transparent != nil { return openTunnel(destination, loadContext: loadContext) }
            send(generation.connectEstablished, then: .tunnel(destination, loadContext))
        case .relay:
            let prefix = inbound
            inbound = []
            startRelay(prefix: prefix)
        case .forward(let head):
            startExchange(head, destination: destination)
        case .upgrade(let head, let decision, let original):
            startUpgrade(head, destination: original, secure: destination, decision: decision)
        }
    }
}

extension ProxyConnection.AfterConnect {
    var isForward: Bool { if case .forward = self { true } else { false } }
}
