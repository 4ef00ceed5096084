import Testing
@testable import TLSWire
import TestSupport

/// The pure half of the QUIC Initial reader: long headers, varints, connection IDs, Initial frames,
/// the CRYPTO stream's reassembly and the table of attempts. (TLSClientTests decrypts real packets.)
@Suite struct QUICInitialWireTests {
    @Test func versionsMapTheirTypeBitsAsTheRFCsSay() {
        #expect((0...3).map { QUICVersion.version1.packetType(bits: UInt8($0)) } == [.initial, .zeroRTT, .handshake, .retry])
        #expect((0...3).map { QUICVersion.version2.packetType(bits: UInt8($0)) } == [.retry, .initial, .zeroRTT, .handshake])
        #expect(QUICVersion.version2.typeBits(.initial) == 1)
        #expect(QUICVersion(0xFF00_001D).packetType(bits: 0) == nil)
        #expect(QUICVersion(0xFF00_001D).description == "0xFF00001D")
        #expect(QUICVersion.version2.keyLabels?.hp == "quicv2 hp")
        #expect(QUICVersion.version1.initialSalt?.count == 20 && QUICVersion.version2.initialSalt?.count == 20)
    }

    @Test(arguments: [0, 1, 63, 64, 16_383, 16_384, (1 << 30) - 1, 1 << 30, (1 << 62) - 1] as [UInt64])
    func varintsReadBackAsWrittenInTheirShortestForm(value: UInt64) throws {
        let bytes = QUICInitialFrames.varint(value)
        #expect(bytes.count == (value < 64 ? 1 : value < 16_384 ? 2 : value < 1 << 30 ? 4 : 8))
        let read = try bytes.withUnsafeBytes { buffer in
            try Result { () throws(QUICInitialError) in
                var cursor = QUICCursor(buffer)
                return try cursor.varint("value")
            }.get()
        }
        #expect(read == value)
    }

    @Test func connectionIDsHoldUpToTwentyBytesInline() {
        for length in 0...20 {
            let bytes = (0..<length).map { UInt8(0xA0 + $0) }
            let id = QUICConnectionID(bytes)
            #expect(id?.bytes == bytes)
            #expect(id?.count == length)
        }
        #expect(QUICConnectionID([UInt8](repeating: 1, count: 21)) == nil)
        // Zeros are bytes: lengths tell them apart.
        #expect(Set([QUICConnectionID([])!, QUICConnectionID([0])!, QUICConnectionID([0, 0])!]).count == 3)
        #expect(QUICConnectionID([0x83, 0x94, 0x0c])?.description == "83940c")
    }

    @Test func theRFCsHeaderReadsUpToItsPacketNumber() throws {
        let header = try QUICTestVectors.version1ClientInitial.withUnsafeBytes { buffer in
            try Result { () throws(QUICInitialError) in try QUICLongHeader.read(buffer, at: 0) }.get()
        }
        #expect(header.version == .version1)
        #expect(header.type == .initial)
        #expect(header.destinationConnectionID.bytes == QUICTestVectors.destinationConnectionID)
        #expect(header.sourceConnectionID.count == 0)
        #expect(header.tokenLength == 0)
        #expect(header.packetNumberOffset == 18)
        #expect(header.end == 1200)
    }

    @Test func initialFramesGiveTheirCryptoFramesAndRefuseOthers() throws {
        let frames: [UInt8] = [0x00, 0x00, 0x01] + QUICInitialFrames.crypto(offset: 5, [9, 9]) + [0x02, 0x03, 0x00, 0x01, 0x02, 0x05, 0x01]
            + [0x03, 0x00, 0x00, 0x00, 0x00, 0x07, 0x08, 0x09] + [0x1C, 0x0A, 0x00, 0x03, 0x61, 0x62, 0x63]
            + QUICInitialFrames.crypto(offset: 0, [1, 2, 3, 4, 5]) + [0, 0, 0]
        let read = try cryptoFrames(frames)
        #expect(read.map(\.offset) == [5, 0])
        #expect(read.map { $0.data.count } == [2, 5])
        #expect(throws: QUICInitialError.malformed("frame type 0x18 is not allowed in an Initial packet")) {
            try cryptoFrames([0x18, 0x00])
        }
        #expect(throws: QUICInitialError.tooShort("a CRYPTO frame's data of 9 bytes (2 left)")) {
            try cryptoFrames([0x06, 0x00, 0x09, 0x01, 0x02])
        }
        #expect(throws: QUICInitialError.malformed("a packet without frames")) { try cryptoFrames([]) }
        #expect(throws: QUICInitialError.malformed("a CRYPTO frame ends past offset 2^62-1")) {
            try cryptoFrames([0x06] + QUICInitialFrames.varint((1 << 62) - 1) + [0x01, 0xAA])
        }
    }

    @Test func theCryptoStreamIsPutTogetherFromPiecesInAnyOrder() throws {
        let message = Array(QUICTestVectors.frames.dropFirst(4))
        var assembly = QUICCryptoAssembly(limit: 1000)
        try add(&assembly, 200, message[200...])
        #expect(assembly.contiguousBytes == 0)
        #expect(try assembly.clientHello() == nil)
        try add(&assembly, 0, message[0..<50])
        try add(&assembly, 30, message[30..<120])   // overlaps the first piece
        try add(&assembly, 0, message[0..<10])      // a retransmission
        #expect(assembly.contiguousBytes == 120)
        #expect(try assembly.clientHello() == nil)
        try add(&assembly, 120, message[120..<200])
        #expect(assembly.contiguousBytes == message.count)
        #expect(try assembly.clientHello()?.serverName == "example.com")
        #expect(assembly.bufferedBytes == message.count)
    }

    @Test func theCryptoStreamRefusesWhatCannotBeAClientHello() throws {
        var farPieces = QUICCryptoAssembly(limit: 1000)
        for piece in 0..<QUICCryptoAssembly.maximumPieces { try add(&farPieces, 1 + 2 * piece, [7]) }
        #expect(throws: QUICInitialError.malformed("the CRYPTO stream arrived in more than 64 separate pieces")) {
            try add(&farPieces, 500, [7])
        }
        var tooFar = QUICCryptoAssembly(limit: 1000)
        #expect(throws: QUICInitialError.clientHelloTooLong(length: 1001, limit: 1000)) { try add(&tooFar, 1000, [1]) }
        var announced = QUICCryptoAssembly(limit: 1000)
        try add(&announced, 0, [1, 0, 4, 0])
        #expect(throws: QUICInitialError.clientHelloTooLong(length: 1028, limit: 1000)) { try announced.clientHello() }
        var serverHello = QUICCryptoAssembly(limit: 1000)
        try add(&serverHello, 0, [2])
        #expect(throws: QUICInitialError.malformed("the CRYPTO stream starts with handshake message type 2, not a ClientHello")) {
            try serverHello.clientHello()
        }
    }

    @Test func theTableRemembersAttemptsAndForgetsThemInOrder() throws {
        let message = Array(QUICTestVectors.frames.dropFirst(4))
        let start = ContinuousClock.now
        var table = QUICInitialTable(limits: QUICInitialLimits(maximumEntries: 2, maximumClientHelloBytes: 1000, lifetime: .seconds(10)))
        func key(_ number: UInt8) -> QUICInitialTable.Key {
            QUICInitialTable.Key(address: 0xFFFF_C612_0102, port: 50_000, destinationConnectionID: QUICConnectionID([number])!)
        }
        try addFrames(&table, key(1), [(0, message[..<100])], at: start)
        #expect(table.state(of: key(1)) == .assembling(bufferedBytes: 100, packets: 1))
        #expect(try table.finish(key(1)) == nil)
        try addFrames(&table, key(1), [(100, message[100...])], at: start + .seconds(1))
        #expect(try table.finish(key(1))?.packets == 2)
        #expect(table.state(of: key(1)) == .read)
        #expect(table.bufferedBytes == 0)
        // A read attempt takes no more data.
        try addFrames(&table, key(1), [(0, message[...])], at: start + .seconds(2))
        #expect(table.state(of: key(1)) == .read)
        // A failed attempt keeps its error.
        #expect(throws: QUICInitialError.self) { try addFrames(&table, key(2), [(0, [3, 0, 0, 0][...])], at: start + .seconds(3)); _ = try table.finish(key(2)) }
        #expect(table.state(of: key(2)) == .failed(.malformed("the CRYPTO stream starts with handshake message type 3, not a ClientHello")))
        // Full: the oldest (key 1, read) makes room for key 3.
        try addFrames(&table, key(3), [(0, message[..<10])], at: start + .seconds(4))
        #expect(table.state(of: key(1)) == .absent)
        #expect(table.count == 2)
        #expect(table.evictedIncomplete == 0)
        // Key 3, incomplete, expires 10 s after its first packet; key 2 (failed) before it.
        table.expire(now: start + .seconds(13))
        #expect(table.state(of: key(2)) == .absent)
        #expect(table.state(of: key(3)) == .assembling(bufferedBytes: 10, packets: 1))
        table.expire(now: start + .seconds(14))
        #expect(table.count == 0)
        #expect(table.expiredIncomplete == 1)
        #expect(table.bufferedBytes == 0)
    }
}

private func cryptoFrames(_ payload: [UInt8]) throws -> [QUICInitialFrames.Crypto] {
    try payload.withUnsafeBytes { buffer in
        try Result { () throws(QUICInitialError) in
            var frames = QUICInitialFrames(payload: buffer)
            var read: [QUICInitialFrames.Crypto] = []
            while let frame = try frames.nextCrypto() { read.append(frame) }
            return read
        }.get()
    }
}

private func add(_ assembly: inout QUICCryptoAssembly, _ offset: Int, _ bytes: some Collection<UInt8>) throws {
    let array = Array(bytes)
    try array.withUnsafeBytes { buffer in
        try Result { () throws(QUICInitialError) in try assembly.add(offset: offset, buffer) }.get()
    }
}

private func addFrames(_ table: inout QUICInitialTable, _ key: QUICInitialTable.Key,
                       _ frames: [(Int, ArraySlice<UInt8>)], at now: ContinuousClock.Instant) throws {
    // The table reads the frames' bytes during the call, as the reader's decrypted payload.
    let pointers = frames.map { frame in
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: frame.1.count, alignment: 1)
        frame.1.withUnsafeBytes { buffer.copyMemory(from: $0) }
        return (offset: frame.0, data: UnsafeRawBufferPointer(buffer))
    }
    defer { pointers.forEach { UnsafeMutableRawBufferPointer(mutating: $0.data).deallocate() } }
    try Result { () throws(QUICInitialError) in try table.add(key, frames: pointers, now: now) }.get()
}
