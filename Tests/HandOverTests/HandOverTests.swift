import ATSPolicy
import DecisionLog
import Foundation
import Glibc
import HandOver
import POSIX
import Synchronization
import Testing

/// The items of an upgrade between a sender and a receiver on a real socket pair, with real sockets
/// and pipes in them: what is taken, refused and kept, and in which order the acknowledgement and the
/// adoption come.
@Suite struct HandOverTests {
    /// A connected pair of stream sockets standing in for a tunnel's client and origin.
    private func streamPair() -> (Int32, Int32) {
        var fds: [Int32] = [-1, -1]
        _ = socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0, &fds)
        return (fds[0], fds[1])
    }

    private func record() -> DecisionRecord.Frozen {
        var record = DecisionRecord.begin(client: SocketAddress(parsing: "10.0.0.5:51234")!, method: "CONNECT", time: 1_700_000_000)
        record.app = "com.example"
        return record.frozen(policy: "lab")
    }

    private func tunnelItem(id: Int, client: Int32, origin: Int32, pipe: (read: Int32, write: Int32), counted: Int) throws -> HandOverItem {
        let header = TunnelHeader(
            id: id, client: "10.0.0.5:51234", localPort: 3128, upstream: "192.0.2.1:443", started: 1, lastActivity: 2,
            up: PumpHeader(pending: [0, 3], pipe: [2, 3], inPipe: counted, bytes: counted + 3, sourceEnded: false, finished: false),
            down: PumpHeader(pending: [3, 0], pipe: nil, inPipe: 0, bytes: 0, sourceEnded: false, finished: false),
            record: record(),
            labels: RecordLabels(time: 1_700_000_000, method: "CONNECT", app: "com.example", device: nil, enforced: true,
                                 parent: nil, upstreamIP: "192.0.2.1", connectedAfter: 0.01, bytesUp: 0, bytesDown: 0),
            proxyUser: nil, fds: ["client", "origin", "up.pipe.read", "up.pipe.write"])
        return HandOverItem(id: id, kind: .tunnel, header: try HandOverLink.encode(header), body: Array("abc".utf8),
                            descriptors: [client, origin, pipe.read, pipe.write])
    }

    @Test func aTunnelWithBytesInItsPipeIsAcknowledgedBeforeItIsAdoptedAndItsBytesArriveInOrder() throws {
        let (oldEnd, newEnd) = try DescriptorPassing.socketPair()
        let oldLink = HandOverLink(fd: oldEnd), newLink = HandOverLink(fd: newEnd)
        let events = Mutex<[String]>([])
        let adopted = Mutex<AdoptedItem?>(nil)
        let done = DispatchSemaphore(value: 0)
        let adoption = DispatchSemaphore(value: 0)
        let sender = UpgradeSender(link: oldLink)
        let receiver = UpgradeReceiver(link: newLink, adopt: { item in
            events.withLock { $0.append("adopted") }
            adopted.withLock { $0 = item }
            adoption.signal()
        }, other: { _, _ in })
        newLink.startReading({ receiver.received($0) }, ended: { _ in })
        oldLink.startReading({ sender.received($0) }, ended: { sender.end($0) })

        let (client, _) = streamPair(), (origin, _) = streamPair()
        let pipe = try SystemCall.pipe()
        let bytes = (0..<40_000).map { UInt8(truncatingIfNeeded: $0 * 7) }
        #expect(bytes.withUnsafeBytes { write(pipe.write, $0.baseAddress, $0.count) } == 40_000)
        let id = sender.nextID()
        let offered = sender.offer(try tunnelItem(id: id, client: client, origin: origin, pipe: pipe, counted: 40_000),
                                   took: { events.withLock { $0.append("took") }; done.signal() },
                                   kept: { reason in events.withLock { $0.append("kept: \(reason)") }; done.signal() })
        #expect(offered)
        #expect(done.wait(timeout: .now() + 5) == .success)
        #expect(sender.settled(before: id + 1))
        // The acknowledgement leaves before the adoption, so the old side may hear `took` before the
        // receiver has adopted the item: wait for the adoption too.
        #expect(adoption.wait(timeout: .now() + 5) == .success)
        let item = try #require(adopted.withLock { $0 })
        guard case .tunnel(let header, let tunnel) = item else { Issue.record("not a tunnel"); return }
        #expect(header.id == id)
        #expect(tunnel.upPending == Array("abc".utf8))
        #expect(tunnel.downPending.isEmpty)
        #expect(tunnel.downPipe == nil)
        let upPipe = try #require(tunnel.upPipe)
        // The old process's copies go; the bytes stay in the pipe the new one holds.
        for fd in [client, origin, pipe.read, pipe.write] { close(fd) }
        var received = [UInt8](repeating: 0, count: 40_000)
        var total = 0
        while total < received.count {
            let n = received[total...].withUnsafeMutableBytes { read(upPipe.read, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            total += n
        }
        #expect(total == 40_000 && received == bytes)
        #expect(header.record == record())
        #expect(sender.counts.tunnels == 1)
        oldLink.close()
        newLink.close()
    }

    @Test func aTunnelWhosePipeDoesNotHoldWhatWasCountedIsRefusedAndKept() throws {
        let (oldEnd, newEnd) = try DescriptorPassing.socketPair()
        let oldLink = HandOverLink(fd: oldEnd), newLink = HandOverLink(fd: newEnd)
        let adopted = Mutex(0)
        let kept = Mutex<String?>(nil)
        let done = DispatchSemaphore(value: 0)
        let sender = UpgradeSender(link: oldLink)
        let receiver = UpgradeReceiver(link: newLink, adopt: { _ in adopted.withLock { $0 += 1 } }, other: { _, _ in })
        newLink.startReading({ receiver.received($0) }, ended: { _ in })
        oldLink.startReading({ sender.received($0) }, ended: { sender.end($0) })

        let (client, _) = streamPair(), (origin, _) = streamPair()
        let pipe = try SystemCall.pipe()
        #expect(write(pipe.write, "12345", 5) == 5)
        let id = sender.nextID()
        _ = sender.offer(try tunnelItem(id: id, client: client, origin: origin, pipe: pipe, counted: 9),
                         took: { done.signal() }, kept: { reason in kept.withLock { $0 = reason }; done.signal() })
        #expect(done.wait(timeout: .now() + 5) == .success)
        #expect(adopted.withLock { $0 } == 0)
        let reason = try #require(kept.withLock { $0 })
        #expect(reason.contains("holds 5 bytes, not the 9 counted"))
        // The old process still holds its pipe with the bytes in it.
        #expect(try SystemCall.readableBytes(pipe.read) == 5)
        #expect(sender.counts.kept == 1)
        oldLink.close()
        newLink.close()
        for fd in [client, origin, pipe.read, pipe.write] { close(fd) }
    }

    @Test func itemsNotAcknowledgedWhenTheLinkEndsAreKeptAndLaterOffersRefused() throws {
        let (oldEnd, newEnd) = try DescriptorPassing.socketPair()
        let oldLink = HandOverLink(fd: oldEnd)
        let kept = Mutex<[Int]>([])
        let ended = DispatchSemaphore(value: 0)
        let sender = UpgradeSender(link: oldLink)
        oldLink.startReading({ sender.received($0) }, ended: { sender.end($0); ended.signal() })
        let (client, _) = streamPair()
        var ids: [Int] = []
        for _ in 0..<3 {
            let id = sender.nextID()
            ids.append(id)
            let item = HandOverItem(id: id, kind: .idle,
                                    header: try HandOverLink.encode(IdleHeader(id: id, client: "10.0.0.5:1", localPort: 3128,
                                                                               proxyUser: nil, verifiedCredentials: nil)),
                                    body: [], descriptors: [client])
            _ = sender.offer(item, took: { Issue.record("nothing was taken") }, kept: { _ in kept.withLock { $0.append(id) } })
        }
        // The new process goes away without a word.
        close(newEnd)
        #expect(ended.wait(timeout: .now() + 5) == .success)
        #expect(kept.withLock { $0.sorted() } == ids)
        #expect(sender.hasEnded)
        let late = HandOverItem(id: sender.nextID(), kind: .idle, header: [], body: [], descriptors: [client])
        let offered = sender.offer(late, took: {}, kept: { _ in })
        #expect(!offered)
        close(client)
    }
}
