import Glibc
import POSIX
import Testing
import TestSupport

/// The envelope of the upgrade's messages: what is sent is what arrives, and what is not an
/// envelope of this version is refused with its descriptors closed.
@Suite struct HandOverFrameTests {
    @Test func aFrameArrivesWithItsKindHeaderBodyAndDescriptors() throws {
        let (sender, receiver) = try DescriptorPassing.socketPair()
        defer { SystemCall.close(sender); SystemCall.close(receiver) }
        let pipe = try SystemCall.pipe()
        defer { SystemCall.close(pipe.read) }
        let body = (0..<70_000).map { UInt8($0 % 251) }
        let frame = HandOverFrame(kind: 7, header: Array(#"{"id":12,"kind":"tunnel"}"#.utf8), body: body,
                                  descriptors: [pipe.write])
        #expect(try frame.send(on: sender) == .done(frame.encoded().count))
        SystemCall.close(pipe.write)

        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: HandOverFrame.maximumSize, alignment: 8)
        defer { scratch.deallocate() }
        guard case .frame(let received) = try HandOverFrame.receive(on: receiver, scratch: scratch) else {
            Issue.record("no frame")
            return
        }
        #expect(received.kind == 7)
        #expect(received.header == frame.header)
        #expect(received.body == body)
        try #require(received.descriptors.count == 1)
        #expect(fcntl(received.descriptors[0], F_GETFD) & FD_CLOEXEC != 0)
        #expect(Glibc.write(received.descriptors[0], "ok", 2) == 2)
        SystemCall.close(received.descriptors[0])
        var bytes = [UInt8](repeating: 0, count: 4)
        #expect(Glibc.read(pipe.read, &bytes, 4) == 2)

        // An empty header and body are a frame too; the peer's close is the end.
        #expect(try HandOverFrame(kind: 1, header: []).send(on: sender) == .done(8))
        #expect(try HandOverFrame.receive(on: receiver) == .frame(HandOverFrame(kind: 1, header: [])))
        SystemCall.close(sender)
        #expect(try HandOverFrame.receive(on: receiver) == .endOfFile)
    }

    @Test func aFrameTooLargeForTheSocketIsRefusedBeforeAnythingIsSent() throws {
        let (sender, receiver) = try DescriptorPassing.socketPair()
        defer { SystemCall.close(sender); SystemCall.close(receiver) }
        try Socket.setNonBlocking(receiver)
        let largest = HandOverFrame(kind: 2, header: [], body: [UInt8](repeating: 1, count: HandOverFrame.maximumSize - 8))
        #expect(try largest.send(on: sender) == .done(HandOverFrame.maximumSize), "the largest frame fits a default socket")
        #expect(try HandOverFrame.receive(on: receiver) == .frame(largest))
        let tooLarge = HandOverFrame(kind: 2, header: [], body: [UInt8](repeating: 1, count: HandOverFrame.maximumSize))
        let error = #expect(throws: SystemError.self) { _ = try tooLarge.send(on: sender) }
        #expect(error?.code == EMSGSIZE)
        #expect(try HandOverFrame.receive(on: receiver) == .wouldBlock)
    }

    @Test(arguments: [
        ([0x41, 0x55, 1], "shorter than its envelope"),
        ([0x47, 0x45, 0x54, 0x20, 0x2F, 0x20, 0x48, 0x54], "not a hand-over message"),
        ([0x41, 0x55, 2, 1, 0, 0, 0, 0], "envelope version 2; this binary speaks version 1"),
        ([0x41, 0x55, 1, 1, 0, 0, 0, 9, 0x7B, 0x7D], "header of 9 bytes in a message of 10"),
    ] as [([UInt8], String)])
    func aMessageThatIsNotAFrameIsRefusedWithItsDescriptorsClosed(bytes: [UInt8], reason: String) throws {
        let (sender, receiver) = try DescriptorPassing.socketPair()
        defer { SystemCall.close(sender); SystemCall.close(receiver) }
        let pipe = try SystemCall.pipe()
        defer { SystemCall.close(pipe.read) }
        _ = try bytes.withUnsafeBytes { try DescriptorPassing.send(sender, $0, descriptors: [pipe.write]) }
        SystemCall.close(pipe.write)
        let error = #expect(throws: SystemError.self) { _ = try HandOverFrame.receive(on: receiver) }
        #expect(error?.code == EPROTO)
        #expect(error?.description.contains(reason) == true, "\(String(describing: error))")
        // The only other copy of the write end was the refused message's: the pipe has ended.
        #expect(Poll.wait(fd: pipe.read, events: Int16(POLLIN), timeout: 2) == .ready)
        var byte: UInt8 = 0
        #expect(Glibc.read(pipe.read, &byte, 1) == 0)
    }
}
