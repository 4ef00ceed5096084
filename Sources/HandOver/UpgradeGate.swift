import Synchronization

/// Where the loops look, at each connection that reaches a state that moves, for an upgrade's
/// sender: nil but while one hands connections to a new process. An atomic flag first, because the
/// loops ask on every relay and keep-alive and an upgrade is rare.
package final class UpgradeGate: Sendable {
    private let sender = Mutex<UpgradeSender?>(nil)
    private let open = Atomic<Bool>(false)

    package init() {}

    package var current: UpgradeSender? {
        guard open.load(ordering: .relaxed) else { return nil }
        return sender.withLock { $0 }
    }

    package func set(_ new: UpgradeSender?) {
        sender.withLock { $0 = new }
        open.store(new != nil, ordering: .relaxed)
    }
}
