import ATSPolicy
import POSIX
import TLSWire

/// Reads the ClientHello out of a QUIC client's Initial packets (RFC 9000, RFC 9001 section 5, and
/// RFC 9369 for version 2), one UDP datagram at a time, without answering: the keys of an Initial
/// come from its destination connection ID, so anyone on the path can read it.
///
/// For each datagram: its long-header packets are read in order (a client may coalesce an Initial
/// with 0-RTT packets, which are skipped); every Initial with the first packet's connection ID is
/// unprotected (header protection, then AES-128-GCM), its CRYPTO frames go into the attempt's stream
/// in a `QUICInitialTable` keyed by the sender and the connection ID, and once the stream's
/// ClientHello is whole it is parsed by TLSWire. A ClientHello spread over several datagrams, its
/// CRYPTO frames in any order, is put together across them.
///
/// Failures are typed (`QUICInitialError`); only the first packet of a datagram decides its
/// failure, later coalesced packets that do not read are ignored, as a QUIC endpoint ignores them.
/// Not thread-safe: one reader per thread or queue (it reuses its OpenSSL contexts and buffers).
public final class QUICInitialReader {
    public private(set) var table: QUICInitialTable
    private let cipher: QUICInitialCipher
    /// The decrypted payload and the unprotected header of the packet being read.
    private let plaintext = UnsafeMutableRawBufferPointer.allocate(byteCount: QUICInitialReader.maximumDatagramLength, alignment: 16)
    private let header = UnsafeMutableRawBufferPointer.allocate(byteCount: QUICInitialReader.maximumDatagramLength, alignment: 16)

    /// The longest UDP payload there is (65,535 bytes less the UDP header).
    public static let maximumDatagramLength = 65_527
    /// The keys of the last connection ID read, because a split ClientHello and every
    /// retransmission come with the same one.
    private var lastKeys: (version: QUICVersion, connectionID: QUICConnectionID, keys: QUICInitialKeys)?

    public convenience init(limits: QUICInitialLimits = QUICInitialLimits()) {
        self.init(limits: limits, cipher: QUICInitialCipher())
    }

    /// A reader on a cipher another reader of the same thread may share (the fuzz target makes one
    /// reader per input).
    init(limits: QUICInitialLimits, cipher: QUICInitialCipher) {
        table = QUICInitialTable(limits: limits)
        self.cipher = cipher
    }

    deinit {
        plaintext.deallocate()
        header.deallocate()
    }

    /// Reads one datagram from `sender` received at `now` (the caller's monotonic clock).
    public func read(_ datagram: UnsafeRawBufferPointer, from sender: SocketAddress,
                     at now: ContinuousClock.Instant) throws(QUICInitialError) -> QUICInitialReading {
        guard datagram.count <= Self.maximumDatagramLength else {
            throw .malformed("a datagram of \(datagram.count) bytes, longer than UDP carries")
        }
        table.expire(now: now)
        let address: UInt128 = switch sender.ip {
        case .v4(let value): 0xFFFF_0000_0000 | UInt128(value)
        case .v6(let value): value
        }
        var first: QUICLongHeader?
        var key: QUICInitialTable.Key?
        var offset = 0
        while offset < datagram.count {
            // After the first packet, a short header or padding ends what the datagram has for us.
            if first != nil, datagram[offset] & 0x80 == 0 { break }
            let packet: QUICLongHeader
            do {
                packet = try QUICLongHeader.read(datagram, at: offset)
            } catch {
                if first == nil { throw error }
                break
            }
            guard packet.type == .initial else {
                if first == nil { throw .notInitial(packet.version, packet.type) }
                if packet.type == .retry { break }
                offset = packet.end
                continue
            }
            if let first {
                // RFC 9000 section 12.2: coalesced packets with another connection ID are not ours.
                guard packet.version == first.version, packet.destinationConnectionID == first.destinationConnectionID else {
                    offset = packet.end
                    continue
                }
            } else {
                first = packet
                let attempt = QUICInitialTable.Key(address: address, port: UInt16(truncatingIfNeeded: sender.port),
                                                   destinationConnectionID: packet.destinationConnectionID)
                key = attempt
                switch table.state(of: attempt) {
                case .read:
                    return .alreadyRead(version: packet.version, destinationConnectionID: packet.destinationConnectionID)
                case .failed(let error):
                    throw error
                case .absent, .assembling:
                    break
                }
            }
            do {
                let frames = try open(packet, in: datagram)
                try table.add(key!, frames: frames, now: now)
            } catch {
                if packet.start == first!.start { throw error }
            }
            offset = packet.end
        }
        guard let first, let key else { throw .tooShort("the first byte") }
        if let (hello, packets) = try table.finish(key) {
            return .clientHello(QUICClientHello(version: first.version, destinationConnectionID: first.destinationConnectionID,
                                                sourceConnectionID: first.sourceConnectionID, clientHello: hello,
                                                packets: packets))
        }
        switch table.state(of: key) {
        case .assembling(let bufferedBytes, let packets):
            return .incomplete(QUICInitialProgress(version: first.version, destinationConnectionID: first.destinationConnectionID,
                                                   bufferedBytes: bufferedBytes, packets: packets))
        case .failed(let error):
            // A later coalesced Initial broke the stream.
            throw error
        case .read, .absent:
            // Not reached: a read attempt returned above, and the first packet made the attempt.
            return .alreadyRead(version: first.version, destinationConnectionID: first.destinationConnectionID)
        }
    }

    /// Forgets the attempts whose lifetime is over, as every `read` does first; for a caller that
    /// wants the table's counters current while no datagram comes.
    public func expire(at now: ContinuousClock.Instant) {
        table.expire(now: now)
    }

    /// `read` for a datagram in an array.
    public func read(_ datagram: [UInt8], from sender: SocketAddress, at now: ContinuousClock.Instant) throws(QUICInitialError) -> QUICInitialReading {
        let result: Result<QUICInitialReading, QUICInitialError> = datagram.withUnsafeBytes { bytes in
            Result { () throws(QUICInitialError) in try read(bytes, from: sender, at: now) }
        }
        return try result.get()
    }

    /// Removes header protection and decrypts one Initial packet into `plaintext`, and returns its
    /// CRYPTO frames (their data points into `plaintext`, valid until the next packet).
    private func open(_ packet: QUICLongHeader, in datagram: UnsafeRawBufferPointer) throws(QUICInitialError)
        -> [(offset: Int, data: UnsafeRawBufferPointer)] {
        let keys = keys(packet.version, packet.destinationConnectionID)
        // RFC 9001 section 5.4.2: the sample starts 4 bytes after the packet number's start.
        let sampleStart = packet.packetNumberOffset + 4
        guard sampleStart + 16 <= packet.end else { throw .tooShort("the header protection sample") }
        let mask = cipher.headerProtectionMask(hp: keys.hp, sample: UnsafeRawBufferPointer(rebasing: datagram[sampleStart..<sampleStart + 16]))
        let firstByte = packet.protectedFirstByte ^ (mask.first & 0x0F)
        let packetNumberLength = Int(firstByte & 0x03) + 1
        let payloadStart = packet.packetNumberOffset + packetNumberLength
        let headerLength = payloadStart - packet.start
        header.copyMemory(from: UnsafeRawBufferPointer(rebasing: datagram[packet.start..<payloadStart]))
        header[0] = firstByte
        var packetNumber: UInt64 = 0
        for index in 0..<packetNumberLength {
            let position = packet.packetNumberOffset - packet.start + index
            header[position] ^= UInt8(truncatingIfNeeded: mask.packetNumber >> (24 - 8 * index))
            packetNumber = packetNumber << 8 | UInt64(header[position])
        }
        // The first Initials of a connection carry their whole packet number, so the truncated
        // number needs no reconstruction (RFC 9000 section 17.1 expects 0 as the largest seen).
        var nonce = keys.iv
        for index in 0..<8 { nonce[11 - index] ^= UInt8(truncatingIfNeeded: packetNumber >> (8 * index)) }
        let ciphertextLength = packet.end - 16 - payloadStart
        guard cipher.open(key: keys.key, nonce: nonce,
                          additionalData: UnsafeRawBufferPointer(rebasing: header[0..<headerLength]),
                          ciphertext: UnsafeRawBufferPointer(rebasing: datagram[payloadStart..<packet.end - 16]),
                          tag: UnsafeRawBufferPointer(rebasing: datagram[packet.end - 16..<packet.end]),
                          into: plaintext) else {
            throw .decryptionFailed(packet.version)
        }
        // RFC 9000 section 17.2: reserved bits are checked only once the packet authenticated.
        guard firstByte & 0x0C == 0 else { throw .malformed("reserved header bits are not zero") }
        let payload = UnsafeRawBufferPointer(rebasing: plaintext[0..<ciphertextLength])
        var reader = QUICInitialFrames(payload: payload)
        var frames: [(offset: Int, data: UnsafeRawBufferPointer)] = []
        while let frame = try reader.nextCrypto() {
            frames.append((frame.offset, UnsafeRawBufferPointer(rebasing: payload[frame.data])))
        }
        return frames
    }

    private func keys(_ version: QUICVersion, _ connectionID: QUICConnectionID) -> QUICInitialKeys {
        if let lastKeys, lastKeys.version == version, lastKeys.connectionID == connectionID { return lastKeys.keys }
        // QUICLongHeader reads only versions that have keys.
        let keys = cipher.clientKeys(version: version, destinationConnectionID: connectionID)!
        lastKeys = (version, connectionID, keys)
        return keys
    }
}
