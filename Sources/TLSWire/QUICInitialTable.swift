/// How much the QUIC Initial reader may remember between datagrams.
public struct QUICInitialLimits: Sendable, Equatable {
    /// Connection attempts remembered at once (assembling, read or failed); the oldest goes first.
    public var maximumEntries: Int
    /// The longest ClientHello kept, with its 4-byte header: every attempt holds at most this much.
    /// Chrome's post-quantum ClientHello is about 2 KB.
    public var maximumClientHelloBytes: Int
    /// How long an attempt is remembered after its first packet: the time the rest of a split
    /// ClientHello has to arrive, and during which a retransmission of a ClientHello already read
    /// is recognised as one.
    public var lifetime: Duration

    public init(maximumEntries: Int = 1024, maximumClientHelloBytes: Int = 16_384, lifetime: Duration = .seconds(30)) {
        self.maximumEntries = max(1, maximumEntries)
        self.maximumClientHelloBytes = max(4, maximumClientHelloBytes)
        self.lifetime = lifetime
    }
}

/// The connection attempts the QUIC Initial reader has seen, by client address and destination
/// connection ID: CRYPTO streams still being put together, ClientHellos already read (so that the
/// client's retransmissions are not read as new attempts) and attempts that failed (so that their
/// retransmissions fail the same way without being decrypted again).
///
/// Bounded: at most `maximumEntries` attempts of at most `maximumClientHelloBytes` each, every one
/// forgotten `lifetime` after its first packet, the oldest forgotten first when the table is full.
/// Attempts leave only in the order they came, so the bookkeeping is a queue and costs O(1) a packet.
/// Time is the caller's monotonic clock, passed in, so the table itself does no I/O.
public struct QUICInitialTable: Sendable {
    /// An attempt: the sender's address (an IPv4 one mapped into IPv6, ::ffff:a.b.c.d) and port,
    /// and the destination connection ID it chose. Fixed-size, so a lookup allocates nothing.
    public struct Key: Hashable, Sendable {
        public var address: UInt128
        public var port: UInt16
        public var destinationConnectionID: QUICConnectionID

        public init(address: UInt128, port: UInt16, destinationConnectionID: QUICConnectionID) {
            self.address = address
            self.port = port
            self.destinationConnectionID = destinationConnectionID
        }
    }

    /// What the table knows of an attempt.
    public enum State: Sendable, Equatable {
        case absent
        /// Part of the CRYPTO stream is in, from `packets` Initial packets.
        case assembling(bufferedBytes: Int, packets: Int)
        /// Its ClientHello was read.
        case read
        /// It failed with this error.
        case failed(QUICInitialError)
    }

    private enum Progress: Sendable {
        case assembling(QUICCryptoAssembly, packets: Int)
        case read
        case failed(QUICInitialError)
    }

    private struct Slot: Sendable {
        var progress: Progress
        let created: ContinuousClock.Instant
    }

    public let limits: QUICInitialLimits
    private var slots: [Key: Slot] = [:]
    /// Keys in the order their slots were made; `head` is the oldest still in the table.
    private var order: [Key] = []
    private var head = 0

    /// Attempts dropped at the end of their lifetime with their ClientHello still incomplete.
    public private(set) var expiredIncomplete = 0
    /// Attempts dropped before their lifetime ended, to make room, with their ClientHello incomplete.
    public private(set) var evictedIncomplete = 0
    /// Bytes of CRYPTO stream held.
    public private(set) var bufferedBytes = 0

    public init(limits: QUICInitialLimits = QUICInitialLimits()) {
        self.limits = limits
    }

    /// Attempts remembered.
    public var count: Int { slots.count }

    public func state(of key: Key) -> State {
        switch slots[key]?.progress {
        case nil: .absent
        case .assembling(let assembly, let packets)?: .assembling(bufferedBytes: assembly.bufferedBytes, packets: packets)
        case .read?: .read
        case .failed(let error)?: .failed(error)
        }
    }

    /// Forgets the attempts whose lifetime is over.
    public mutating func expire(now: ContinuousClock.Instant) {
        while head < order.count, let slot = slots[order[head]], slot.created.duration(to: now) >= limits.lifetime {
            if case .assembling = slot.progress { expiredIncomplete += 1 }
            dropOldest()
        }
    }

    /// Adds one decrypted Initial packet's CRYPTO frames to the attempt's stream, making the attempt
    /// if it is new. An attempt already read or failed is left as it is.
    public mutating func add(_ key: Key, frames: [(offset: Int, data: UnsafeRawBufferPointer)],
                             now: ContinuousClock.Instant) throws(QUICInitialError) {
        if slots[key] == nil {
            while slots.count >= limits.maximumEntries {
                if case .assembling = slots[order[head]]?.progress { evictedIncomplete += 1 }
                dropOldest()
            }
            slots[key] = Slot(progress: .assembling(QUICCryptoAssembly(limit: limits.maximumClientHelloBytes), packets: 0),
                              created: now)
            order.append(key)
        }
        guard case .assembling(var assembly, let packets) = slots[key]!.progress else { return }
        // The slot gives up its assembly while it grows, so the buffer is never copied.
        slots[key]!.progress = .read
        let before = assembly.bufferedBytes
        do {
            for frame in frames { try assembly.add(offset: frame.offset, frame.data) }
        } catch {
            bufferedBytes -= before
            slots[key]!.progress = .failed(error)
            throw error
        }
        bufferedBytes += assembly.bufferedBytes - before
        slots[key]!.progress = .assembling(assembly, packets: packets + 1)
    }

    /// The attempt's ClientHello and the packets it came in, once whole; the attempt is then
    /// remembered as read. Nil while incomplete (or for an attempt not assembling). A stream that
    /// cannot be a ClientHello fails the attempt.
    public mutating func finish(_ key: Key) throws(QUICInitialError) -> (clientHello: ClientHello, packets: Int)? {
        guard case .assembling(let assembly, let packets)? = slots[key]?.progress else { return nil }
        let hello: ClientHello?
        do {
            hello = try assembly.clientHello()
        } catch {
            bufferedBytes -= assembly.bufferedBytes
            slots[key]!.progress = .failed(error)
            throw error
        }
        guard let hello else { return nil }
        bufferedBytes -= assembly.bufferedBytes
        slots[key]!.progress = .read
        return (hello, packets)
    }

    private mutating func dropOldest() {
        let key = order[head]
        if case .assembling(let assembly, _)? = slots.removeValue(forKey: key)?.progress {
            bufferedBytes -= assembly.bufferedBytes
        }
        head += 1
        // Compact once the consumed front is as long as what is left.
        if head >= 1024, head * 2 >= order.count {
            order.removeFirst(head)
            head = 0
        }
    }
}
