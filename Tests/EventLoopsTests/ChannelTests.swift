import Dispatch
import Glibc
import Testing
@testable import EventLoops

/// A channel on a real event loop and real socketpairs: its interest is what epoll reports, a closed
/// channel's handlers never run again, and its one write path says what became of the bytes. Whether
/// a handler did not run is seen through a sentinel channel on the same loop, made readable after the
/// event in question: once the sentinel's handler has run and the loop's batch is over, any event
/// epoll had for the channel has been handled too.
@Suite struct ChannelTests {
    /// Reads what is waiting on `fd` (a channel's non-blocking loop end).
    private static func drain(_ fd: Int32) {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while read(fd, &buffer, buffer.count) > 0 {}
    }

    /// A channel on `loop` whose read handler notes `name` and reads what came.
    private func sentinel(_ pair: SocketPair, on loop: EventLoop, _ happenings: Happenings) -> Channel {
        loop.queue.sync {
            let channel = Channel(fd: pair.loopEnd, poller: loop.poller)
            channel.onReadable {
                Self.drain(pair.loopEnd)
                happenings.note("sentinel")
            }
            channel.wantRead(true)
            return channel
        }
    }

    /// Waits for the sentinel to be read, then for the loop to finish the batch it was in.
    private func passSentinel(_ pair: SocketPair, on loop: EventLoop, _ happenings: Happenings, times: Int = 1) -> Bool {
        pair.send("s")
        let passed = happenings.wait(for: "sentinel", times: times)
        loop.queue.sync {}
        return passed
    }

    @Test func readInterestTurnedOffAndOnIsWhatTheLoopReports() throws {
        let loop = EventLoop(label: "test.channel.read")
        let pair = try SocketPair()
        let marker = try SocketPair()
        let happenings = Happenings()
        let channel = loop.queue.sync {
            let channel = Channel(fd: pair.loopEnd, poller: loop.poller)
            channel.onReadable {
                Self.drain(pair.loopEnd)
                happenings.note("read")
            }
            channel.wantRead(true)
            return channel
        }
        let watcher = sentinel(marker, on: loop, happenings)
        pair.send("a")
        #expect(happenings.wait(for: "read"))

        loop.queue.sync { channel.wantRead(false) }
        pair.send("b")
        #expect(passSentinel(marker, on: loop, happenings))
        #expect(happenings.all == ["read", "sentinel"], "bytes arrived, and no read interest: no read handler")

        loop.queue.sync { channel.wantRead(true) }
        #expect(happenings.wait(for: "read", times: 2), "interest back on: the waiting bytes are reported")
        loop.queue.sync {
            channel.close()
            watcher.close()
        }
    }

    @Test func writeInterestTurnedOffStopsTheWritableReports() throws {
        let loop = EventLoop(label: "test.channel.write")
        let pair = try SocketPair()
        let marker = try SocketPair()
        let happenings = Happenings()
        let watcher = sentinel(marker, on: loop, happenings)
        let channel = loop.queue.sync {
            let channel = Channel(fd: pair.loopEnd, poller: loop.poller)
            channel.onWritable { [unowned channel] in
                happenings.note("writable")
                channel.wantWrite(false)
            }
            channel.wantWrite(true)
            return channel
        }
        #expect(happenings.wait(for: "writable"))
        // A socket with room is writable at every wait: only the interest decides whether it is reported.
        #expect(passSentinel(marker, on: loop, happenings))
        #expect(passSentinel(marker, on: loop, happenings, times: 2))
        #expect(happenings.all == ["writable", "sentinel", "sentinel"])
        loop.queue.sync {
            channel.close()
            watcher.close()
        }
    }

    /// Two channels reported readable in one batch, each closing the other: the one closed first is
    /// forgotten by the poller before its descriptor is closed, so its event in that batch is dropped.
    @Test func aChannelClosedByAnEarlierHandlerOfTheSameBatchIsNeverCalled() throws {
        let loop = EventLoop(label: "test.channel.forget")
        let first = try SocketPair()
        let second = try SocketPair()
        let happenings = Happenings()
        // Both are readable before either is registered, so the loop's first wait reports both.
        first.send("1")
        second.send("2")
        let (one, two) = loop.queue.sync {
            let one = Channel(fd: first.loopEnd, poller: loop.poller)
            let two = Channel(fd: second.loopEnd, poller: loop.poller)
            one.onReadable {
                happenings.note("first")
                one.wantRead(false)
                two.close()
            }
            two.onReadable {
                happenings.note("second")
                two.wantRead(false)
                one.close()
            }
            one.wantRead(true)
            two.wantRead(true)
            return (one, two)
        }
        #expect(happenings.wait { !$0.isEmpty })
        loop.queue.sync {}
        let ran = happenings.all
        #expect(ran == ["first"] || ran == ["second"], "only the handler that ran first: \(ran)")
        // The other one's descriptor is closed as well: its peer reads the end (a reset: its byte was never read).
        let closed = ran == ["first"] ? second : first
        #expect(closed.receiveAll().ended)
        loop.queue.sync {
            one.close()
            two.close()
        }
    }

    /// A read handler that closes its channel: the write handler of the same event does not run.
    @Test func aChannelClosedByItsReadHandlerGetsNoWriteHandlerForTheSameEvent() throws {
        let loop = EventLoop(label: "test.channel.close-in-read")
        let pair = try SocketPair()
        let marker = try SocketPair()
        let happenings = Happenings()
        let watcher = sentinel(marker, on: loop, happenings)
        pair.send("x")
        loop.queue.sync {
            let channel = Channel(fd: pair.loopEnd, poller: loop.poller)
            channel.onReadable {
                happenings.note("read")
                channel.close()
            }
            channel.onWritable { happenings.note("writable") }
            channel.wantRead(true)
            channel.wantWrite(true)
        }
        #expect(happenings.wait(for: "read"))
        #expect(passSentinel(marker, on: loop, happenings))
        #expect(happenings.all == ["read", "sentinel"])
        loop.queue.sync { watcher.close() }
    }

    @Test func aWriteThatFitsIsDoneAndEmptiesTheBuffer() throws {
        let loop = EventLoop(label: "test.channel.write-done")
        let pair = try SocketPair()
        let (outcome, left) = loop.queue.sync {
            let channel = Channel(fd: pair.loopEnd, poller: loop.poller)
            var bytes = Array("hello".utf8)
            let outcome = channel.write(&bytes)
            channel.close()
            return (outcome, bytes)
        }
        #expect(outcome == .done)
        #expect(left.isEmpty)
        let received = pair.receiveAll()
        #expect(received.bytes == Array("hello".utf8))
        #expect(received.ended, "the close reached the peer")
    }

    @Test func aWriteTheSocketCannotTakeWholeKeepsTheRestInOrder() throws {
        let loop = EventLoop(label: "test.channel.write-partial")
        let pair = try SocketPair()
        let original = pattern(count: 2 << 20) // far more than a socketpair's buffers hold
        let channel = loop.queue.sync { Channel(fd: pair.loopEnd, poller: loop.poller) }
        let (outcome, left) = loop.queue.sync {
            var bytes = original
            return (channel.write(&bytes), bytes)
        }
        #expect(outcome == .wouldBlock)
        #expect(!left.isEmpty && left.count < original.count)
        #expect(left[...] == original[(original.count - left.count)...], "what is left is the unwritten tail")
        let went = original.count - left.count
        #expect(pair.receive(went) == Array(original[..<went]), "what went arrived whole and in order")
        loop.queue.sync { channel.close() }
    }

    @Test func aWriteToAPeerThatHasGoneFailsAndKeepsTheBytes() throws {
        let loop = EventLoop(label: "test.channel.write-failed")
        let pair = try SocketPair()
        pair.closeTestEnd()
        let (outcome, left) = loop.queue.sync {
            let channel = Channel(fd: pair.loopEnd, poller: loop.poller)
            var bytes = Array("lost".utf8)
            let outcome = channel.write(&bytes)
            channel.close()
            return (outcome, bytes)
        }
        #expect(outcome == .failed)
        #expect(left == Array("lost".utf8))
    }
}
