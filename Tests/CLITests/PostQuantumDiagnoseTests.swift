import Foundation
import Testing
import TestSupport

/// `atsgate diagnose`'s post-quantum section against real servers: pyOpenSSL on OpenSSL 4 (which
/// speaks X25519MLKEM768), OpenSSL 3.0's s_server (which does not), and raw origins that answer the
/// probe's ClientHello with broken bytes.
@Suite(.serialized) struct PostQuantumDiagnoseTests {
    static let offeredLine = "Offered : X25519MLKEM768 (the only key share); also listed: x25519, secp256r1, secp384r1, secp521r1\n"

    /// diagnose https://tls.test:PORT/ pinned to loopback, trusting `certificate`.
    static func diagnose(port: Int, certificate: String, _ extra: [String] = []) throws -> AtsgateRun {
        try Atsgate.run(["diagnose", "--resolve", "tls.test=127.0.0.1", "--ca-file", certificate] + extra
                        + ["https://tls.test:\(port)/"])
    }

    /// The post_quantum object of every JSON line, checked to be the same on each.
    static func postQuantum(_ run: AtsgateRun) throws -> [String: Any] {
        let objects = try run.jsonLines()
        let fields = try objects.map { try #require($0["post_quantum"] as? [String: Any], "post_quantum on every line") }
        let first = try #require(fields.first)
        func text(_ object: [String: Any]) -> String { object.keys.sorted().map { "\($0)=\(object[$0]!)" }.joined(separator: ",") }
        for field in fields { #expect(text(field) == text(first)) }
        return first
    }

    /// The text section for `result`.
    static func section(_ result: String) -> String {
        "\nPost-Quantum Key Exchange (iOS 26, macOS 26)\n---\n" + offeredLine + "Result : \(result)\n"
    }

    @Test func aPostQuantumServerNegotiatesX25519MLKEM768() throws {
        let directory = try TemporaryDirectory()
        let (certificate, key) = try TLSOrigin.selfSigned(in: directory)
        let server = try PostQuantumServer(certificate: certificate, key: key)

        let text = try Self.diagnose(port: server.port, certificate: certificate)
        #expect(text.status == 0, "\(text.stderr)")
        // A real OpenSSL 4 server accepted the share: the ML-KEM-768 key is well formed (FIPS 203's check).
        #expect(text.stdout.contains(Self.section("QUANTUM-SECURE (X25519MLKEM768, TLSv1.3)")), "\(text.stdout)")

        let json = try Self.diagnose(port: server.port, certificate: certificate, ["--format", "json"])
        let answer = try Self.postQuantum(json)
        #expect(answer["offered"] as? String == "X25519MLKEM768")
        #expect(answer["group"] as? String == "X25519MLKEM768")
        #expect(answer["quantum_secure"] as? Bool == true)
        #expect(answer["hello_retry_request"] as? Bool == false)
        #expect(answer["tls_version"] as? String == "TLSv1.3")
        #expect(answer["address"] as? String == "127.0.0.1")
        #expect(answer["reason"] is NSNull && answer["message"] is NSNull)

        // --system asks too.
        let system = try Self.diagnose(port: server.port, certificate: certificate, ["--system"])
        #expect(system.stdout.contains(Self.section("QUANTUM-SECURE (X25519MLKEM768, TLSv1.3)")))
    }

    @Test func aClassicalServerAsksForX25519WithAHelloRetryRequestAndTheExitStatusStays() throws {
        let origin = try TLSOrigin()
        let certificate = origin.directory.url.appendingPathComponent("cert.pem").path
        let text = try Self.diagnose(port: origin.port, certificate: certificate)
        #expect(text.status == 0, "ATS does not require it: \(text.stdout)")
        #expect(text.stdout.contains(Self.section("CLASSICAL (x25519 by HelloRetryRequest, TLSv1.3): recorded traffic"
                                                  + " could be decrypted once quantum computers exist")), "\(text.stdout)")
        #expect(text.stdout.contains("16 of 16 tests passed"), "the section is not one of nscurl's tests")

        let answer = try Self.postQuantum(try Self.diagnose(port: origin.port, certificate: certificate, ["--format", "json"]))
        #expect(answer["group"] as? String == "x25519")
        #expect(answer["quantum_secure"] as? Bool == false)
        #expect(answer["hello_retry_request"] as? Bool == true)
        #expect(answer["tls_version"] as? String == "TLSv1.3")
    }

    @Test func aPostQuantumLibraryConfiguredForP384NamesItsGroup() throws {
        let directory = try TemporaryDirectory()
        let (certificate, key) = try TLSOrigin.selfSigned(in: directory)
        let server = try PostQuantumServer(certificate: certificate, key: key, groups: "secp384r1")
        let run = try Self.diagnose(port: server.port, certificate: certificate, ["--system"])
        #expect(run.stdout.contains(Self.section("CLASSICAL (secp384r1 by HelloRetryRequest, TLSv1.3): recorded traffic"
                                                 + " could be decrypted once quantum computers exist")), "\(run.stdout)")
    }

    @Test("TLS 1.2 servers answer with their ECDHE curve, which can never be quantum-secure", arguments: [false, true])
    func tls12(postQuantumLibrary: Bool) throws {
        let directory = try TemporaryDirectory()
        let (certificate, key) = try TLSOrigin.selfSigned(in: directory)
        var origin: TLSOrigin?
        var server: PostQuantumServer?
        if postQuantumLibrary {
            server = try PostQuantumServer(certificate: certificate, key: key, maximumVersion: "TLSv1_2")
        } else {
            origin = try TLSOrigin(extraArguments: ["-tls1_2"])
        }
        let port = try #require(server?.port ?? origin?.port)
        let trusted = origin.map { $0.directory.url.appendingPathComponent("cert.pem").path } ?? certificate
        let run = try Self.diagnose(port: port, certificate: trusted, ["--system", "--format", "json"])
        let answer = try Self.postQuantum(run)
        #expect(answer["group"] as? String == "x25519")
        #expect(answer["quantum_secure"] as? Bool == false)
        #expect(answer["hello_retry_request"] as? Bool == false)
        #expect(answer["tls_version"] as? String == "TLSv1.2")
        let text = try Self.diagnose(port: port, certificate: trusted, ["--system"])
        #expect(text.stdout.contains(Self.section("CLASSICAL (x25519, TLSv1.2): TLS 1.2 and below have no post-quantum key exchange")))
    }

    @Test func anHTTPURLAsksNothing() throws {
        let run = try Atsgate.run(["diagnose", "--format", "json", "http://tls.test:1/"])
        for object in try run.jsonLines() { #expect(object["post_quantum"] is NSNull) }
        let text = try Atsgate.run(["diagnose", "http://tls.test:1/"])
        #expect(!text.stdout.contains("Post-Quantum"))
    }

    // MARK: servers that answer badly

    /// A TLS 1.3 ServerHello (or HelloRetryRequest) record whose key_share extension data is `keyShare`.
    static func serverHello(keyShare: [UInt8], retry: Bool = false) -> [UInt8] {
        let random = retry ? hexBytes("CF21AD74E59A6111BE1D8C021E65B891C2A211167ABB8C5E079E09E2C8A8339C")
            : [UInt8](repeating: 0x11, count: 32)
        func ext(_ type: UInt16, _ data: [UInt8]) -> [UInt8] {
            [UInt8(type >> 8), UInt8(type & 0xFF), UInt8(data.count >> 8), UInt8(data.count & 0xFF)] + data
        }
        let extensions = ext(43, [3, 4]) + ext(51, keyShare)
        let body = [3, 3] + random + [0, 0x13, 0x01, 0] + [UInt8(extensions.count >> 8), UInt8(extensions.count & 0xFF)]
            + extensions
        let message = [2, 0, UInt8(body.count >> 8), UInt8(body.count & 0xFF)] + body
        return [22, 3, 3, UInt8(message.count >> 8), UInt8(message.count & 0xFF)] + message
    }

    @Test("broken answers are UNKNOWN with a reason, never a crash or a hang", arguments: [
        ("a key share cut short", serverHello(keyShare: [0x11, 0xEC, 0x04]),
         "answered with a key exchange that cannot be read: malformed ServerHello: key_share server_share key_exchange length needs 2 bytes, 1 left"),
        ("a hybrid share of the wrong size", serverHello(keyShare: [0x11, 0xEC, 0, 32] + [UInt8](repeating: 7, count: 32)),
         "key_share server_share for X25519MLKEM768 has 32 bytes, not 1120"),
        ("an oversized share", serverHello(keyShare: [0x11, 0xEC, 0xEA, 0x60] + [UInt8](repeating: 7, count: 60_000)),
         "key_share server_share for X25519MLKEM768 has 60000 bytes, not 1120"),
        ("a HelloRetryRequest without its group", serverHello(keyShare: [0x11], retry: true),
         "key_share selected_group needs 2 bytes, 1 left"),
        ("an alert", [21, 3, 3, 0, 2, 2, 40], "refused the ClientHello: fatal handshake_failure(40)"),
        ("bytes that are not TLS", Array("HTTP/1.1 400 Bad Request\r\n\r\n".utf8), "answered with something that is not TLS"),
    ] as [(String, [UInt8], String)])
    func brokenAnswers(_ name: String, _ answer: [UInt8], _ reason: String) throws {
        // The answer may span several records: split it the way a server would.
        var records = answer
        if answer.count > 16_384 + 5 {
            let payload = Array(answer.dropFirst(5))
            records = stride(from: 0, to: payload.count, by: 16_384).flatMap { start -> [UInt8] in
                let fragment = payload[start..<min(start + 16_384, payload.count)]
                return [22, 3, 3, UInt8(fragment.count >> 8), UInt8(fragment.count & 0xFF)] + fragment
            }
        }
        let origin = try RawOrigin(answeringFirstBytesWith: records)
        let run = try Atsgate.run(["diagnose", "--system", "--timeout", "5", "--resolve", "tls.test=127.0.0.1",
                                   "https://tls.test:\(origin.port)/"])
        #expect(run.stdout.contains("Result : UNKNOWN (tls-handshake)\n"), "\(name): \(run.stdout)")
        #expect(run.stdout.contains(reason), "\(name): \(run.stdout)")
        let json = try Atsgate.run(["diagnose", "--system", "--format", "json", "--timeout", "5", "--resolve",
                                    "tls.test=127.0.0.1", "https://tls.test:\(origin.port)/"])
        let answer = try Self.postQuantum(json)
        #expect(answer["reason"] as? String == "tls-handshake", "\(name)")
        #expect(answer["quantum_secure"] is NSNull, "\(name): unknown, not false")
    }
}
