import Dispatch
import Foundation
import Glibc
import Testing
@testable import EventLoops

/// Loop-confined objects check, in a debug build, that they are used on their loop's queue: a test
/// built to break the rule dies of it (in a child process, Swift Testing's exit test), and the same
/// calls made on the loop pass. libdispatch on Linux traps without a message (SIGILL on x86-64),
/// so the child's end is all there is to see.
@Suite struct LoopConfinementTests {
    private final class Owner {}

    @Test(.enabled(if: loopConfinementIsChecked, "release builds compile the check away"))
    func aClockScheduledOffItsLoopTraps() async {
        await #expect(processExitsWith: .failure) {
            let loop = EventLoop(label: "test.confinement.clock")
            loop.clock.schedule(loop, after: 1, repeating: false) {}
        }
    }

    @Test(.enabled(if: loopConfinementIsChecked, "release builds compile the check away"))
    func aChannelWrittenOffItsLoopTraps() async {
        await #expect(processExitsWith: .failure) {
            var fds: [Int32] = [-1, -1]
            guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0 else { return }
            let loop = EventLoop(label: "test.confinement.channel")
            let channel = Channel(fd: fds[0], poller: loop.poller)
            var bytes: [UInt8] = [1]
            _ = channel.write(&bytes)
        }
    }

    @Test func theSameCallsOnTheLoopPass() throws {
        var fds: [Int32] = [-1, -1]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        defer { close(fds[1]) }
        let loop = EventLoop(label: "test.confinement.on-loop")
        let owner = Owner()
        let outcome = loop.queue.sync {
            loop.clock.schedule(owner, after: 1, repeating: false) {}
            loop.clock.cancel(owner)
            let channel = Channel(fd: fds[0], poller: loop.poller)
            channel.wantRead(true)
            var bytes: [UInt8] = [1]
            defer { channel.close() }
            return channel.write(&bytes)
        }
        #expect(outcome == .done)
    }
}
