import Glibc

/// The envelope of one message between an old and a new process during an upgrade: what it is
/// (`kind`), a header (the sender's description of the item, JSON by convention), a body of raw bytes
/// (bytes a connection had buffered) and the descriptors it carries, sent as one SCM_RIGHTS message
/// (DescriptorPassing). The meaning of each kind belongs to the protocol's user; this layer checks
/// the envelope and never lets a descriptor leak from a message it rejects.
///
/// Layout: "AU", version, kind, header length (UInt32, big-endian), header, body. The version is the
/// envelope's; a process that meets another refuses the upgrade instead of guessing.
public struct HandOverFrame: Equatable, Sendable {
    public static let version: UInt8 = 1
    /// The largest message: it must fit a Unix socket's default send buffer (net.core.wmem_default,
    /// 208 KiB) with room to spare. An item that would need more is not handed over.
    public static let maximumSize = 160 * 1024
    static let magic: [UInt8] = [0x41, 0x55]
    static let prefixSize = 8

    public var kind: UInt8
    public var header: [UInt8]
    public var body: [UInt8]
    /// Owned by whoever holds the frame: sent frames keep theirs (the kernel duplicated them), received
    /// ones are new descriptors of this process.
    public var descriptors: [Int32]

    public init(kind: UInt8, header: [UInt8], body: [UInt8] = [], descriptors: [Int32] = []) {
        self.kind = kind
        self.header = header
        self.body = body
        self.descriptors = descriptors
    }

    /// Why a message is not a frame.
    public struct Malformed: Error, Equatable, CustomStringConvertible, Sendable {
        public var description: String
    }

    /// The bytes sent for this frame.
    public func encoded() -> [UInt8] {
        var bytes = Self.magic + [Self.version, kind]
        let length = UInt32(header.count)
        bytes += [UInt8(length >> 24), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF)]
        return bytes + header + body
    }

    /// Reads a frame from a message's bytes; `descriptors` are the message's.
    public static func decode(_ bytes: UnsafeRawBufferPointer, descriptors: [Int32]) throws(Malformed) -> HandOverFrame {
        guard bytes.count >= prefixSize else { throw Malformed(description: "a hand-over message of \(bytes.count) bytes is shorter than its envelope") }
        guard bytes[0] == magic[0], bytes[1] == magic[1] else {
            throw Malformed(description: "not a hand-over message (it starts with \(bytes[0]), \(bytes[1]))")
        }
        guard bytes[2] == version else {
            throw Malformed(description: "hand-over envelope version \(bytes[2]); this binary speaks version \(version)")
        }
        let length = Int(bytes[4]) << 24 | Int(bytes[5]) << 16 | Int(bytes[6]) << 8 | Int(bytes[7])
        guard length <= bytes.count - prefixSize else {
            throw Malformed(description: "a hand-over header of \(length) bytes in a message of \(bytes.count)")
        }
        let headerEnd = prefixSize + length
        return HandOverFrame(kind: bytes[3], header: Array(bytes[prefixSize..<headerEnd]), body: Array(bytes[headerEnd...]),
                             descriptors: descriptors)
    }

    /// Sends the frame (blocking or not, as the socket is). Frames over `maximumSize` are refused
    /// before anything is sent.
    public func send(on socket: Int32) throws(SystemError) -> IOOutcome {
        let bytes = encoded()
        guard bytes.count <= Self.maximumSize else {
            throw SystemError(call: "hand-over message of \(bytes.count) bytes (at most \(Self.maximumSize))", code: EMSGSIZE)
        }
        let result = bytes.withUnsafeBytes { buffer in
            Result { () throws(SystemError) in try DescriptorPassing.send(socket, buffer, descriptors: descriptors) }
        }
        return try result.get()
    }

    /// What waiting for a frame gave.
    public enum Received: Equatable, Sendable {
        case frame(HandOverFrame)
        case wouldBlock
        case endOfFile
    }

    /// Receives one frame, into `scratch` when given (at least `maximumSize` bytes, reused across a
    /// thousand items instead of a fresh buffer each). A message that is not a frame throws
    /// `SystemError` EPROTO with the reason, after closing the descriptors it carried.
    public static func receive(on socket: Int32, scratch: UnsafeMutableRawBufferPointer? = nil) throws(SystemError) -> Received {
        guard let scratch else {
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: maximumSize, alignment: 8)
            defer { buffer.deallocate() }
            return try receive(on: socket, scratch: buffer)
        }
        precondition(scratch.count >= maximumSize, "a hand-over scratch buffer holds at least \(maximumSize) bytes")
        switch try DescriptorPassing.receive(socket, into: scratch) {
        case .wouldBlock: return .wouldBlock
        case .endOfFile: return .endOfFile
        case .message(let count, let descriptors):
            do {
                return .frame(try decode(UnsafeRawBufferPointer(rebasing: scratch[..<count]), descriptors: descriptors))
            } catch {
                for fd in descriptors { SystemCall.close(fd) }
                throw SystemError(call: "hand-over: \(error.description)", code: EPROTO)
            }
        }
    }
}
