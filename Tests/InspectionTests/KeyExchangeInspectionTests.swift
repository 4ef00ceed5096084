import ATSPolicy
import Testing
import TestSupport
import TLSWire
@testable import Inspection
import ProxyAnswers

/// The watched handshake reads the key exchange beside its judgement: real captures (pyOpenSSL on
/// OpenSSL 4 and OpenSSL 3.0) go in whole and byte by byte, and hellos edited to carry broken or
/// oversized group lists and key shares are judged exactly as the untouched ones.
@Suite struct KeyExchangeInspectionTests {
    typealias C = CapturedHandshakes

    static func inspection(certificates: CertificateMode = .before) throws -> TLSInspection {
        let destination = try Destination.parse(authority: "api.example.com:443", scheme: .https, portRequired: true)
        return TLSInspection(.init(destination: destination, requirements: .full, pin: nil, sniMismatch: .block,
                                   certificateMode: certificates))
    }

    /// Both directions through a fresh inspection, whole or a byte at a time; the steps as text.
    static func run(_ client: [UInt8], _ server: [UInt8], byteByByte: Bool = false,
                    certificates: CertificateMode = .before) throws -> (TLSInspection, [String]) {
        var watched = try inspection(certificates: certificates)
        var steps: [TLSInspection.Step] = []
        if byteByByte {
            for byte in client { steps += watched.receiveFromClient([byte]) }
            for byte in server { steps += watched.receiveFromOrigin([byte], ended: false) }
        } else {
            steps += watched.receiveFromClient(client)
            steps += watched.receiveFromOrigin(server, ended: false)
        }
        return (watched, steps.map { String(describing: $0) })
    }

    @Test("the group each real server chose, and what each client offered", arguments: [
        (C.pqTLS13, NamedGroup.x25519MLKEM768 as NamedGroup?, true),
        (C.pqHelloRetry, .x25519MLKEM768, true),
        (C.pqClassicalServer, .x25519, true),
        (C.pqHelloRetryClassical, .secp256r1, true),
        (C.pqClientTLS12, .x25519, true),
        (C.tls13, .x25519, false),
        (C.tls13HelloRetry, .secp256r1, false),
        (C.tls12EcdheRSA, .x25519, false),
        (C.tls12Fragmented, .x25519, false),
        (C.tls12RSA, nil, false),
        (C.tls12DHE, nil, false),
    ] as [(CapturedHandshake, NamedGroup?, Bool)])
    func groups(_ capture: CapturedHandshake, group: NamedGroup?, offered: Bool) throws {
        for byteByByte in [false, true] {
            let (watched, _) = try Self.run(capture.clientToServer, capture.serverToClient, byteByByte: byteByByte)
            #expect(watched.keyExchange.group == group, "\(capture) byte by byte: \(byteByByte)")
            #expect(watched.clientHello?.offersPostQuantum == offered)
        }
    }

    @Test("a TLS 1.2 ServerKeyExchange is read even when the tunnel is released before the Certificate")
    func releasedEarly() throws {
        let (watched, steps) = try Self.run(C.tls12EcdheRSA.clientToServer, C.tls12EcdheRSA.serverToClient,
                                            certificates: .off)
        #expect(steps == ["release"])
        #expect(watched.keyExchange.group == .x25519)
    }

    /// `bytes` with the first occurrence of `pattern` replaced.
    static func replacing(_ pattern: [UInt8], with replacement: [UInt8], in bytes: [UInt8]) throws -> [UInt8] {
        let start = try #require((0...(bytes.count - pattern.count)).first { bytes[$0..<$0 + pattern.count].elementsEqual(pattern) })
        var edited = bytes
        edited.replaceSubrange(start..<start + pattern.count, with: replacement)
        return edited
    }

    @Test("broken key shares in either direction: the same steps as the untouched handshake, and no group")
    func brokenShares() throws {
        let capture = C.pqTLS13
        let (_, expected) = try Self.run(capture.clientToServer, capture.serverToClient)
        #expect(!expected.isEmpty)
        // The client's X25519MLKEM768 share claims one byte more than its extension holds.
        let client = try Self.replacing([0x11, 0xEC, 0x04, 0xC0], with: [0x11, 0xEC, 0x04, 0xC1], in: capture.clientToServer)
        let (brokenClient, clientSteps) = try Self.run(client, capture.serverToClient)
        #expect(clientSteps == expected)
        #expect(brokenClient.clientHello?.keyExchangeError != nil)
        #expect(brokenClient.clientHello?.keyShares == [])
        #expect(brokenClient.clientHello?.offersPostQuantum == true, "supported_groups still says so")
        // The server's share claims one byte more than its extension holds.
        let server = try Self.replacing([0x11, 0xEC, 0x04, 0x60], with: [0x11, 0xEC, 0x04, 0x61], in: capture.serverToClient)
        let (brokenServer, serverSteps) = try Self.run(capture.clientToServer, server)
        #expect(serverSteps == expected)
        #expect(brokenServer.serverHello?.keyExchangeError != nil)
        #expect(brokenServer.keyExchange.group == nil)
        #expect(brokenServer.keyExchange.error != nil)
    }

    @Test("an oversized group list and key share list are read within bounds and judged as usual")
    func oversized() throws {
        var generator = SeededGenerator(seed: 3)
        var builder = TLSClientHelloFixture.probe(using: &generator)
        builder.supportedGroups = [NamedGroup](repeating: .x25519, count: 5_000) + [.x25519MLKEM768]
        builder.keyShares += [(group: NamedGroup, key: [UInt8])](repeating: (.x25519, [UInt8](repeating: 1, count: 32)), count: 40)
        let (watched, steps) = try Self.run(builder.records, C.pqTLS13.serverToClient)
        #expect(watched.clientHello?.supportedGroups.count == 64)
        #expect(watched.clientHello?.keyShares.count == 16)
        #expect(watched.clientHello?.offersPostQuantum == true)
        #expect(steps.count == 1 && steps[0].hasPrefix("judge"), "\(steps)")
    }
}

/// A ClientHello for api.example.com as the post-quantum probe builds it.
enum TLSClientHelloFixture {
    static func probe<Generator: RandomNumberGenerator>(using generator: inout Generator) -> ClientHelloBuilder {
        let share = MLKEMEncapsulationKey.random768(using: &generator) + [UInt8](repeating: 9, count: 32)
        return ClientHelloBuilder(serverName: "api.example.com", cipherSuites: [0x1301, 0x1302, 0xC02F],
                                  supportedVersions: [0x0304, 0x0303], supportedGroups: [.x25519MLKEM768, .x25519],
                                  keyShares: [(.x25519MLKEM768, share)],
                                  signatureAlgorithms: ClientHelloBuilder.commonSignatureAlgorithms,
                                  random: [UInt8](repeating: 1, count: 32), sessionID: [UInt8](repeating: 2, count: 32))
    }
}
