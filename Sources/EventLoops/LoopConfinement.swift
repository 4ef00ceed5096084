import Dispatch

/// Loop-confined code (a channel, a clock, a pump, a connection) runs on its loop's serial queue and
/// nowhere else: the four Swift 5 mode targets rely on that where Swift 6's checker cannot see it.
/// Debug builds (the test runs and the sanitizer jobs) check it at the doors, as swift-nio's
/// `assertInEventLoop` does; release builds compile the check away.
@inline(__always)
package func assertOnLoop(_ queue: DispatchQueue) {
    #if DEBUG
    dispatchPrecondition(condition: .onQueue(queue))
    #endif
}

extension EventLoop {
    /// Traps in a debug build when called off this loop's queue.
    @inline(__always)
    package func assertOnLoop() {
        EventLoops.assertOnLoop(queue)
    }
}

/// Whether this build checks confinement (a debug build): the tests that break the rule on purpose
/// run only where it is checked.
#if DEBUG
package let loopConfinementIsChecked = true
#else
package let loopConfinementIsChecked = false
#endif
