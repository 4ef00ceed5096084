import DecisionLog
import EventLoops
import POSIX
import TLSClient
import TLSWire

/// The QUIC listener (`--listen-quic`): the UDP sockets the gateway's UDP/443 is redirected to, read
/// in batches (recvmmsg), each datagram given to the QUIC Initial reader, never answered. A client
/// whose Initials go unanswered falls back to TCP, which the transparent listener sees whole.
///
/// One reader for all the sockets, on one event loop, because the reader's table puts a ClientHello
/// split over several datagrams together: readers on several loops would each see part of it. Its
/// state is bounded by the reader's table (`QUICInitialLimits`); nothing else is kept per datagram.
/// Loop-confined: the loop that reads the sockets owns it.
package final class QUICGate {
    /// One bound UDP socket: the descriptor and the address it was bound to.
    package struct Listener: Sendable {
        package var fd: Int32
        package var address: SocketAddress

        package init(fd: Int32, address: SocketAddress) {
            self.fd = fd
            self.address = address
        }
    }

    package let listeners: [Listener]
    private let reader: QUICInitialReader
    private let batch: DatagramBatch
    /// Datagrams read, by what they were (`QUICDatagramResult`'s labels): the metrics' counters.
    package private(set) var datagrams: [String: Int] = [:]

    /// Batches read per readiness before the loop turns to its connections again, so that a flood of
    /// datagrams cannot starve them (the socket stays readable and the poller reports it again).
    static let batchesPerWakeUp = 16

    package init(listeners: [Listener], limits: QUICInitialLimits = QUICInitialLimits(), batchSize: Int = 64) {
        self.listeners = listeners
        reader = QUICInitialReader(limits: limits)
        batch = DatagramBatch(capacity: batchSize, slotSize: 2048)
    }

    /// A UDP socket bound on each address, each datagram's destination asked for (TPROXY keeps the
    /// original one there); what was bound is closed again when one fails.
    package static func bind(_ addresses: [SocketAddress]) throws(SystemError) -> [Listener] {
        var bound: [Listener] = []
        do throws(SystemError) {
            for address in addresses {
                let fd = try Socket.bindDatagram(on: address, originalDestinations: true)
                bound.append(Listener(fd: fd, address: Socket.localAddress(fd) ?? address))
            }
        } catch {
            for listener in bound { SystemCall.close(listener.fd) }
            throw error
        }
        return bound
    }

    /// Sockets a supervisor bound (systemd's socket named `quic`).
    package static func adopt(_ fds: [Int32]) throws(SystemError) -> [Listener] {
        var adopted: [Listener] = []
        for fd in fds { adopted.append(Listener(fd: fd, address: try Socket.adopt(fd))) }
        return adopted
    }

    /// Watches every socket on `loop`, which then owns the gate; `attempt` hears of each ClientHello.
    /// The channels are the caller's to pause and detach with its other listeners.
    package func start(on loop: EventLoop, attempt: @escaping (QUICAttempt) -> Void) -> [Channel] {
        loop.assertOnLoop()
        return listeners.map { listener in
            let channel = Channel(fd: listener.fd, poller: loop.poller)
            channel.onReadable { [unowned self] in drain(listener, now: .now, attempt: attempt) }
            channel.wantRead(true)
            return channel
        }
    }

    /// Attempts the reader's table remembers now (bounded by its limits).
    package var remembered: Int { reader.table.count }

    /// Reads what is waiting on `listener` (a bounded number of batches) and calls `attempt` for every
    /// ClientHello read. A datagram that is no valid Initial is counted by kind and dropped.
    package func drain(_ listener: Listener, now: ContinuousClock.Instant, attempt: (QUICAttempt) -> Void) {
        for _ in 0..<Self.batchesPerWakeUp {
            let received: Int
            do {
                received = try batch.receive(from: listener.fd)
            } catch {
                // ICMP errors queued on the socket (ECONNREFUSED) and the like: nothing to read now.
                return count(.receiveFailed)
            }
            if received == 0 { return }
            for index in 0..<received {
                let datagram = batch[index]
                guard let sender = datagram.sender else {
                    count(.invalid("no-sender"))
                    continue
                }
                // A QUIC client pads its Initials to 1200 bytes, up to the path MTU: a longer datagram
                // was cut to the slot and cannot authenticate.
                if datagram.truncated {
                    count(.invalid("truncated"))
                    continue
                }
                let result: QUICInitialReading
                do {
                    result = try reader.read(datagram.bytes, from: sender, at: now)
                } catch {
                    count(.invalid(error.kind))
                    continue
                }
                switch result {
                case .clientHello(let hello):
                    count(.clientHello)
                    attempt(QUICAttempt(sender: sender, listener: listener.address,
                                        original: Self.original(datagram.destination, listener: listener.address),
                                        hello: hello))
                case .incomplete:
                    count(.incomplete)
                case .alreadyRead:
                    count(.retransmission)
                }
            }
            if received < batch.capacity { return }
        }
    }

    /// Forgets the attempts whose lifetime is over (also done by every read).
    package func expire(now: ContinuousClock.Instant) {
        reader.expire(at: now)
    }

    /// The datagram's destination when it is not the socket's own port: TPROXY delivers datagrams
    /// with their original destination, while a NAT redirect rewrote it to this socket's address.
    static func original(_ destination: SocketAddress?, listener: SocketAddress) -> SocketAddress? {
        guard let destination, destination.port != listener.port else { return nil }
        return destination
    }

    private func count(_ result: QUICDatagramResult) {
        datagrams[result.label, default: 0] += 1
    }
}

/// What one datagram (or one read of the socket) was, as the metrics label it.
enum QUICDatagramResult {
    case clientHello
    /// Part of a ClientHello split over several datagrams.
    case incomplete
    /// An Initial of an attempt already read (a retransmission, or the rest of its flight).
    case retransmission
    /// Not a valid client Initial: `QUICInitialError.kind`, `truncated` or `no-sender`.
    case invalid(String)
    /// recvmmsg failed (an ICMP error queued on the socket).
    case receiveFailed

    var label: String {
        switch self {
        case .clientHello: "client-hello"
        case .incomplete: "incomplete"
        case .retransmission: "retransmission"
        case .invalid(let kind): kind
        case .receiveFailed: "receive-failed"
        }
    }
}
