import Dispatch
import Testing
@testable import EventLoops

/// A loop's clock runs each deadline once the time it was given has passed it: moved by the test,
/// never by waiting.
@Suite struct LoopClockTests {
    private final class Owner {}

    /// Runs `body` on the loop's queue, where the clock may be used.
    private func onLoop<T>(_ loop: EventLoop, _ body: () -> T) -> T {
        loop.queue.sync { body() }
    }

    @Test func aDeadlineRunsOnceTheClockHasPassedItAndNotBefore() {
        let clock = MovableClock()
        let loop = EventLoop(label: "test.clock.once", now: clock.now)
        let owner = Owner()
        var runs = 0
        onLoop(loop) { loop.clock.schedule(owner, after: 30, repeating: false) { runs += 1 } }
        clock.advance(by: 29)
        #expect(onLoop(loop) { loop.clock.tick(); return runs } == 0)
        clock.advance(by: 2)
        #expect(onLoop(loop) { loop.clock.tick(); return runs } == 1)
        clock.advance(by: 100)
        #expect(onLoop(loop) { loop.clock.tick(); return runs } == 1, "a one-shot deadline runs once")
    }

    @Test func aRepeatingDeadlineComesBackEveryInterval() {
        let clock = MovableClock()
        let loop = EventLoop(label: "test.clock.repeating", now: clock.now)
        let owner = Owner()
        var runs = 0
        onLoop(loop) { loop.clock.schedule(owner, after: 10, repeating: true) { runs += 1 } }
        clock.advance(by: 10)
        #expect(onLoop(loop) { loop.clock.tick(); loop.clock.tick(); return runs } == 1, "once per interval")
        clock.advance(by: 10)
        #expect(onLoop(loop) { loop.clock.tick(); return runs } == 2)
        onLoop(loop) { loop.clock.cancel(owner) }
        clock.advance(by: 10)
        #expect(onLoop(loop) { loop.clock.tick(); return runs } == 2, "cancelled")
    }

    @Test func scheduledAgainAnOwnersDeadlineReplacesTheOldOne() {
        let clock = MovableClock()
        let loop = EventLoop(label: "test.clock.replace", now: clock.now)
        let owner = Owner()
        var ran: [String] = []
        onLoop(loop) {
            loop.clock.schedule(owner, after: 5, repeating: false) { ran.append("first") }
            loop.clock.schedule(owner, after: 20, repeating: false) { ran.append("second") }
        }
        clock.advance(by: 10)
        #expect(onLoop(loop) { loop.clock.tick(); return ran }.isEmpty, "the first deadline is gone")
        clock.advance(by: 10)
        #expect(onLoop(loop) { loop.clock.tick(); return ran } == ["second"])
    }
}

/// A tick used to run every deadline that was due when it began, even one that an earlier handler of
/// the same tick cancelled: a connect timeout cancelling Happy Eyeballs' next attempt could still see
/// it run, after its owner was gone.
@Suite struct LoopClockCancellationTests {
    private final class Owner {}

    @Test func aDeadlineCancelledByAnEarlierHandlerOfTheSameTickDoesNotRun() {
        let clock = MovableClock()
        let loop = EventLoop(label: "test.clock.cancel-in-tick", now: clock.now)
        let first = Owner()
        let second = Owner()
        var ran = 0
        loop.queue.sync {
            loop.clock.schedule(first, after: 1, repeating: false) {
                ran += 1
                loop.clock.cancel(second)
            }
            loop.clock.schedule(second, after: 1, repeating: false) {
                ran += 1
                loop.clock.cancel(first)
            }
        }
        clock.advance(by: 2)
        let runs = loop.queue.sync {
            loop.clock.tick()
            return ran
        }
        #expect(runs == 1, "each handler cancels the other: only the first to run may run")
    }
}
