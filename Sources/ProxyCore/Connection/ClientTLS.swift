import EventLoops
import Glibc
import POSIX
import TLSClient

/// TLS between a client and the proxy, for a connection accepted on a TLS listener (`--listen-tls`).
///
/// The handshake's steps run on `ClientTLS.handshakes`, never on an event loop: the loop reads the
/// client's bytes, hands them to one step at a time and writes the flight that comes back, so a
/// signature or a key exchange never delays another client of the loop, and a client that stalls
/// mid-handshake holds no thread (only its socket, until the head timeout). Once the handshake is
/// done, the loop opens and seals records itself (symmetric crypto, cheap beside the copy): every read
/// and write of the connection's client side passes through here.
final class ClientTLS {
    let session: TLSServerSession
    /// Sealed bytes the client's socket has not taken yet; they go before anything new is sealed.
    private(set) var unsent: [UInt8] = []
    /// A handshake step is on the pool: the loop leaves `session` alone until it comes back.
    var stepping = false
    /// The handshake completed: records can be opened and sealed.
    private(set) var established = false
    /// Some bytes of the handshake arrived (a connection closed before any was a port check).
    var started = false

    /// Threads for handshake steps: as many as the machine has cores (the work is all CPU), at least
    /// two. A burst of handshakes waits in its queue; the loops and plain clients never do.
    static let handshakes = BlockingPool(threads: max(2, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))),
                                         name: "atsgate.tls-handshake")

    init(session: TLSServerSession) {
        self.session = session
    }

    // MARK: handshake

    /// The step's flight is queued; from now on records flow.
    func handshakeStepped(flight: [UInt8], done: Bool) {
        unsent += flight
        if done { established = true }
    }

    // MARK: records

    /// Reads what the client sent and opens it into `inbound`, as `ProxyConnection.readClient` does
    /// for a plain client. Whole records already received are opened before the socket is read, and
    /// every one is opened before this returns: nothing readable stays inside OpenSSL, where the
    /// level-triggered poller could not report it. Past `limit` bytes in `inbound` the socket is left
    /// for the next call (the kernel keeps the rest, and the poller reports it).
    func read(from channel: Channel, scratch: UnsafeMutableRawBufferPointer, into inbound: inout [UInt8],
              limit: Int) -> ProxyConnection.ReadOutcome {
        var socketMayHaveMore = true
        while true {
            opening: while true {
                switch session.read(into: scratch) {
                case .bytes(let count) where count > 0:
                    inbound.append(contentsOf: UnsafeRawBufferPointer(rebasing: scratch[..<count]))
                case .wantRead, .bytes:
                    break opening
                case .closed:
                    // close_notify: the client's end of its stream, as a FIN is on a plain connection.
                    return .ended
                case .failed, .wantWrite, .done:
                    return .failed
                }
            }
            // Opening may have written (a TLS 1.3 KeyUpdate's answer): it goes out with the next write.
            if session.hasOutput { session.takeOutput(appendingTo: &unsent) }
            if inbound.count > limit || !socketMayHaveMore {
                session.compact()
                return .wouldBlock
            }
            switch try? SystemCall.read(channel.fd, into: scratch) {
            case .done(let count)?:
                session.receive(UnsafeRawBufferPointer(rebasing: scratch[..<count]))
                // A short read took all there was: open it, then wait for the poller.
                if count < scratch.count { socketMayHaveMore = false }
            case .wouldBlock?:
                session.compact()
                return .wouldBlock
            case .endOfFile?:
                return .ended
            case nil:
                return .failed
            }
        }
    }

    /// Seals `bytes` and writes them, as `Channel.write` does for a plain client: `.done` when
    /// everything went, `.wouldBlock` when the socket kept some (then ask for writability and call
    /// again: an empty `bytes` flushes). `bytes` is emptied once sealed; while older sealed bytes are
    /// still waiting, nothing new is sealed, so the caller's buffer stays its backpressure.
    func write(_ bytes: inout [UInt8], to channel: Channel) -> Channel.WriteOutcome {
        if !unsent.isEmpty {
            let outcome = flush(channel)
            guard outcome == .done else { return outcome }
        }
        guard !bytes.isEmpty else { return .done }
        let sealed = bytes.withUnsafeBytes { seal($0) }
        guard sealed else { return .failed }
        bytes.removeAll(keepingCapacity: true)
        return flush(channel)
    }

    /// Seals `buffer` onto the unsent bytes (the relay's down direction, straight from the loop's
    /// read buffer); false when the session cannot (the connection is then unusable).
    func seal(_ buffer: UnsafeRawBufferPointer) -> Bool {
        var offset = 0
        while offset < buffer.count {
            guard case .bytes(let count) = session.write(UnsafeRawBufferPointer(rebasing: buffer[offset...])), count > 0 else {
                return false
            }
            offset += count
        }
        session.takeOutput(appendingTo: &unsent)
        return true
    }

    /// Writes the unsent sealed bytes through the connection's one write path.
    func flush(_ channel: Channel) -> Channel.WriteOutcome {
        guard !unsent.isEmpty else { return .done }
        let outcome = channel.write(&unsent)
        if outcome == .done {
            // An idle connection keeps no buffer of its last burst.
            unsent = []
            session.compact()
        }
        return outcome
    }

    var hasUnsent: Bool { !unsent.isEmpty }
    var unsentCount: Int { unsent.count }

    /// Sends close_notify, as far as the socket takes it now (the caller closes or half-closes the
    /// socket next): a client reading until the end of the stream then knows it was not cut.
    func closeNotify(_ channel: Channel) {
        guard established, !channel.closed else { return }
        session.shutdown()
        session.takeOutput(appendingTo: &unsent)
        _ = flush(channel)
    }
}
