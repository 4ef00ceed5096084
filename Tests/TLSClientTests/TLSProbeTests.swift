import ATSPolicy
import Foundation
import Testing
import TLSClient

/// The probe against real `openssl s_server` configurations on loopback (R13, R14, R15).
@Suite(.serialized) struct TLSProbeTests {
    static let noForwardSecrecy = Requirements(cleartextAllowed: false, minimumTLSVersion: .tls12,
                                               forwardSecrecy: false, certificateChecks: true)

    static func probe(_ server: OpenSSLServer, host: String = "localhost", requirements: Requirements = .full,
                      pin: PinnedDomain? = nil) throws -> ProbeResult {
        let probe = TLSProbe(store: try CertificateEvaluatorTests.trusting(), timeout: 10)
        return probe.probe(ProbeTarget(host: host, port: server.port, addresses: ["127.0.0.1"]),
                           requirements: requirements, pin: pin)
    }

    @Test func tls13ServerPasses() throws {
        let server = try OpenSSLServer(["-tls1_3"])
        let result = try Self.probe(server)
        #expect(result.passed, "\(String(describing: result.failureMessage))")
        let session = try #require(result.session)
        #expect(session.protocolVersion == "TLSv1.3")
        #expect(session.tlsVersion == .tls13)
        #expect(["TLS_AES_256_GCM_SHA384", "TLS_AES_128_GCM_SHA256", "TLS_CHACHA20_POLY1305_SHA256"].contains(session.cipher))
        #expect(session.peerChainDER == (try TestPKI.chain("good-rsa")))
        #expect(session.certificate.trusted)
        #expect(result.address == "127.0.0.1")
    }

    @Test func tls12ECDHEServerPasses() throws {
        let server = try OpenSSLServer(["-tls1_2", "-cipher", "ECDHE-RSA-AES128-GCM-SHA256"])
        let result = try Self.probe(server)
        #expect(result.passed)
        #expect(result.session?.protocolVersion == "TLSv1.2")
        #expect(result.session?.cipher == "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256")
    }

    @Test func ecdsaServerPasses() throws {
        let server = try OpenSSLServer(leaf: "good-ec", ["-tls1_2", "-cipher", "ECDHE-ECDSA-AES256-GCM-SHA384"])
        let result = try Self.probe(server)
        #expect(result.passed)
        #expect(result.session?.cipher == "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384")
        #expect(result.session?.certificate.leaf?.key.description == "EC-P-256")
    }

    /// R14: an RSA-key-exchange-only server fails forward secrecy, and passes once it is not required.
    @Test func rsaKeyExchangeServerFailsForwardSecrecyOnly() throws {
        let server = try OpenSSLServer(["-cipher", "AES128-SHA", "-no_tls1_3"])
        let strict = try Self.probe(server)
        #expect(strict.failureReason == "cipher-suite")
        #expect(strict.failure?.blockReason == .cipherSuite)
        #expect(strict.failure?.unrestricted?.cipher == "TLS_RSA_WITH_AES_128_CBC_SHA")
        // The explanation is the R14 rule's own sentence about what the server chose.
        #expect(strict.failureMessage?.contains("server negotiated TLS_RSA_WITH_AES_128_CBC_SHA with TLSv1.2, which"
                                                + " lacks forward secrecy; localhost requires forward secrecy"
                                                + " (NSExceptionRequiresForwardSecrecy=NO would allow it)") == true,
                "\(String(describing: strict.failureMessage))")
        #expect(strict.rule == .r14)

        let relaxed = try Self.probe(server, requirements: Self.noForwardSecrecy)
        #expect(relaxed.passed)
        #expect(relaxed.session?.cipher == "TLS_RSA_WITH_AES_128_CBC_SHA")
        #expect(relaxed.session?.protocolVersion == "TLSv1.2")
    }

    /// R13: a TLS 1.0-only server fails the TLSv1.2 minimum, names what it speaks, and passes at TLSv1.0.
    @Test func tls10ServerFailsTheDefaultMinimum() throws {
        let server = try OpenSSLServer(["-tls1", "-cipher", "ALL:@SECLEVEL=0"])
        let strict = try Self.probe(server)
        #expect(strict.failureReason == "tls-version")
        #expect(strict.failureMessage?.contains("localhost speaks at most TLSv1.0; the requirements need TLSv1.2") == true)
        #expect(strict.failureMessage?.contains("(NSExceptionMinimumTLSVersion=TLSv1.0 would allow it)") == true)
        #expect(strict.rule == .r14)
        #expect(strict.failure?.unrestricted?.protocolVersion == "TLSv1.0")

        let tls10 = Requirements(cleartextAllowed: false, minimumTLSVersion: .tls10, forwardSecrecy: true,
                                 certificateChecks: true)
        let relaxed = try Self.probe(server, requirements: tls10)
        #expect(relaxed.passed, "\(String(describing: relaxed.failureMessage))")
        #expect(relaxed.session?.protocolVersion == "TLSv1.0")
        #expect(relaxed.session?.cipher.hasPrefix("TLS_ECDHE_") == true)
    }

    @Test func tls12ServerFailsATLS13Minimum() throws {
        let server = try OpenSSLServer(["-tls1_2"])
        let tls13 = Requirements(cleartextAllowed: false, minimumTLSVersion: .tls13, forwardSecrecy: true,
                                 certificateChecks: true)
        let result = try Self.probe(server, requirements: tls13)
        #expect(result.failureReason == "tls-version")
        #expect(result.failureMessage?.contains("speaks at most TLSv1.2") == true)
    }

    /// R15 through the probe: the handshake completes, the certificate decides.
    @Test func expiredCertificateFailsUnlessCleartextIsAllowed() throws {
        let server = try OpenSSLServer(leaf: "expired")
        let strict = try Self.probe(server)
        #expect(strict.session != nil)
        #expect(strict.failureReason == "certificate-expired")
        let lenient = try Self.probe(server, requirements: .none)
        #expect(lenient.passed)
        #expect(lenient.session?.certificate.toleratedFindings.map(\.reason) == [.certificateExpired])
    }

    @Test func ipLiteralHostIsJudgedAgainstIPNames() throws {
        let server = try OpenSSLServer(leaf: "good-rsa")
        let result = try Self.probe(server, host: "127.0.0.1")
        #expect(result.passed, "\(String(describing: result.failureMessage))")
    }

    @Test func pinFailureFailsTheProbe() throws {
        let server = try OpenSSLServer()
        let pin = try PinTests.pin(leaf: [Data(repeating: 1, count: 32)])
        #expect(try Self.probe(server, requirements: .none, pin: pin).failureReason == "certificate-pin")
    }

    @Test func refusedConnection() throws {
        let probe = TLSProbe(store: try TrustStore(), timeout: 5)
        let result = probe.probe(ProbeTarget(host: "localhost", port: try closedPort(), addresses: ["127.0.0.1"]),
                                 requirements: .full)
        #expect(result.failureReason == "upstream-refused")
        #expect(result.failureMessage?.contains("127.0.0.1") == true)
    }

    @Test func silentServerTimesOutInTheHandshake() throws {
        let listener = try SilentListener()
        let probe = TLSProbe(store: try TrustStore(), timeout: 0.5)
        let result = probe.probe(ProbeTarget(host: "localhost", port: listener.port, addresses: ["127.0.0.1"]),
                                 requirements: .full)
        #expect(result.failureReason == "upstream-timeout")
        #expect(result.failureMessage?.contains("TLS handshake") == true)
    }

    @Test func namesAreResolvedWhenNoAddressIsGiven() throws {
        let server = try OpenSSLServer()
        let probe = TLSProbe(store: try CertificateEvaluatorTests.trusting(), timeout: 10)
        // localhost may resolve to ::1 first, where s_server does not listen; the probe moves on.
        let result = probe.probe(ProbeTarget(host: "localhost", port: server.port), requirements: .full)
        #expect(result.passed, "\(String(describing: result.failureMessage))")
        #expect(result.address == "127.0.0.1")
    }

    @Test func unresolvableName() throws {
        let probe = TLSProbe(store: try TrustStore(), timeout: 5)
        let result = probe.probe(ProbeTarget(host: "no-such-host.invalid", port: 443), requirements: .full)
        #expect(result.failureReason == "upstream-dns")
        #expect(result.failureMessage?.contains("no-such-host.invalid") == true)
    }
}
