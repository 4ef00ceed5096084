import Dispatch
import EventLoops
import HandOver
import Synchronization

/// Upgrade (SIGUSR2): the server's side of a hand-over (design §4.4). The old process stops
/// accepting once the new one accepts, hands its movable connections over, and accepts again if
/// the new one fails; the new process adopts what it is handed.
extension ProxyServer {
    /// Every loop stops watching the listening sockets (they stay open: the new process accepts
    /// on them, and this one again if the upgrade fails); `completion` once none accepts here.
    public func stopAccepting(completion: @escaping @Sendable () -> Void) {
        let group = DispatchGroup()
        for proxyLoop in loops {
            proxyLoop.loop.execute(in: group) {
                for listener in proxyLoop.listeners { listener.detach() }
                proxyLoop.listeners = []
            }
        }
        group.notify(queue: .global(), execute: completion)
    }

    /// The upgrade failed: every loop accepts again (what queued meanwhile is in the backlog).
    public func resumeAccepting() {
        for proxyLoop in loops {
            proxyLoop.loop.execute { [self] in
                if proxyLoop.listeners.isEmpty, !proxyLoop.draining { attachListeners(proxyLoop) }
            }
        }
    }

    /// Hands every connection that can move to `sender`, and from now on every one that reaches a
    /// state that moves; `completion` gets the first id after the first wave (every item below it
    /// was offered by then).
    package func handOver(to sender: UpgradeSender, completion: @escaping @Sendable (Int) -> Void) {
        daemon.upgrade.set(sender)
        let group = DispatchGroup()
        for proxyLoop in loops {
            group.enter()
            proxyLoop.loop.execute { [self] in
                handOver(Array(proxyLoop.connections.values)[...], on: proxyLoop, to: sender) { group.leave() }
            }
        }
        group.notify(queue: .global()) { completion(sender.nextID()) }
    }

    /// A batch at a time, the next once the link has caught up: a connection is quiesced only
    /// shortly before it goes, and pauses for its own round trip.
    private func handOver(_ connections: ArraySlice<ProxyConnection>, on proxyLoop: ProxyLoop, to sender: UpgradeSender,
                          done: @escaping @Sendable () -> Void) {
        var rest = connections
        var offered = 0
        while offered < 16, let connection = rest.popFirst() {
            if connection.handOver(to: sender) { offered += 1 }
        }
        guard !rest.isEmpty, !sender.hasEnded else { return done() }
        let remaining = rest
        sender.whenFewerInFlight(than: 16) { [self] in
            proxyLoop.loop.execute { [self] in handOver(remaining, on: proxyLoop, to: sender, done: done) }
        }
    }

    /// No more connections go to the new process (the upgrade failed, or its link ended).
    package func endHandOver() {
        daemon.upgrade.set(nil)
    }

    /// A connection the old process handed over, started on the least loaded loop under the current
    /// configuration; `note` is added to a tunnel's record.
    package func adopt(_ item: AdoptedItem, note: String) {
        let target = loops.min { $0.load.load(ordering: .relaxed) < $1.load.load(ordering: .relaxed) }!
        target.load.add(1, ordering: .relaxed)
        daemon.open.add(1, ordering: .relaxed)
        let generation = current.withLock { $0 }
        target.loop.execute { [daemon] in
            guard !ProxyConnection.adopt(item, generation: generation, on: target, note: note) else { return }
            target.load.subtract(1, ordering: .relaxed)
            daemon.open.subtract(1, ordering: .relaxed)
        }
    }
}
