import Dispatch
import Foundation
import POSIX

/// One connection on its way to the new process: a `tunnel` or `idle` message, made by the loop
/// that held the connection once it had quiesced it.
package struct HandOverItem {
    package var id: Int
    package var kind: HandOverKind
    package var header: [UInt8]
    package var body: [UInt8]
    /// The connection's descriptors, still this process's: they are closed when the new process
    /// took the item, and used again if it did not.
    package var descriptors: [Int32]

    package init(id: Int, kind: HandOverKind, header: [UInt8], body: [UInt8], descriptors: [Int32]) {
        self.id = id
        self.kind = kind
        self.header = header
        self.body = body
        self.descriptors = descriptors
    }
}

/// The old process's side of the items (design §4.4 steps 6-7): sends each item the loops hand it,
/// in order, on a queue of its own, and settles each once: `took` when the new process says it holds
/// the item (the loop then forgets the connection without a record), `kept` when it refused it, the
/// message could not be sent, or the link ended before its acknowledgement (the loop resumes the
/// connection: by the rule that the new process relays nothing before it says `took`, no byte of it
/// has moved elsewhere).
package final class UpgradeSender: @unchecked Sendable {
    private let link: HandOverLink
    private let queue = DispatchQueue(label: "atsgate.upgrade.send")
    private let lock = NSLock()
    private var outstanding: [Int: Pending] = [:]
    private var nextIdentifier = 1
    private var endReason: String?
    /// Items the new process took, by kind, and items kept here.
    private var tookByKind: [HandOverKind: Int] = [:]
    private var keptCount = 0
    /// Who waits for fewer items in flight (`whenFewerInFlight`).
    private var waiting: [(limit: Int, action: @Sendable () -> Void)] = []

    private struct Pending {
        var kind: HandOverKind
        var took: @Sendable () -> Void
        var kept: @Sendable (String) -> Void
    }

    package init(link: HandOverLink) {
        self.link = link
    }

    /// The id of the next item (its header names it).
    package func nextID() -> Int {
        lock.withLock {
            defer { nextIdentifier += 1 }
            return nextIdentifier
        }
    }

    /// Sends `item` after those offered before it. False when the link has ended: nothing was sent
    /// and the caller keeps the connection; otherwise exactly one of `took` and `kept` runs later,
    /// on the sender's threads (the caller moves to its loop itself).
    package func offer(_ item: HandOverItem, took: @escaping @Sendable () -> Void,
                       kept: @escaping @Sendable (String) -> Void) -> Bool {
        let accepted = lock.withLock {
            guard endReason == nil else { return false }
            outstanding[item.id] = Pending(kind: item.kind, took: took, kept: kept)
            return true
        }
        guard accepted else { return false }
        queue.async { [self] in
            do {
                try link.send(HandOverFrame(kind: item.kind.rawValue, header: item.header, body: item.body,
                                            descriptors: item.descriptors))
            } catch {
                settle(item.id, took: false, reason: "\(error)")
            }
        }
        return true
    }

    /// A `took` or `refused` message from the new process; false for any other kind.
    @discardableResult
    package func received(_ frame: HandOverFrame) -> Bool {
        switch HandOverKind(rawValue: frame.kind) {
        case .took?:
            guard let header = try? HandOverLink.decode(TookHeader.self, from: frame) else { return true }
            for id in header.ids { settle(id, took: true, reason: "") }
            return true
        case .refused?:
            guard let header = try? HandOverLink.decode(RefusedHeader.self, from: frame) else { return true }
            settle(header.id, took: false, reason: "refused by the new process: \(header.reason)")
            return true
        default:
            return false
        }
    }

    /// The link ended (or the upgrade was given up): every item not yet taken is kept, and later
    /// offers are refused. Sends queued before run first, so an item is never settled twice.
    package func end(_ reason: String) {
        let (pending, waiters): ([Int: Pending], [@Sendable () -> Void]) = lock.withLock {
            if endReason == nil { endReason = reason }
            defer {
                outstanding = [:]
                waiting = []
            }
            keptCount += outstanding.count
            return (outstanding, waiting.map(\.action))
        }
        for (_, item) in pending.sorted(by: { $0.key < $1.key }) { item.kept(reason) }
        for action in waiters { action() }
    }

    /// Runs `action` (on the sender's threads, or here at once) as soon as fewer than `limit` items
    /// are waiting for their answer, or the link has ended. The first wave is handed over in batches
    /// this way: a tunnel is quiesced only shortly before its message goes, so it pauses for its own
    /// round trip, not for a thousand others queued ahead of it.
    package func whenFewerInFlight(than limit: Int, _ action: @escaping @Sendable () -> Void) {
        let now = lock.withLock {
            guard outstanding.count >= limit, endReason == nil else { return true }
            waiting.append((limit, action))
            return false
        }
        if now { action() }
    }

    /// Whether every item with an id below `id` is settled.
    package func settled(before id: Int) -> Bool {
        lock.withLock { outstanding.keys.allSatisfy { $0 >= id } }
    }

    /// What the new process took so far, by kind, and how many items were kept here.
    package var counts: (tunnels: Int, idle: Int, kept: Int) {
        lock.withLock { (tookByKind[.tunnel, default: 0], tookByKind[.idle, default: 0], keptCount) }
    }

    /// Whether the link has ended (late connections stay here then).
    package var hasEnded: Bool { lock.withLock { endReason != nil } }

    private func settle(_ id: Int, took: Bool, reason: String) {
        let (item, ready): (Pending?, [@Sendable () -> Void]) = lock.withLock {
            guard let item = outstanding.removeValue(forKey: id) else { return (nil, []) }
            if took { tookByKind[item.kind, default: 0] += 1 } else { keptCount += 1 }
            let ready = waiting.filter { outstanding.count < $0.limit }.map(\.action)
            waiting.removeAll { outstanding.count < $0.limit }
            return (item, ready)
        }
        guard let item else { return }
        if took { item.took() } else { item.kept(reason) }
        for action in ready { action() }
    }
}
