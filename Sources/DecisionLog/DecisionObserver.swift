/// Hears of every decision record as it is logged, on the loop that logged it: the operator's side
/// (the admin listener's live page) watches the proxy through this, without the proxy knowing it.
/// Called on the hot path: it must not block, and should only keep the record.
package protocol DecisionObserver: AnyObject, Sendable {
    func observe(_ record: DecisionRecord, policy: String)
}
