import Dispatch
import Glibc
import Synchronization
import Testing
@testable import EventLoops
import POSIX

/// A relay moved mid-stream, as an upgrade moves a tunnel: its channels suspended, its pumps'
/// snapshots (a pipe with bytes in it among them) taken on one loop and resumed from copies of the
/// descriptors on another (a passed descriptor is a copy), the first loop's copies closed. Every byte
/// arrives once and in order, and the counts go on from where they were.
@Suite struct PumpHandOverTests {
    @Test func aRelayResumedOnAnotherLoopFromItsSnapshotsLosesNoByteOfWhatItsPipeHeld() throws {
        let client = try SocketPair(), origin = try SocketPair()
        let first = EventLoop(label: "test.handover.first"), second = EventLoop(label: "test.handover.second")
        let data = pattern(count: 2 << 20)
        nonisolated(unsafe) var channels: (client: Channel, origin: Channel)!
        nonisolated(unsafe) var pumps: (up: Pump, down: Pump)!
        first.queue.sync {
            let toClient = Channel(fd: client.loopEnd, poller: first.poller)
            let toOrigin = Channel(fd: origin.loopEnd, poller: first.poller)
            let up = Pump(from: toClient, to: toOrigin, loop: first, pending: Array("held".utf8))
            let down = Pump(from: toOrigin, to: toClient, loop: first)
            toClient.onReadable { up.readable() }
            toOrigin.onWritable { up.run() }
            toOrigin.onReadable { down.readable() }
            toClient.onWritable { down.run() }
            channels = (toClient, toOrigin)
            pumps = (up, down)
            down.run()
            up.run()
        }
        // The origin reads nothing yet: the relay fills its socket, then its pipe, then stalls.
        let sender = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            client.send(data)
            client.shutdownTestEnd()
            sender.signal()
        }
        let stalled = (0..<500).contains { _ in
            usleep(10_000)
            return first.queue.sync { pumps.up.snapshot.inPipe } > 0
                && (try? SystemCall.readableBytes(client.loopEnd)) ?? 0 > 0
        }
        #expect(stalled, "bytes wait in the pipe and before it")

        // Quiesce on the first loop, snapshot, and hand copies of everything to the second.
        let snapshots: (up: Pump.Snapshot, down: Pump.Snapshot) = first.queue.sync {
            channels.client.suspend()
            channels.origin.suspend()
            return (pumps.up.snapshot, pumps.down.snapshot)
        }
        let pipe = try #require(snapshots.up.pipe)
        #expect(try SystemCall.readableBytes(pipe.read) == snapshots.up.inPipe, "the pump counted what its pipe holds")
        #expect(snapshots.up.bytes >= 4 + snapshots.up.inPipe)
        #expect(snapshots.down.pipe == nil, "an idle direction holds no pipe")
        let copies = (client: dup(client.loopEnd), origin: dup(origin.loopEnd), read: dup(pipe.read), write: dup(pipe.write))
        first.queue.sync {
            pumps.up.relinquish()
            pumps.down.relinquish()
            channels.client.close()
            channels.origin.close()
        }
        let ended = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var resumed: (up: Pump, down: Pump)!
        second.queue.sync {
            let toClient = Channel(fd: copies.client, poller: second.poller)
            let toOrigin = Channel(fd: copies.origin, poller: second.poller)
            var upState = snapshots.up
            upState.pipe = (copies.read, copies.write)
            let up = Pump(resuming: upState, from: toClient, to: toOrigin, loop: second)
            let down = Pump(resuming: snapshots.down, from: toOrigin, to: toClient, loop: second)
            toClient.onReadable { up.readable() }
            toOrigin.onWritable { up.run() }
            toOrigin.onReadable { down.readable() }
            toClient.onWritable { down.run() }
            up.onFinish = { ended.signal() }
            resumed = (up, down)
            down.run()
            up.run()
        }
        let received = origin.receiveAll()
        #expect(sender.wait(timeout: .now() + 10) == .success)
        #expect(received.ended, "the client's end reaches the origin from the second loop")
        #expect(received.bytes.count == 4 + data.count)
        #expect(received.bytes == Array("held".utf8) + data, "every byte once, in order, the pipe's included")
        #expect(ended.wait(timeout: .now() + 10) == .success)
        #expect(second.queue.sync { resumed.up.bytes } == 4 + data.count, "the count goes on from the first loop's")
    }
}
