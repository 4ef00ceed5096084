import Foundation
import Glibc
import HandOver
import LogTestSupport
import POSIX
import Testing
import TestSupport
@testable import ProxyCore

/// Two proxies in one process joined by a real hand-over link: what one hands over, the other relays
/// on and logs once; what the other side refuses, the first resumes as if nothing had happened.
@Suite(.serialized) struct ConnectionHandOverTests {
    private func start(connectPort: Int) throws -> (ProxyServer, MemoryLog, Int) {
        var configuration = ProxyConfiguration()
        configuration.listeners.proxy = [SocketAddress(ip: .v4(0x7F00_0001), port: 0)]
        configuration.log.format = .journal
        configuration.listeners.loopCount = 1
        configuration.connectPorts = [connectPort]
        let log = MemoryLog()
        let server = try ProxyServer(configuration: configuration, sink: log.sink)
        server.start()
        return (server, log, try #require(server.boundAddresses.first).port)
    }

    private func stop(_ server: ProxyServer) {
        let stopped = DispatchSemaphore(value: 0)
        server.stop(grace: 1, completion: { _ in stopped.signal() })
        _ = stopped.wait(timeout: .now() + 10)
    }

    /// A tunnel through `port` to `origin`, which has echoed `first` back.
    private func tunnel(port: Int, origin: Int, first: String) throws -> RawClient {
        let client = try RawClient(port: port)
        client.send("CONNECT 127.0.0.1:\(origin) HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(client.read(until: "\r\n\r\n").hasPrefix("HTTP/1.1 200 "))
        client.send(first)
        #expect(client.read(until: first) == first)
        return client
    }

    /// Hands every movable connection of `server` over `sender` and waits until each is settled.
    private func handOver(_ server: ProxyServer, to sender: UpgradeSender) {
        let offered = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var mark = 0
        server.handOver(to: sender) { end in
            mark = end
            offered.signal()
        }
        #expect(offered.wait(timeout: .now() + 10) == .success)
        #expect(eventually { sender.settled(before: mark) })
        server.endHandOver()
    }

    private func eventually(_ condition: () -> Bool) -> Bool {
        for _ in 0..<500 where !condition() { usleep(10_000) }
        return condition()
    }

    @Test func aTunnelHandedToAnotherServerRelaysOnThereAndIsLoggedOnceWithTheBytesOfBoth() throws {
        let echo = try EchoOrigin()
        let (old, oldLog, port) = try start(connectPort: echo.port)
        let (new, newLog, _) = try start(connectPort: echo.port)
        defer { stop(new) }
        let client = try tunnel(port: port, origin: echo.port, first: "\u{1}before")

        let (oldEnd, newEnd) = try DescriptorPassing.socketPair()
        let oldLink = HandOverLink(fd: oldEnd), newLink = HandOverLink(fd: newEnd)
        let sender = UpgradeSender(link: oldLink)
        let receiver = UpgradeReceiver(link: newLink, adopt: { new.adopt($0, note: "moved in a test") }, other: { _, _ in })
        newLink.startReading({ receiver.received($0) }, ended: { _ in })
        oldLink.startReading({ sender.received($0) }, ended: { sender.end($0) })
        handOver(old, to: sender)
        #expect(sender.counts.tunnels == 1)
        #expect(eventually { old.openConnections == 0 && new.openConnections == 1 })
        stop(old)

        client.send("after")
        #expect(client.read(until: "after") == "after", "the tunnel relays on through the other server")
        let clientPort = Self.localPort(client.fd)
        client.close()
        let records = newLog.wait(for: 1)
        #expect(records.count == 1)
        let record = try #require(records.first)
        #expect(record["method"] == "CONNECT")
        #expect(record["bytes_up"] == "12" && record["bytes_down"] == "12", "\(record)")
        #expect(record["message"]?.hasSuffix("; moved in a test") == true)
        #expect(record["client"] == "127.0.0.1:\(clientPort)")
        #expect(oldLog.records.isEmpty, "the server that handed it over never logs it")
        oldLink.close()
        newLink.close()
    }

    @Test func aTunnelTheOtherSideRefusesResumesWhereItWasAndIsLoggedOnceHere() throws {
        let echo = try EchoOrigin()
        let (server, log, port) = try start(connectPort: echo.port)
        let client = try tunnel(port: port, origin: echo.port, first: "\u{1}before")
        let idle = try RawClient(port: port)
        #expect(eventually { server.openConnections == 2 }, "the server has accepted both")

        let (oldEnd, otherEnd) = try DescriptorPassing.socketPair()
        let link = HandOverLink(fd: oldEnd), other = HandOverLink(fd: otherEnd)
        let sender = UpgradeSender(link: link)
        // The other side takes nothing: each item is refused, its descriptors closed there.
        other.startReading({ frame in
            for fd in frame.descriptors { SystemCall.close(fd) }
            let id = (try? JSONSerialization.jsonObject(with: Data(frame.header)) as? [String: Any])?["id"] as? Int ?? 0
            try? other.send(.refused, RefusedHeader(id: id, reason: "a test refuses everything"))
        }, ended: { _ in })
        link.startReading({ sender.received($0) }, ended: { sender.end($0) })
        handOver(server, to: sender)
        #expect(sender.counts.kept == 2, "the tunnel and the idle client")

        client.send("after")
        #expect(client.read(until: "after") == "after", "the tunnel relays on here")
        idle.send("GET http://127.0.0.1:1/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        #expect(idle.readAll().hasPrefix("HTTP/1.1 "), "the idle client's next request is answered here")
        client.close()
        stop(server)
        let tunnels = log.wait(for: 2).filter { $0["method"] == "CONNECT" }
        #expect(tunnels.count == 1)
        #expect(tunnels.first?["bytes_up"] == "12" && tunnels.first?["bytes_down"] == "12")
        link.close()
        other.close()
    }

    private static func localPort(_ fd: Int32) -> Int {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
