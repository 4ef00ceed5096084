import Foundation
import POSIX
import Testing
@testable import TLSClient
import TLSWire
import TestSupport

/// A lab device's address and QUIC port: 198.18.0.N:50000.
func device(_ number: Int) -> SocketAddress {
    SocketAddress(ip: .v4(0xC612_0000 | UInt32(number)), port: 50_000)
}

/// The QUIC Initial reader: the RFCs' vectors, real clients' first flights, ClientHellos split and
/// shuffled across datagrams, every failure it names, and the bounds of its table.
@Suite struct QUICInitialReaderTests {
    let start = ContinuousClock.now

    @Test func theInitialKeysAreTheRFCsForBothVersions() throws {
        let cipher = QUICInitialCipher()
        let version1 = try #require(cipher.clientKeys(version: .version1, destinationConnectionID: QUICConnectionID(QUICTestVectors.destinationConnectionID)!))
        #expect(version1 == QUICInitialKeys(key: hexBytes("1f369613dd76d5467730efcbe3b1a22d"),
                                            iv: hexBytes("fa044b2f42a3fd3b46fb255c"),
                                            hp: hexBytes("9f50449e04a0e810283a1e9933adedd2")))
        let version2 = try #require(cipher.clientKeys(version: .version2, destinationConnectionID: QUICConnectionID(QUICTestVectors.destinationConnectionID)!))
        #expect(version2 == QUICInitialKeys(key: hexBytes("8b1a0bc121284290a29e0971b5cd045d"),
                                            iv: hexBytes("91f73e2351d8fa91660e909f"),
                                            hp: hexBytes("45b95e15235d6f45a6b19cbcb0294ba9")))
        #expect(cipher.clientKeys(version: QUICVersion(0xFF00_001D), destinationConnectionID: QUICConnectionID([1, 2, 3])!) == nil)
    }

    @Test(arguments: [QUICVersion.version1, .version2])
    func theRFCsClientInitialGivesItsClientHello(version: QUICVersion) throws {
        let packet = version == .version1 ? QUICTestVectors.version1ClientInitial : QUICTestVectors.version2ClientInitial
        let reader = QUICInitialReader()
        guard case .clientHello(let hello) = try reader.read(packet, from: device(1), at: start) else {
            Issue.record("no ClientHello")
            return
        }
        #expect(hello.version == version)
        #expect(hello.destinationConnectionID.bytes == QUICTestVectors.destinationConnectionID)
        #expect(hello.sourceConnectionID.count == 0)
        #expect(hello.packets == 1)
        #expect(hello.serverName == "example.com")
        #expect(hello.alpnProtocols == ["alpn"])
        #expect(hello.supportedGroups == [.x25519, .secp256r1, .secp384r1])
        #expect(hello.clientHello.supportedVersions == [0x0304])
    }

    @Test func theSealerProtectsTheRFCsPacketIntoTheRFCsBytes() {
        for (version, packet) in [(QUICVersion.version1, QUICTestVectors.version1ClientInitial),
                                  (.version2, QUICTestVectors.version2ClientInitial)] {
            let sealed = QUICClientInitial.seal(version: version, destinationConnectionID: QUICTestVectors.destinationConnectionID,
                                                packetNumber: 2, frames: QUICTestVectors.frames)
            #expect(sealed == packet, "version \(version)")
        }
    }

    @Test(arguments: CapturedQUICInitials.all)
    func aRealClientsFirstFlightGivesItsClientHelloWithTheLastDatagram(capture: CapturedQUICInitial) throws {
        let reader = QUICInitialReader()
        for (index, datagram) in capture.datagrams.enumerated() {
            let reading = try reader.read(datagram, from: device(7), at: start)
            if index < capture.datagrams.count - 1 {
                guard case .incomplete(let progress) = reading else {
                    Issue.record("datagram \(index) of \(capture.name): \(reading)")
                    return
                }
                #expect(progress.destinationConnectionID.bytes == capture.destinationConnectionID)
                #expect(progress.version.rawValue == capture.version)
            } else {
                guard case .clientHello(let hello) = reading else {
                    Issue.record("the last datagram of \(capture.name): \(reading)")
                    return
                }
                #expect(hello.serverName == capture.serverName)
                #expect(hello.version.rawValue == capture.version)
                #expect(hello.destinationConnectionID.bytes == capture.destinationConnectionID)
                #expect(hello.packets >= capture.datagrams.count)
            }
        }
        // The client's retransmission (the same connection ID) is known, and not decrypted again.
        #expect(try reader.read(capture.datagrams[0], from: device(7), at: start)
                    == .alreadyRead(version: QUICVersion(capture.version), destinationConnectionID: QUICConnectionID(capture.destinationConnectionID)!))
    }

    @Test func chromiumsShuffledPostQuantumHelloReadsInEitherOrder() throws {
        let capture = CapturedQUICInitials.chromium
        let reader = QUICInitialReader()
        #expect(try reader.read(capture.datagrams[1], from: device(1), at: start).isIncomplete)
        guard case .clientHello(let hello) = try reader.read(capture.datagrams[0], from: device(1), at: start) else {
            Issue.record("no ClientHello from the datagrams in reverse order")
            return
        }
        #expect(hello.serverName == "www.example.com")
        #expect(hello.alpnProtocols == ["h3"])
        #expect(hello.clientHello.offersPostQuantum)
        #expect(hello.supportedGroups.contains(.x25519MLKEM768))
    }

    @Test func aClientHelloCutIntoShuffledFramesOverThreeDatagramsIsPutTogether() throws {
        let message = Self.clientHelloMessage
        let cuts = [0, 40, 95, 170, 200, message.count]
        let pieces = (0..<5).map { (offset: cuts[$0], bytes: Array(message[cuts[$0]..<cuts[$0 + 1]])) }
        let connectionID: [UInt8] = [9, 8, 7, 6, 5, 4, 3, 2]
        func datagram(_ indices: [Int], packetNumber: UInt32) -> [UInt8] {
            let frames: [UInt8] = indices.flatMap { [0x01] + QUICInitialFrames.crypto(offset: pieces[$0].offset, pieces[$0].bytes) }
            return QUICClientInitial.seal(version: .version1, destinationConnectionID: connectionID,
                                          packetNumber: packetNumber, packetNumberLength: 1, frames: frames)
        }
        let reader = QUICInitialReader()
        let first = try reader.read(datagram([4, 2], packetNumber: 0), from: device(1), at: start)
        #expect(first == .incomplete(QUICInitialProgress(version: .version1, destinationConnectionID: QUICConnectionID(connectionID)!,
                                                         bufferedBytes: message.count, packets: 1)))
        // Another client with the same connection ID is another attempt: its pieces do not mix in.
        #expect(try reader.read(datagram([0, 3, 1], packetNumber: 1), from: device(2), at: start).isIncomplete)
        #expect(try reader.read(datagram([0, 3], packetNumber: 1), from: device(1), at: start).isIncomplete)
        guard case .clientHello(let hello) = try reader.read(datagram([1], packetNumber: 2), from: device(1), at: start) else {
            Issue.record("no ClientHello after the third datagram")
            return
        }
        #expect(hello.packets == 3)
        #expect(hello.serverName == "example.com")
        #expect(reader.table.bufferedBytes == 200, "only the other client's stream (up to its piece 3) is still held")
    }

    @Test func coalescedPacketsAndDatagramPaddingAreRead() throws {
        let message = Self.clientHelloMessage
        let connectionID: [UInt8] = Array(repeating: 0xAB, count: 8)
        let firstHalf = QUICClientInitial.seal(version: .version2, destinationConnectionID: connectionID, packetNumber: 0,
                                               frames: QUICInitialFrames.crypto(offset: 0, message[..<100]), size: 0)
        let secondHalf = QUICClientInitial.seal(version: .version2, destinationConnectionID: connectionID, packetNumber: 1,
                                                frames: QUICInitialFrames.crypto(offset: 100, message[100...]), size: 0)
        // A 0-RTT packet of version 2 (type bits 10) after them, then zeros to 1200 bytes.
        let zeroRTT: [UInt8] = [0xE0] + [0x6B, 0x33, 0x43, 0xCF, 8] + connectionID + [0, 0x40, 20] + Array(repeating: 0x55, count: 20)
        var datagram = firstHalf + secondHalf + zeroRTT
        datagram += Array(repeating: 0, count: 1200 - datagram.count)
        let reader = QUICInitialReader()
        guard case .clientHello(let hello) = try reader.read(datagram, from: device(1), at: start) else {
            Issue.record("no ClientHello from the coalesced packets")
            return
        }
        #expect(hello.packets == 2)
        #expect(hello.version == .version2)
    }

    @Test func eachFailureIsNamed() throws {
        let packet = QUICTestVectors.version1ClientInitial
        let reader = QUICInitialReader()
        func failure(_ datagram: [UInt8], from peer: Int = 1) -> QUICInitialError? {
            do {
                _ = try reader.read(datagram, from: device(peer), at: start)
                return nil
            } catch {
                return error
            }
        }
        #expect(failure([]) == .tooShort("the first byte"))
        #expect(failure([0x40] + packet.dropFirst()) == .notLongHeader)
        #expect(failure([0xC0, 0x1A, 0x2A, 0x3A, 0x4A] + packet.dropFirst(5)) == .unsupportedVersion(0x1A2A_3A4A))
        #expect(failure([0x80, 0, 0, 0, 0] + packet.dropFirst(5)) == .unsupportedVersion(0))
        #expect(failure([0xE0] + packet.dropFirst()) == .notInitial(.version1, .handshake))
        #expect(failure([0xF0] + packet.dropFirst()) == .notInitial(.version1, .retry))
        #expect(failure(Array(packet.prefix(14))) == .tooShort("the source connection ID length"))
        #expect(failure(Array(packet.prefix(600)))?.kind == "too-short", "the Length field reaches past the datagram")
        var damaged = packet
        damaged[700] ^= 1
        #expect(failure(damaged) == .decryptionFailed(.version1))
        #expect(failure([0xC0, 0, 0, 0, 1, 21] + Array(repeating: 0, count: 40)) == .malformed("the destination connection ID of 21 bytes is longer than 20"))
        let connectionID: [UInt8] = [1, 2, 3, 4, 5, 6, 7, 8]
        func sealed(_ frames: [UInt8], _ id: [UInt8] = connectionID) -> [UInt8] {
            QUICClientInitial.seal(version: .version1, destinationConnectionID: id, frames: frames)
        }
        // A STREAM frame has no place in an Initial.
        #expect(failure(sealed([0x08, 0x00, 0x01, 0x41])) == .malformed("frame type 0x8 is not allowed in an Initial packet"))
        #expect(failure(sealed(QUICInitialFrames.crypto(offset: 0, [2, 0, 0, 1, 0]), [1]))
                    == .malformed("the CRYPTO stream starts with handshake message type 2, not a ClientHello"))
        #expect(failure(sealed(QUICInitialFrames.crypto(offset: 20_000, [1]), [2])) == .clientHelloTooLong(length: 20_001, limit: 16_384))
        #expect(failure(sealed(QUICInitialFrames.crypto(offset: 0, [1, 0x01, 0, 0]), [3])) == .clientHelloTooLong(length: 65_540, limit: 16_384))
        let brokenHello = QUICInitialFrames.crypto(offset: 0, [1, 0, 0, 3, 3, 3, 0])
        #expect(failure(sealed(brokenHello, [4]))?.kind == "malformed")
        // A failed attempt's retransmission fails the same way.
        #expect(failure(sealed([0x00, 0x01], [2])) == .clientHelloTooLong(length: 20_001, limit: 16_384))
        // An ACK frame with a range count no packet can hold.
        #expect(failure(sealed([0x02, 0x00, 0x00, 0x7F, 0xFF, 0x00], [5])) == .tooShort("ACK's 16383 ranges"))
        #expect(failure([0xC0]) == .tooShort("the version"))
        #expect(failure(packet + [UInt8](repeating: 0, count: 70_000)) == .malformed("a datagram of 71200 bytes, longer than UDP carries"))
    }

    @Test func garbageNeverTrapsTheReader() {
        var generator = SeededGenerator(seed: 30)
        let reader = QUICInitialReader()
        var kinds: Set<String> = []
        for round in 0..<2000 {
            var datagram = (0..<Int.random(in: 0...1300, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            if round % 2 == 0, datagram.count > 5 {
                // Half of them claim version 1 or 2, so the header parser is reached.
                datagram[0] |= 0x80
                datagram.replaceSubrange(1..<5, with: round % 4 == 0 ? [0, 0, 0, 1] : [0x6B, 0x33, 0x43, 0xCF])
            }
            if round % 4 == 0, datagram.count > 40 {
                // A quarter are Initial headers that fit the datagram, so decryption is reached too.
                datagram[0] = 0xC0 | (datagram[0] & 0x0F)
                let length = datagram.count - 18
                datagram.replaceSubrange(5..<18, with: [8] + datagram[6..<14] + [0, 0, 0x40 | UInt8(length >> 8), UInt8(length & 0xFF)])
            }
            do {
                _ = try reader.read(datagram, from: device(round), at: start)
            } catch {
                kinds.insert(error.kind)
            }
        }
        #expect(kinds.isSuperset(of: ["not-long-header", "unsupported-version", "too-short", "decryption-failed"]))
    }

    @Test func theTableForgetsAnIncompleteAttemptAtTheEndOfItsLifetime() throws {
        let message = Self.clientHelloMessage
        let connectionID: [UInt8] = [1, 1, 2, 3, 5, 8, 13, 21]
        let head = QUICClientInitial.seal(version: .version1, destinationConnectionID: connectionID,
                                          frames: QUICInitialFrames.crypto(offset: 0, message[..<50]))
        let tail = QUICClientInitial.seal(version: .version1, destinationConnectionID: connectionID, packetNumber: 1,
                                          frames: QUICInitialFrames.crypto(offset: 50, message[50...]))
        let reader = QUICInitialReader(limits: QUICInitialLimits(lifetime: .seconds(5)))
        #expect(try reader.read(head, from: device(1), at: start).isIncomplete)
        #expect(try reader.read(tail, from: device(1), at: start + .seconds(6)).isIncomplete, "the head was forgotten")
        #expect(reader.table.expiredIncomplete == 1)
        #expect(try reader.read(head, from: device(1), at: start + .seconds(7)).isClientHello)
    }

    @Test func theTableHoldsAtMostItsEntriesAndEvictsTheOldest() throws {
        let message = Self.clientHelloMessage
        let reader = QUICInitialReader(limits: QUICInitialLimits(maximumEntries: 4))
        for attempt in 0..<10 {
            let packet = QUICClientInitial.seal(version: .version1, destinationConnectionID: [UInt8(attempt), 0, 0, 0, 0, 0, 0, 0],
                                                frames: QUICInitialFrames.crypto(offset: 0, message[..<60]))
            #expect(try reader.read(packet, from: device(attempt), at: start + .milliseconds(attempt)).isIncomplete)
        }
        #expect(reader.table.count == 4)
        #expect(reader.table.evictedIncomplete == 6)
        #expect(reader.table.bufferedBytes == 4 * 60)
        func key(_ attempt: Int) -> QUICInitialTable.Key {
            QUICInitialTable.Key(address: 0xFFFF_C612_0000 | UInt128(attempt), port: 50_000,
                                 destinationConnectionID: QUICConnectionID([UInt8(attempt), 0, 0, 0, 0, 0, 0, 0])!)
        }
        #expect(reader.table.state(of: key(9)) == .assembling(bufferedBytes: 60, packets: 1))
        #expect(reader.table.state(of: key(0)) == .absent)
    }

    @Test func aLiveAioquicClientsInitialsAreRead() throws {
        for (version, alpnPadding) in [(1, 0), (2, 0), (1, 30)] {
            let socket = try UDPTestSocket()
            let client = try QUICClient.command(connect: "127.0.0.1:\(socket.port)", serverName: "live.example.com",
                                                version: version, alpnPadding: alpnPadding, timeout: 1)
            let run = try Shell.run(client[0], Array(client.dropFirst()), timeout: 30)
            #expect(run.stdout.contains("quic: no answer"), "\(run.stderr)")
            let reader = QUICInitialReader()
            var hellos: [QUICClientHello] = []
            var repeats = 0
            for datagram in try socket.drain() {
                switch try reader.read(datagram, from: device(1), at: start) {
                case .clientHello(let hello): hellos.append(hello)
                case .alreadyRead: repeats += 1
                case .incomplete: break
                }
            }
            #expect(hellos.count == 1, "version \(version), padding \(alpnPadding)")
            #expect(hellos.first?.serverName == "live.example.com")
            #expect(hellos.first?.version == (version == 2 ? .version2 : .version1))
            #expect(repeats >= 1, "aioquic retransmits its Initial when nothing answers")
            if alpnPadding > 0 { #expect((hellos.first?.packets ?? 0) > 1) }
        }
    }

    /// The ClientHello handshake message of the RFC vectors' CRYPTO frame (its 4-byte header included).
    static let clientHelloMessage: [UInt8] = Array(QUICTestVectors.frames.dropFirst(4))
}

extension QUICInitialReading {
    var isIncomplete: Bool {
        if case .incomplete = self { return true }
        return false
    }

    var isClientHello: Bool {
        if case .clientHello = self { return true }
        return false
    }
}

/// A UDP socket on 127.0.0.1 that only collects what arrives, for a real client to send to.
final class UDPTestSocket {
    let fd: Int32
    let port: Int

    init() throws {
        fd = try Socket.bindDatagram(on: SocketAddress(ip: .v4(0x7F00_0001), port: 0))
        port = Socket.localAddress(fd)?.port ?? 0
    }

    deinit { SystemCall.close(fd) }

    /// Every datagram waiting, in arrival order.
    func drain() throws -> [[UInt8]] {
        let batch = DatagramBatch(capacity: 16)
        var datagrams: [[UInt8]] = []
        while try batch.receive(from: fd) > 0 {
            datagrams += (0..<batch.count).map { Array(batch[$0].bytes) }
        }
        return datagrams
    }
}
