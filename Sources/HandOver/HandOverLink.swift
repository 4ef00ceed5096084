import Foundation
import Glibc
import POSIX
import Synchronization

/// A hand-over failure, said as the operator reads it.
package struct HandOverError: Error, CustomStringConvertible, Sendable {
    package var description: String

    package init(_ description: String) { self.description = description }
}

/// One end of the hand-over socket (a SOCK_SEQPACKET pair, the new process's end inherited as
/// descriptor 3): typed messages out, frames in. Sends may come from any thread and go one at a
/// time; what arrives is read either by waiting for one message (the start of an upgrade, step by
/// step) or by a reader thread of its own once the steps give way to items and acknowledgements.
/// Both sockets block: only the upgrade's threads touch them, never an event loop.
package final class HandOverLink: @unchecked Sendable {
    package let fd: Int32
    private let sending = NSLock()
    /// One receive buffer (`HandOverFrame.maximumSize`): one reader at a time, by construction.
    private let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: HandOverFrame.maximumSize, alignment: 8)
    private let closed = Atomic<Bool>(false)

    package init(fd: Int32) {
        self.fd = fd
    }

    /// The socket is closed only here, once nothing can use it: a reader thread holds the link until
    /// it ends, and a send after `close` fails on the shut-down socket instead of reaching a
    /// descriptor number reused meanwhile.
    deinit {
        SystemCall.close(fd)
        scratch.deallocate()
    }

    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        return encoder
    }()

    private static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return decoder
    }()

    /// A header as the message carries it.
    package static func encode(_ header: some Encodable) throws(HandOverError) -> [UInt8] {
        do {
            return Array(try encoder.encode(header))
        } catch {
            throw HandOverError("cannot encode a hand-over header: \(error)")
        }
    }

    /// The header of `frame` read as `type`.
    package static func decode<Header: Decodable>(_ type: Header.Type, from frame: HandOverFrame) throws(HandOverError) -> Header {
        do {
            return try decoder.decode(type, from: Data(frame.header))
        } catch {
            throw HandOverError("a \(HandOverKind(rawValue: frame.kind)?.description ?? "kind \(frame.kind)") message "
                                + "with a header that does not read: \(error)")
        }
    }

    /// Sends one message; the descriptors stay the caller's (the kernel passes copies).
    package func send(_ kind: HandOverKind, _ header: some Encodable, body: [UInt8] = [],
                      descriptors: [Int32] = []) throws(HandOverError) {
        try send(HandOverFrame(kind: kind.rawValue, header: HandOverLink.encode(header), body: body, descriptors: descriptors))
    }

    package func send(_ frame: HandOverFrame) throws(HandOverError) {
        sending.lock()
        defer { sending.unlock() }
        do {
            _ = try frame.send(on: fd)
        } catch {
            throw HandOverError("sending \(HandOverKind(rawValue: frame.kind)?.description ?? "a message") failed: \(error)")
        }
    }

    /// What waiting for one message came to.
    package enum Wait {
        case frame(HandOverFrame)
        /// The other end closed (its process exited, or gave up).
        case ended
        /// The watched process exited (its pidfd is readable) before sending anything more.
        case exited
        case timedOut
    }

    /// Waits for the next message until `deadline`, watching `pidFD` (the new process's) as well,
    /// so that a child that exits without closing its end in time is seen at once.
    package func receive(until deadline: ContinuousClock.Instant, watching pidFD: Int32 = -1) throws(HandOverError) -> Wait {
        while true {
            let remaining = deadline - ContinuousClock.now
            guard remaining > .zero else { return .timedOut }
            let milliseconds = Int32(clamping: remaining.components.seconds * 1000
                                     + remaining.components.attoseconds / 1_000_000_000_000_000 + 1)
            var polled = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0)]
            if pidFD >= 0 { polled.append(pollfd(fd: pidFD, events: Int16(POLLIN), revents: 0)) }
            let ready = poll(&polled, nfds_t(polled.count), milliseconds)
            if ready < 0 {
                if errno == EINTR { continue }
                throw HandOverError("poll on the hand-over socket: \(String(cString: strerror(errno)))")
            }
            if ready == 0 { continue }
            if polled[0].revents != 0 {
                do {
                    switch try HandOverFrame.receive(on: fd, scratch: scratch) {
                    case .frame(let frame): return .frame(frame)
                    case .endOfFile: return .ended
                    case .wouldBlock: continue
                    }
                } catch {
                    throw HandOverError("the hand-over socket: \(error)")
                }
            }
            if polled.count > 1, polled[1].revents != 0 { return .exited }
        }
    }

    /// Reads every further message on a thread of its own, handing each to `handle` in order, then
    /// `ended` once with why the link ended.
    package func startReading(_ handle: @escaping @Sendable (HandOverFrame) -> Void,
                              ended: @escaping @Sendable (String) -> Void) {
        let thread = Thread { [self] in
            var why = "the other process closed the hand-over socket"
            reading: while true {
                do {
                    switch try HandOverFrame.receive(on: fd, scratch: scratch) {
                    case .frame(let frame): handle(frame)
                    case .endOfFile: break reading
                    case .wouldBlock: continue
                    }
                } catch {
                    why = "the hand-over socket: \(error)"
                    break reading
                }
            }
            ended(why)
        }
        thread.name = "atsgate.upgrade"
        thread.start()
    }

    /// Ends the link: a reader thread wakes with the end, the other process reads its end, and sends
    /// fail from now on.
    package func close() {
        guard !closed.exchange(true, ordering: .relaxed) else { return }
        shutdown(fd, Int32(SHUT_RDWR))
    }

    package var isClosed: Bool { closed.load(ordering: .relaxed) }
}
