import ATSPolicy
import Foundation
import Testing
import TLSClient

/// R15 and R17 against the certificates of make-pki.sh, judged for host localhost.
@Suite struct CertificateEvaluatorTests {
    static func trusting() throws -> TrustStore { try TrustStore(caFiles: [try TestPKI.path("ca.pem")]) }

    static func verdict(_ leaf: String, host: String = "localhost", requirements: Requirements = .full,
                        pin: PinnedDomain? = nil, store: TrustStore? = nil, now: Date? = nil) throws -> CertificateVerdict {
        let chain = try TestPKI.chain(leaf)
        // The time is taken after the chain exists: the first call waits for make-pki.sh, whose
        // certificates become valid the second they are made.
        return CertificateEvaluator.evaluate(chain: chain, host: host, requirements: requirements,
                                             pin: pin, store: try store ?? trusting(), now: now ?? Date())
    }

    @Test func goodRSALeafPassesAndDescribesItself() throws {
        let verdict = try Self.verdict("good-rsa")
        #expect(verdict.findings == [])
        #expect(verdict.blockingFinding == nil)
        #expect(verdict.trusted)
        #expect(verdict.verifiedChain.count == 3)
        #expect(verdict.verifiedChain.last == "CN=atsgate Test Root CA,O=atsgate test")
        let leaf = try #require(verdict.leaf)
        #expect(leaf.subject == "CN=localhost good-rsa,O=atsgate test")
        #expect(leaf.issuer == "CN=atsgate Test Intermediate CA,O=atsgate test")
        #expect(leaf.key.description == "RSA-2048")
        #expect(leaf.signatureAlgorithm == "sha256WithRSAEncryption")
        #expect(leaf.subjectAlternativeNames == ["DNS:localhost", "IP:127.0.0.1", "IP:::1"])
        #expect(leaf.spkiSHA256 == (try TestPKI.spkiHash(key: "good-rsa.key")).base64EncodedString())
        #expect(leaf.notAfter.map { $0 > Date() } == true)
    }

    @Test func ecdsaP256LeafPasses() throws {
        let verdict = try Self.verdict("good-ec")
        #expect(verdict.findings == [])
        #expect(verdict.leaf?.key.description == "EC-P-256")
    }

    /// Each weak certificate yields exactly its own reason, and it blocks under full ATS.
    @Test(arguments: [
        ("rsa1024", BlockReason.certificateKeySize, "RSA-1024"),
        ("sha1", .certificateSignatureHash, "sha1WithRSAEncryption"),
        ("expired", .certificateExpired, "expired on 2020-02-01T00:00:00Z"),
        ("not-yet", .certificateExpired, "is not valid until 2100-01-01T00:00:00Z"),
        ("wrong-name", .certificateHostname, "certificate for wrong.example does not match host localhost"),
        ("self-signed", .certificateUntrusted, "self-signed certificate"),
    ])
    func weakCertificateFailsWithItsReason(leaf: String, reason: BlockReason, words: String) throws {
        let verdict = try Self.verdict(leaf)
        #expect(verdict.findings.map(\.reason) == [reason])
        let finding = try #require(verdict.blockingFinding)
        #expect(finding.reason == reason)
        #expect(finding.message.contains(words), "\(finding.message)")
        #expect(finding.message.contains("NSExceptionAllowsInsecureHTTPLoads=YES for localhost"))
    }

    @Test func withoutTheCAFileTheChainIsUntrusted() throws {
        let verdict = try Self.verdict("good-rsa", store: try TrustStore())
        #expect(verdict.findings.map(\.reason) == [.certificateUntrusted])
        #expect(!verdict.trusted)
        #expect(verdict.verifiedChain.isEmpty)
        #expect(verdict.blockingFinding?.message.contains("unable to get local issuer certificate") == true)
    }

    @Test func aLeafSentWithoutItsIntermediateIsUntrusted() throws {
        let leafOnly = [try TestPKI.chain("good-rsa")[0]]
        let verdict = CertificateEvaluator.evaluate(chain: leafOnly, host: "localhost", requirements: .full,
                                                    pin: nil, store: try Self.trusting())
        #expect(verdict.findings.map(\.reason) == [.certificateUntrusted])
    }

    /// R15: with cleartext allowed the same findings are reported but tolerated.
    @Test(arguments: ["rsa1024", "sha1", "expired", "wrong-name", "self-signed"])
    func cleartextAllowedToleratesCertificateFindings(leaf: String) throws {
        let verdict = try Self.verdict(leaf, requirements: .none)
        #expect(!verdict.findings.isEmpty)
        #expect(verdict.findings.allSatisfy { !$0.blocking })
        #expect(verdict.blockingFinding == nil)
        #expect(verdict.findings[0].message.contains("tolerated"))
    }

    @Test(arguments: ["127.0.0.1", "::1", "[::1]"])
    func ipLiteralMatchesAnIPSubjectAltName(host: String) throws {
        #expect(try Self.verdict("good-rsa", host: host).findings == [])
    }

    @Test(arguments: ["10.0.0.1", "api.example.com", "localhost.example"])
    func otherHostsDoNotMatch(host: String) throws {
        #expect(try Self.verdict("good-rsa", host: host).findings.map(\.reason) == [.certificateHostname])
    }

    @Test func theCommonNameAloneDoesNotMatch() throws {
        // The subject CN is "localhost good-rsa"; only SANs count (Apple, iOS 13).
        #expect(try Self.verdict("good-rsa", host: "localhost good-rsa").findings.map(\.reason) == [.certificateHostname])
    }

    @Test func evaluationTimeIsTheGivenNow() throws {
        let later = Date(timeIntervalSince1970: 4_102_444_800) // 2100-01-01
        // By then the test CAs (ten years from today) have expired as well.
        let findings = try Self.verdict("good-rsa", now: later).findings
        #expect(findings.map(\.reason) == [.certificateExpired, .certificateExpired, .certificateExpired])
        #expect(findings.first?.message.hasPrefix("certificate for localhost (localhost, 127.0.0.1, ::1) expired on") == true)
    }

    /// The whole verified chain is dated: in January 2020 the "expired" leaf was valid, but the test CAs
    /// (made today) were not yet.
    @Test func everyCertificateOfTheVerifiedChainIsDated() throws {
        let then = Date(timeIntervalSince1970: 1_578_960_000) // 2020-01-14
        let findings = try Self.verdict("expired", now: then).findings
        #expect(findings.map(\.reason) == [.certificateExpired, .certificateExpired])
        #expect(findings[0].message.hasPrefix("intermediate certificate CN=atsgate Test Intermediate CA"))
        #expect(findings[1].message.hasPrefix("root certificate CN=atsgate Test Root CA"))
        #expect(findings.allSatisfy { $0.message.contains("is not valid until") })
    }

    @Test func garbageIsUntrusted() throws {
        let verdict = CertificateEvaluator.evaluate(chain: [[0x30, 0x03, 0x02, 0x01, 0x01]], host: "localhost",
                                                    requirements: .full, pin: nil, store: try Self.trusting())
        #expect(verdict.findings.map(\.reason) == [.certificateUntrusted])
        #expect(verdict.leaf == nil)
        let empty = CertificateEvaluator.evaluate(chain: [], host: "localhost", requirements: .full, pin: nil,
                                                  store: try Self.trusting())
        #expect(empty.blockingFinding?.message.contains("presented no certificate") == true)
    }
}
