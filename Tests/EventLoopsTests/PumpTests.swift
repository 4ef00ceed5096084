import Dispatch
import Glibc
import Testing
@testable import EventLoops

/// A pump each way between two real socketpairs on a real loop, bound as the proxy binds a relay: the
/// bytes arrive whole and in order and are counted, one direction's end is a half-close that leaves
/// the other flowing, and the owner closes both sides once both have ended (Pump's doc).
@Suite struct PumpTests {
    /// A client, an origin, and the relay between them on `loop`.
    final class Relay {
        let loop: EventLoop
        let client: SocketPair
        let origin: SocketPair
        let happenings = Happenings()
        private var up: Pump!
        private var down: Pump!

        init(_ label: String, upPending: [UInt8] = []) throws {
            loop = EventLoop(label: label)
            client = try SocketPair()
            origin = try SocketPair()
            loop.queue.sync {
                let toClient = Channel(fd: client.loopEnd, poller: loop.poller)
                let toOrigin = Channel(fd: origin.loopEnd, poller: loop.poller)
                let up = Pump(from: toClient, to: toOrigin, loop: loop, pending: upPending)
                let down = Pump(from: toOrigin, to: toClient, loop: loop)
                toClient.onReadable { up.readable() }
                toOrigin.onWritable { up.run() }
                toOrigin.onReadable { down.readable() }
                toClient.onWritable { down.run() }
                for (name, pump) in [("up", up), ("down", down)] {
                    pump.onFinish = { [happenings] in
                        happenings.note("\(name) ended")
                        // The owner's rule: both directions over, both sockets close (the close sends the FIN).
                        if up.finished, down.finished {
                            toClient.close()
                            toOrigin.close()
                            happenings.note("closed")
                        }
                    }
                    pump.onError = { [happenings] _ in
                        happenings.note("\(name) failed")
                        toClient.close()
                        toOrigin.close()
                    }
                }
                self.up = up
                self.down = down
                down.run()
                up.run()
            }
        }

        /// What each pump has counted.
        var bytes: (up: Int, down: Int) { loop.queue.sync { (up.bytes, down.bytes) } }
    }

    @Test func oneDirectionEndingHalfClosesItsOutputWhileTheOtherKeepsFlowing() throws {
        let relay = try Relay("test.pump.half-close")
        relay.client.send("hello")
        relay.client.shutdownTestEnd()
        let up = relay.origin.receiveAll()
        #expect(up.bytes == Array("hello".utf8))
        #expect(up.ended, "the client's end reaches the origin as a half-close")
        #expect(relay.happenings.wait(for: "up ended"))

        relay.origin.send("world")
        #expect(relay.client.receive(5) == Array("world".utf8), "the other direction still flows")
        #expect(!relay.happenings.all.contains("closed"))

        relay.origin.shutdownTestEnd()
        #expect(relay.happenings.wait(for: "closed"), "both ended: the owner closes both sides")
        let down = relay.client.receiveAll()
        #expect(down.bytes.isEmpty && down.ended)
        #expect(relay.happenings.all == ["up ended", "down ended", "closed"])
        #expect(relay.bytes == (up: 5, down: 5))
    }

    @Test func bytesHeldForTheOutputGoFirstAndAreCounted() throws {
        let held = Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8)
        let relay = try Relay("test.pump.held", upPending: held)
        relay.client.send("body")
        relay.client.shutdownTestEnd()
        let received = relay.origin.receiveAll()
        #expect(received.bytes == held + Array("body".utf8))
        #expect(received.ended)
        #expect(relay.happenings.wait(for: "up ended"))
        #expect(relay.bytes.up == held.count + 4)
    }

    /// Far more than the pipe and both socket buffers hold (4 MiB through a 64 KiB pipe): the pump
    /// moves it in many rounds, waiting on the output whenever it is full, and loses or reorders nothing.
    @Test func moreThanTheBuffersHoldArrivesWholeAndInOrder() throws {
        let relay = try Relay("test.pump.backpressure")
        let data = pattern(count: 4 << 20)
        let client = relay.client
        let sent = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            client.send(data)
            client.shutdownTestEnd()
            sent.signal()
        }
        let received = relay.origin.receiveAll()
        #expect(sent.wait(timeout: .now() + 10) == .success)
        #expect(received.ended)
        #expect(received.bytes.count == data.count)
        #expect(received.bytes == data, "every byte, in order")
        #expect(relay.bytes.up == data.count)
    }

    @Test func anOutputWhosePeerHasGoneEndsThePumpWithAnError() throws {
        signal(SIGPIPE, SIG_IGN) // splice(2) into a socket whose peer has gone raises it; the pump handles EPIPE
        let relay = try Relay("test.pump.error")
        relay.origin.closeTestEnd()
        relay.client.send("lost")
        #expect(relay.happenings.wait(for: "up failed"))
        #expect(relay.client.receiveAll().ended, "the owner closed the client's side")
    }
}
