import CAtsgateShims
import Glibc
import POSIX
import Testing
import TestSupport

/// SCM_RIGHTS between two ends of a socket: what an upgrade hands to the new process (listeners,
/// connected sockets, relay pipes with bytes in them) must work there, and a message is whole or
/// refused, never half of one with its descriptors leaked.
@Suite struct DescriptorPassingTests {
    private let loopback = SocketAddress(ip: .v4(0x7F00_0001), port: 0)

    @Test func aListenerAConnectedSocketAndAPipeWorkOnTheOtherEnd() throws {
        let (sender, receiver) = try DescriptorPassing.socketPair()
        defer { SystemCall.close(sender); SystemCall.close(receiver) }
        let listener = try Socket.listen(on: loopback)
        let address = try #require(Socket.localAddress(listener))
        let client = try Socket.connect(to: address, timeout: 2)
        defer { SystemCall.close(client) }
        #expect(Poll.wait(fd: listener, events: Int16(POLLIN), timeout: 2) == .ready)
        let server = try #require(try SystemCall.accept(listener)).fd
        let pipe = try SystemCall.pipe()
        defer { SystemCall.close(pipe.read) }

        #expect(try send(sender, "listener, server, pipe", [listener, server, pipe.write]) == .done(22))
        // The sender forgets its copies, as the old process does once the new one has them.
        for fd in [listener, server, pipe.write] { SystemCall.close(fd) }
        let (text, passed) = try receive(receiver)
        #expect(text == "listener, server, pipe")
        try #require(passed.count == 3)
        defer { for fd in passed { SystemCall.close(fd) } }
        for fd in passed { #expect(fcntl(fd, F_GETFD) & FD_CLOEXEC != 0, "descriptor \(fd) is close-on-exec") }

        // The listener still listens on the same port, and the passed copy accepts.
        #expect(Socket.localAddress(passed[0]) == address)
        let second = try Socket.connect(to: address, timeout: 2)
        defer { SystemCall.close(second) }
        #expect(Poll.wait(fd: passed[0], events: Int16(POLLIN), timeout: 2) == .ready)
        let accepted = try #require(try SystemCall.accept(passed[0]))
        SystemCall.close(accepted.fd)

        // The connection carries bytes both ways through the passed socket.
        try write(passed[1], "down")
        #expect(try read(client, count: 4) == "down")
        try write(client, "up")
        #expect(try read(passed[1], count: 2) == "up")

        // Bytes written into the passed pipe come out of the read end that stayed here.
        #expect(try Array("through".utf8).withUnsafeBytes { try SystemCall.write(pipe: passed[2], $0) } == .done(7))
        #expect(try read(pipe.read, count: 7) == "through")
    }

    /// A relay direction mid-flight: bytes spliced from a socket into the pipe, not yet out. The pipe
    /// moves with its bytes, and the other end splices them on in order, then the rest of the stream.
    @Test func aRelayPipeWithBytesInItYieldsThemInOrderWherePassed() throws {
        let (sender, receiver) = try DescriptorPassing.socketPair()
        defer { SystemCall.close(sender); SystemCall.close(receiver) }
        let (upClient, upServer) = try tcpPair()
        let (downServer, downClient) = try tcpPair()
        defer { for fd in [upClient, downClient] { SystemCall.close(fd) } }
        let pipe = try SystemCall.pipe()

        let first = numbered(0..<40_000)
        try writeAll(upClient, first)
        var inPipe = 0
        while inPipe < first.count {
            #expect(Poll.wait(fd: upServer, events: Int16(POLLIN), timeout: 2) == .ready)
            if case .done(let n) = try SystemCall.splice(from: upServer, to: pipe.write, length: first.count - inPipe) { inPipe += n }
        }
        #expect(try SystemCall.readableBytes(pipe.read) == first.count)

        _ = try send(sender, "relay", [upServer, downServer, pipe.read, pipe.write])
        for fd in [upServer, downServer, pipe.read, pipe.write] { SystemCall.close(fd) }
        let (_, passed) = try receive(receiver)
        try #require(passed.count == 4)
        defer { for fd in passed { SystemCall.close(fd) } }
        let (source, destination, pipeRead, pipeWrite) = (passed[0], passed[1], passed[2], passed[3])
        #expect(try SystemCall.readableBytes(pipeRead) == first.count, "the pipe kept its bytes")

        // Drain the pipe, then relay what the client sends next, as the Pump would.
        try spliceAll(from: pipeRead, to: destination, count: first.count)
        let second = numbered(40_000..<100_000)
        try writeAll(upClient, second)
        var moved = 0
        while moved < second.count {
            #expect(Poll.wait(fd: source, events: Int16(POLLIN), timeout: 2) == .ready)
            guard case .done(let n) = try SystemCall.splice(from: source, to: pipeWrite, length: 65_536) else { continue }
            try spliceAll(from: pipeRead, to: destination, count: n)
            moved += n
        }
        #expect(try readAll(downClient, count: first.count + second.count) == first + second)
    }

    @Test func aMessageCarriesUpToTheKernelsLimitOfDescriptors() throws {
        let (sender, receiver) = try DescriptorPassing.socketPair()
        defer { SystemCall.close(sender); SystemCall.close(receiver) }
        let pipe = try SystemCall.pipe()
        defer { SystemCall.close(pipe.read); SystemCall.close(pipe.write) }
        let copies = (0..<DescriptorPassing.maximumDescriptors).map { _ in dup(pipe.write) }
        defer { for fd in copies { SystemCall.close(fd) } }
        #expect(try send(sender, "many", copies) == .done(4))
        let (_, passed) = try receive(receiver)
        #expect(passed.count == DescriptorPassing.maximumDescriptors)
        for fd in passed { SystemCall.close(fd) }

        let error = #expect(throws: SystemError.self) { _ = try send(sender, "too many", copies + [pipe.write]) }
        #expect(error?.code == EINVAL)
        #expect(error?.description.contains("more than 253") == true)
    }

    /// More descriptors than the receiver asked for: the message is refused, and the ones that did
    /// arrive are closed (the pipe's write end, passed as its only copy, reaches its end).
    @Test func descriptorsBeyondWhatTheReceiverTakesAreClosedNotLeaked() throws {
        let (sender, receiver) = try DescriptorPassing.socketPair()
        defer { SystemCall.close(sender); SystemCall.close(receiver) }
        let pipe = try SystemCall.pipe()
        defer { SystemCall.close(pipe.read) }
        let others = try SystemCall.pipe()
        defer { SystemCall.close(others.read); SystemCall.close(others.write) }
        _ = try send(sender, "three", [pipe.write, others.read, others.write])
        SystemCall.close(pipe.write)
        var buffer = [UInt8](repeating: 0, count: 64)
        let error = #expect(throws: SystemError.self) {
            _ = try buffer.withUnsafeMutableBytes { try DescriptorPassing.receive(receiver, into: $0, maximumDescriptors: 2) }
        }
        #expect(error?.code == EMSGSIZE)
        #expect(error?.description.contains("MSG_CTRUNC") == true)
        #expect(try endOfFile(pipe.read), "every copy of the write end was closed")
    }

    @Test func aMessageLongerThanTheBufferIsRefusedWithItsDescriptorsClosed() throws {
        let (sender, receiver) = try DescriptorPassing.socketPair()
        defer { SystemCall.close(sender); SystemCall.close(receiver) }
        let pipe = try SystemCall.pipe()
        defer { SystemCall.close(pipe.read) }
        _ = try send(sender, String(repeating: "x", count: 100), [pipe.write])
        SystemCall.close(pipe.write)
        var buffer = [UInt8](repeating: 0, count: 10)
        let error = #expect(throws: SystemError.self) {
            _ = try buffer.withUnsafeMutableBytes { try DescriptorPassing.receive(receiver, into: $0) }
        }
        #expect(error?.description.contains("MSG_TRUNC") == true)
        #expect(try endOfFile(pipe.read))
        // The next message is read whole: the rest of the long one is gone, not mixed into it.
        _ = try send(sender, "next")
        #expect(try receive(receiver).text == "next")
    }

    @Test func nonBlockingEndsSayWouldBlockAndAClosedPeerIsTheEnd() throws {
        let (sender, receiver) = try DescriptorPassing.socketPair()
        defer { SystemCall.close(receiver) }
        try Socket.setNonBlocking(sender)
        try Socket.setNonBlocking(receiver)
        var buffer = [UInt8](repeating: 0, count: 16)
        #expect(try buffer.withUnsafeMutableBytes { try DescriptorPassing.receive(receiver, into: $0) } == .wouldBlock)
        // Fill the sender's buffer: a full socket refuses the whole message, never a part of it.
        var sent = 0
        while case .done = try send(sender, "0123456789abcdef") { sent += 1 }
        #expect(sent > 0)
        for _ in 0..<sent {
            #expect(try buffer.withUnsafeMutableBytes { try DescriptorPassing.receive(receiver, into: $0) }
                == .message(count: 16, descriptors: []))
        }
        #expect(throws: SystemError.self) { _ = try send(sender, "") }
        SystemCall.close(sender)
        #expect(try buffer.withUnsafeMutableBytes { try DescriptorPassing.receive(receiver, into: $0) } == .endOfFile)
    }

    @Test func namedSocketsPassDescriptorsAndKnowTheirPeer() throws {
        for name in ["@atsgate-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))",
                     "/tmp/atsgate-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sock"] {
            let listener = try DescriptorPassing.listen(at: name)
            defer {
                SystemCall.close(listener)
                if !name.hasPrefix("@") { unlink(name) }
            }
            let client = try DescriptorPassing.connect(to: name)
            defer { SystemCall.close(client) }
            let server = try #require(try DescriptorPassing.accept(listener))
            defer { SystemCall.close(server) }
            let peer = try DescriptorPassing.peerCredentials(server)
            #expect(peer.pid == getpid() && peer.uid == getuid())
            let pipe = try SystemCall.pipe()
            defer { SystemCall.close(pipe.read) }
            _ = try send(client, "pipe", [pipe.write])
            SystemCall.close(pipe.write)
            let (_, passed) = try receive(server)
            try #require(passed.count == 1)
            try write(pipe: passed[0], "named")
            SystemCall.close(passed[0])
            #expect(try read(pipe.read, count: 5) == "named")
        }
        let error = #expect(throws: SystemError.self) { _ = try DescriptorPassing.connect(to: "@atsgate-nobody-\(getpid())") }
        #expect(error?.code == ECONNREFUSED)
        #expect(throws: SystemError.self) { _ = try DescriptorPassing.listen(at: "/" + String(repeating: "a", count: 200)) }
    }

    /// Why an upgrade's old process must take a handed-over descriptor out of its epoll set before
    /// closing it: epoll watches the open file, not the number, and the file lives on in the new
    /// process, so a close alone leaves the registration and its events behind.
    @Test func aPassedSocketClosedWithoutDeregisteringStillWakesTheSendersEpoll() throws {
        let (sender, receiver) = try DescriptorPassing.socketPair()
        defer { SystemCall.close(sender); SystemCall.close(receiver) }
        let epoll = try Epoll()
        defer { SystemCall.close(epoll.fd) }
        var events = [epoll_event](repeating: epoll_event(), count: 4)

        for deregister in [false, true] {
            let (client, server) = try tcpPair()
            defer { SystemCall.close(client) }
            #expect(epoll.control(.add, server, events: EPOLLIN.rawValue))
            _ = try send(sender, "server", [server])
            let (_, passed) = try receive(receiver)
            defer { for fd in passed { SystemCall.close(fd) } }
            if deregister { epoll.control(.delete, server) }
            SystemCall.close(server)
            try write(client, "x")
            let reported = events.withUnsafeMutableBufferPointer { epoll.wait(into: $0, timeoutMilliseconds: 200) }
            if deregister {
                #expect(reported == 0)
            } else {
                #expect(reported == 1 && events[0].data.fd == server, "the closed number still reports readable")
            }
        }
    }

    // MARK: helpers

    private func send(_ socket: Int32, _ text: String, _ descriptors: [Int32] = []) throws -> IOOutcome {
        try Array(text.utf8).withUnsafeBytes { try DescriptorPassing.send(socket, $0, descriptors: descriptors) }
    }

    private func receive(_ socket: Int32) throws -> (text: String, descriptors: [Int32]) {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let received = try buffer.withUnsafeMutableBytes { try DescriptorPassing.receive(socket, into: $0) }
        guard case .message(let count, let descriptors) = received else { throw HarnessError("no message: \(received)") }
        return (String(decoding: buffer[..<count], as: UTF8.self), descriptors)
    }

    private func tcpPair() throws -> (Int32, Int32) {
        let listener = try Socket.listen(on: loopback)
        defer { SystemCall.close(listener) }
        let client = try Socket.connect(to: try #require(Socket.localAddress(listener)), timeout: 2)
        guard Poll.wait(fd: listener, events: Int16(POLLIN), timeout: 2) == .ready,
              let accepted = try SystemCall.accept(listener) else { throw HarnessError("no connection to accept") }
        return (client, accepted.fd)
    }

    private func write(_ fd: Int32, _ text: String) throws { try writeAll(fd, Array(text.utf8)) }

    private func write(pipe fd: Int32, _ text: String) throws {
        _ = try Array(text.utf8).withUnsafeBytes { try SystemCall.write(pipe: fd, $0) }
    }

    private func writeAll(_ fd: Int32, _ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let outcome = try bytes.withUnsafeBytes { try SystemCall.write(fd, UnsafeRawBufferPointer(rebasing: $0[offset...])) }
            if case .done(let n) = outcome { offset += n } else { _ = Poll.wait(fd: fd, events: Int16(POLLOUT), timeout: 2) }
        }
    }

    private func read(_ fd: Int32, count: Int) throws -> String {
        String(decoding: try readAll(fd, count: count), as: UTF8.self)
    }

    private func readAll(_ fd: Int32, count: Int) throws -> [UInt8] {
        var result: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while result.count < count {
            guard Poll.wait(fd: fd, events: Int16(POLLIN), timeout: 5) == .ready else { throw HarnessError("read timed out") }
            let outcome = try buffer.withUnsafeMutableBytes { try SystemCall.read(fd, into: $0) }
            switch outcome {
            case .done(let n): result += buffer[..<n]
            case .wouldBlock: continue
            case .endOfFile: throw HarnessError("end of stream after \(result.count) of \(count) bytes")
            }
        }
        return result
    }

    private func spliceAll(from source: Int32, to destination: Int32, count: Int) throws {
        var left = count
        while left > 0 {
            switch try SystemCall.splice(from: source, to: destination, length: left) {
            case .done(let n): left -= n
            case .wouldBlock: _ = Poll.wait(fd: destination, events: Int16(POLLOUT), timeout: 2)
            case .endOfFile: throw HarnessError("the pipe ended with \(left) bytes to go")
            }
        }
    }

    /// Whether a pipe's read end reaches its end (every write end closed) within two seconds.
    private func endOfFile(_ fd: Int32) throws -> Bool {
        guard Poll.wait(fd: fd, events: Int16(POLLIN), timeout: 2) == .ready else { return false }
        var byte: UInt8 = 0
        return Glibc.read(fd, &byte, 1) == 0
    }

    /// Bytes counting up from `range`'s start, each its index modulo 251 (a prime, so no block of a
    /// power-of-two size repeats another).
    private func numbered(_ range: Range<Int>) -> [UInt8] { range.map { UInt8($0 % 251) } }
}

private extension SystemCall {
    /// A write to a pipe: `SystemCall.write` is send(2), which only sockets take.
    static func write(pipe fd: Int32, _ buffer: UnsafeRawBufferPointer) throws(SystemError) -> IOOutcome {
        try LogFile.write(fd, buffer)
    }
}
