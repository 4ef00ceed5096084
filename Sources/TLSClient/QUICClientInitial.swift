import TLSWire

/// Client Initial packets protected as a QUIC client protects them (RFC 9001 section 5), for the
/// tests, the fuzz target and the benchmark that feed `QUICInitialReader` packets made to measure
/// (split ClientHellos, frames out of order, odd packet-number lengths) beside real clients' captures.
public enum QUICClientInitial {
    /// One Initial packet of `version` carrying `frames` (plaintext frame bytes), padded with
    /// PADDING frames until the packet is `size` bytes long (clients pad to 1200), and at least long
    /// enough for a header-protection sample.
    public static func seal(version: QUICVersion, destinationConnectionID: [UInt8], sourceConnectionID: [UInt8] = [],
                            token: [UInt8] = [], packetNumber: UInt32 = 0, packetNumberLength: Int = 4,
                            frames: [UInt8], size: Int = 1200) -> [UInt8] {
        seal(version: version, destinationConnectionID: destinationConnectionID, sourceConnectionID: sourceConnectionID,
             token: token, packetNumber: packetNumber, packetNumberLength: packetNumberLength, frames: frames, size: size,
             using: QUICInitialCipher())
    }

    /// `seal` with a cipher the caller keeps, for callers that make many packets (the fuzz target).
    static func seal(version: QUICVersion, destinationConnectionID: [UInt8], sourceConnectionID: [UInt8] = [],
                     token: [UInt8] = [], packetNumber: UInt32 = 0, packetNumberLength: Int = 4,
                     frames: [UInt8], size: Int = 1200, using cipher: QUICInitialCipher) -> [UInt8] {
        precondition((1...4).contains(packetNumberLength), "a packet number is 1 to 4 bytes")
        guard let connectionID = QUICConnectionID(destinationConnectionID),
              let keys = cipher.clientKeys(version: version, destinationConnectionID: connectionID),
              let typeBits = version.typeBits(.initial) else {
            preconditionFailure("QUIC version \(version) has no Initial keys")
        }
        var header: [UInt8] = [0xC0 | typeBits << 4 | UInt8(packetNumberLength - 1)]
        header += withUnsafeBytes(of: version.rawValue.bigEndian, Array.init)
        header += [UInt8(destinationConnectionID.count)] + destinationConnectionID
        header += [UInt8(sourceConnectionID.count)] + sourceConnectionID
        header += QUICInitialFrames.varint(UInt64(token.count)) + token
        // The Length field is written in 2 bytes (4 past 16383), so the header's size is known before it.
        var payload = frames
        let minimumPayload = max(4 - packetNumberLength, 1)
        func total(_ payload: Int) -> Int {
            let length = packetNumberLength + payload + 16
            return header.count + (length < 0x4000 ? 2 : 4) + length
        }
        if payload.count < minimumPayload { payload += [UInt8](repeating: 0, count: minimumPayload - payload.count) }
        if total(payload.count) < size { payload += [UInt8](repeating: 0, count: size - total(payload.count)) }
        let length = UInt64(packetNumberLength + payload.count + 16)
        var lengthField = QUICInitialFrames.varint(length)
        if lengthField.count == 1 { lengthField = [0x40, UInt8(length)] }
        header += lengthField
        let packetNumberOffset = header.count
        header += (0..<packetNumberLength).map { UInt8(truncatingIfNeeded: packetNumber >> (8 * (packetNumberLength - 1 - $0))) }
        var nonce = keys.iv
        for index in 0..<4 { nonce[11 - index] ^= UInt8(truncatingIfNeeded: packetNumber >> (8 * index)) }
        var packet = header + cipher.seal(key: keys.key, nonce: nonce, additionalData: header, plaintext: payload)
        let sampleStart = packetNumberOffset + 4
        let mask = packet[sampleStart..<sampleStart + 16].withUnsafeBytes {
            cipher.headerProtectionMask(hp: keys.hp, sample: $0)
        }
        packet[0] ^= mask.first & 0x0F
        for index in 0..<packetNumberLength {
            packet[packetNumberOffset + index] ^= UInt8(truncatingIfNeeded: mask.packetNumber >> (24 - 8 * index))
        }
        return packet
    }
}
