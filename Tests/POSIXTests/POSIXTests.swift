import CAtsgateShims
import Glibc
import POSIX
import Testing
import TestSupport

/// The one POSIX layer: what each wrapper reports for the cases its callers branch on.
@Suite struct POSIXTests {
    @Test func aConnectToAClosedPortIsRefusedAndOneThatListensSucceeds() throws {
        let closed = try freePort()
        #expect(throws: SystemError.self) {
            _ = try Socket.connect(to: SocketAddress(ip: .v4(0x7F00_0001), port: closed), timeout: 2)
        }
        do {
            _ = try Socket.connect(to: SocketAddress(ip: .v4(0x7F00_0001), port: closed), timeout: 2)
        } catch {
            #expect(error.code == ECONNREFUSED)
        }
        let listener = try Socket.listen(on: SocketAddress(ip: .v4(0x7F00_0001), port: 0))
        defer { SystemCall.close(listener) }
        let address = try #require(Socket.localAddress(listener))
        #expect(try SystemCall.accept(listener) == nil, "an empty backlog is 'nothing waiting', not an error")
        let fd = try Socket.connect(to: address, timeout: 2)
        defer { SystemCall.close(fd) }
        #expect(Poll.wait(fd: listener, events: Int16(POLLIN), timeout: 2) == .ready)
        let accepted = try #require(try SystemCall.accept(listener))
        defer { SystemCall.close(accepted.fd) }
        #expect(accepted.peer?.ip == .v4(0x7F00_0001))
        // Nothing was sent: a read would block, and poll times out on the monotonic clock.
        #expect(Poll.wait(fd: accepted.fd, events: Int16(POLLIN), timeout: 0.05) == .timedOut)
        var buffer = [UInt8](repeating: 0, count: 16)
        let outcome = try buffer.withUnsafeMutableBytes { try SystemCall.read(accepted.fd, into: $0) }
        #expect(outcome == .wouldBlock)
        _ = try Array("hi".utf8).withUnsafeBytes { try SystemCall.write(fd, $0) }
        #expect(Poll.wait(fd: accepted.fd, events: Int16(POLLIN), timeout: 2) == .ready)
        #expect(try buffer.withUnsafeMutableBytes { try SystemCall.read(accepted.fd, into: $0) } == .done(2))
    }

    @Test func namesResolveOnceForEveryCaller() throws {
        let addresses = try AddressLookup.resolve("localhost", onlyConfigured: false).get()
        #expect(addresses.contains(.v4(0x7F00_0001)) || addresses.contains(.v6(1)))
        #expect(throws: AddressLookup.Failure.self) { try AddressLookup.resolve("no-such-host.invalid").get() }
    }

    @Test func anEventFDWakesAnEpollWait() throws {
        let epoll = try Epoll()
        defer { SystemCall.close(epoll.fd) }
        let wake = try SystemCall.eventFD()
        defer { SystemCall.close(wake) }
        #expect(epoll.control(.add, wake, events: EPOLLIN.rawValue))
        var events = [epoll_event](repeating: epoll_event(), count: 4)
        #expect(events.withUnsafeMutableBufferPointer { epoll.wait(into: $0, timeoutMilliseconds: 0) } == 0)
        SystemCall.signal(eventFD: wake)
        #expect(events.withUnsafeMutableBufferPointer { epoll.wait(into: $0, timeoutMilliseconds: 1000) } == 1)
        SystemCall.drain(eventFD: wake)
        #expect(events.withUnsafeMutableBufferPointer { epoll.wait(into: $0, timeoutMilliseconds: 0) } == 0)
    }
}
