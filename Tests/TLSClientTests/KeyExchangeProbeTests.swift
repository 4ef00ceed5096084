import Glibc
import Testing
import TestSupport
@testable import TLSClient
import TLSWire

/// The post-quantum probe against a real X25519MLKEM768 server (pyOpenSSL on OpenSSL 4), and the
/// proof that its ML-KEM key is checked for real: the same hello with one coefficient at q is refused.
@Suite(.serialized) struct KeyExchangeProbeTests {
    static func server() throws -> PostQuantumServer {
        try PostQuantumServer(certificate: TestPKI.path("good-rsa.pem"), key: TestPKI.path("good-rsa.key"))
    }

    /// Sends `hello` to 127.0.0.1:`port` and feeds the answer to a reader until a ServerHello or the
    /// end of the plaintext handshake.
    static func answer(to hello: [UInt8], port: Int) throws -> (hello: ServerHello?, alert: TLSAlert?) {
        let client = try RawClient(port: port)
        client.send(hello)
        var reader = TLSHandshakeReader()
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while reader.sawNonHandshakeRecord == nil {
            let count = recv(client.fd, &buffer, buffer.count, 0)
            guard count > 0 else { break }
            if let message = try reader.feed(Array(buffer[..<count])).first(where: { $0.type == .serverHello }) {
                return (try ServerHello(message), nil)
            }
        }
        return (nil, reader.alert)
    }

    @Test func theProbeReadsX25519MLKEM768FromARealServer() throws {
        let server = try Self.server()
        let result = KeyExchangeProbe(timeout: 10).probe(ProbeTarget(host: "localhost", port: server.port,
                                                                      addresses: ["127.0.0.1"]))
        #expect(result.failure == nil, "\(String(describing: result.failure))")
        #expect(result.group == .x25519MLKEM768)
        #expect(result.quantumSecure)
        #expect(!result.helloRetryRequest)
        #expect(result.negotiatedVersion == TLSProtocolVersion.tls13)
        #expect(result.address == "127.0.0.1")
    }

    @Test func theServerChecksTheEncapsulationKeySoAWellFormedOneIsWhatPasses() throws {
        let server = try Self.server()
        var generator = SeededGenerator(seed: 20)
        var builder = KeyExchangeProbe.clientHello(serverName: "localhost", using: &generator)
        #expect(builder.keyShares.map(\.key.count) == [NamedGroup.x25519MLKEM768.keyShareLengths?.client])

        let accepted = try Self.answer(to: builder.records, port: server.port)
        #expect(accepted.hello?.selectedGroup == .x25519MLKEM768)
        #expect(accepted.hello?.serverShare?.keyExchangeLength == 1120)

        // ByteEncode12 of a first coefficient of 3329 = q: FIPS 203's modulus check fails.
        builder.keyShares[0].key[0] = 0x01
        builder.keyShares[0].key[1] = builder.keyShares[0].key[1] & 0xF0 | 0x0D
        #expect(MLKEMEncapsulationKey.coefficients(Array(builder.keyShares[0].key.prefix(1184)))[0] == 3329)
        let refused = try Self.answer(to: builder.records, port: server.port)
        #expect(refused.hello == nil)
        #expect(refused.alert?.description == .illegalParameter, "\(String(describing: refused.alert))")
    }

    @Test func aServerThatIsNotThereIsAFailureNotAGroup() throws {
        let port = try freePort()
        let result = KeyExchangeProbe(timeout: 5).probe(ProbeTarget(host: "127.0.0.1", port: port))
        #expect(result.failure?.code == .refused)
        #expect(result.group == nil && !result.quantumSecure)
    }
}
