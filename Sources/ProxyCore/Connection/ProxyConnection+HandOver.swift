import EventLoops
import HandOver
import POSIX

/// An upgrade moves a plain tunnel in its relay phase, or a plain keep-alive client between requests,
/// to the new process (design §4): quiesced here, sent by the HandOver target's sender, then either
/// forgotten (the new process took it: no record here, it writes the one record) or resumed (it did
/// not). Anything else, and anything a client speaks TLS to the proxy for, finishes here.
extension ProxyConnection {
    /// Hands the connection to the new process if an upgrade is under way and it can move; true
    /// when it is on its way (nothing here touches it until the new process answers).
    func handOverIfUpgrading() -> Bool {
        guard let sender = generation.daemon.upgrade.current else { return false }
        return handOver(to: sender)
    }

    func handOver(to sender: UpgradeSender) -> Bool {
        loop.assertOnLoop()
        guard let kind = movableKind else { return false }
        quiesce()
        let loop = self.loop
        let item = makeItem(kind, id: sender.nextID())
        let offered = item.map { item in
            sender.offer(item, took: { loop.execute { self.forgetHandedOver() } }, kept: { _ in loop.execute { self.resume() } })
        } ?? false
        if !offered { resume() }
        return offered
    }

    /// What the connection would move as, if anything.
    private var movableKind: HandOverKind? {
        guard clientTLS == nil, !onTLSListener, !handingOver, !judgementPending, deferredRecord == nil else { return nil }
        switch state {
        case .relaying: return upstream != nil && upstreamTLS == nil ? .tunnel : nil
        case .readingHead: return .idle
        default: return nil
        }
    }

    /// Nothing moves any more: the sockets leave the poller (they stay open: see Channel.suspend),
    /// the timers stop.
    private func quiesce() {
        handingOver = true
        disarm()
        client.suspend()
        upstream?.suspend()
        proxyLoop.waitingForLog.removeAll { $0 == ObjectIdentifier(self) }
    }

    /// The new process did not take it: it goes on here as if nothing happened.
    func resume() {
        guard handingOver, !isClosed else { return }
        handingOver = false
        client.unsuspend()
        upstream?.unsuspend()
        switch state {
        case .relaying(let up, let down):
            armIdleTimer()
            down.run()
            up.run()
        case .readingHead:
            if proxyLoop.draining { return close() }
            arm(after: generation.configuration.timeouts.head) { [self] in close() }
            if !inbound.isEmpty { readHead() }
        default:
            impossible("a hand-over resumed")
        }
    }

    /// The new process took it: this process's descriptors are closed and the connection is gone,
    /// with no record (the new process writes it when the connection ends there).
    func forgetHandedOver() {
        guard handingOver else { return }
        handingOver = false
        if case .relaying(let up, let down) = state {
            up.relinquish()
            down.relinquish()
        }
        close()
    }

    private func makeItem(_ kind: HandOverKind, id: Int) -> HandOverItem? {
        guard kind == .tunnel else {
            return .idle(id: id, client: (client.fd, clientAddress), localPort: localPort, inbound: inbound,
                         proxyUser: proxyUser, verifiedCredentials: verifiedCredentials)
        }
        guard case .relaying(let up, let down) = state, let upstream, let upstreamAddress else { return nil }
        completeRecord()
        return .tunnel(id: id, client: (client.fd, clientAddress), localPort: localPort, origin: (upstream.fd, upstreamAddress),
                       started: started, lastActivity: lastActivity, up: up.snapshot, down: down.snapshot, record: record,
                       policy: generation.log.policy, proxyUser: proxyUser)
    }

    // MARK: the new process

    /// Builds a connection the old process handed over (on the loop that will own it) and lets it
    /// run: a tunnel relays on with its record (`note` added to its message), an idle client waits
    /// for its next request. False when the item names no address (its descriptors are closed).
    static func adopt(_ item: AdoptedItem, generation: Generation, on proxyLoop: ProxyLoop, note: String) -> Bool {
        switch item {
        case .tunnel(let header, let tunnel):
            guard let client = SocketAddress(parsing: header.client), let origin = SocketAddress(parsing: header.upstream) else {
                tunnel.closeAll()
                return false
            }
            let connection = ProxyConnection(fd: tunnel.client, clientAddress: client, localPort: header.localPort,
                                             generation: generation, loop: proxyLoop)
            connection.adoptTunnel(header, tunnel, origin: origin, note: note)
        case .idle(let header, let body, let fd):
            guard let client = SocketAddress(parsing: header.client) else {
                SystemCall.close(fd)
                return false
            }
            let connection = ProxyConnection(fd: fd, clientAddress: client, localPort: header.localPort,
                                             generation: generation, loop: proxyLoop)
            connection.proxyUser = header.proxyUser
            connection.verifiedCredentials = header.verifiedCredentials
            connection.inbound = body
            connection.nextRequest()
        }
        return true
    }

    private func adoptTunnel(_ header: TunnelHeader, _ tunnel: AdoptedTunnel, origin: SocketAddress, note: String) {
        record = header.record(client: clientAddress, note: note)
        proxyUser = header.proxyUser
        started = header.started
        let upstream = Channel(fd: tunnel.origin, poller: loop.poller)
        self.upstream = upstream
        upstreamAddress = origin
        let pumps = tunnel.pumps(header, client: client, origin: upstream, loop: loop)
        relay(up: pumps.up, down: pumps.down, lastActivity: header.lastActivity)
    }
}
