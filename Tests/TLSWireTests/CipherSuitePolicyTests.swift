import Testing
import TestSupport
import TLSWire
@testable import ATSPolicy

/// R14 (ATS-SPEC section 6) and the R13 version floor, checked against what a handshake negotiates.
@Suite("R14 cipher suites and the version check on the wire")
struct CipherSuitePolicyTests {
    static let tls10: UInt16 = 0x0301
    static let tls12: UInt16 = 0x0303
    static let tls13: UInt16 = 0x0304

    struct Row: Sendable, CustomStringConvertible {
        var policy: CipherPolicy
        var suite: UInt16
        var version: UInt16
        var allowed: Bool
        var description: String {
            "\(policy.rawValue) \(CipherSuite.name(for: suite)) \(TLSProtocolVersion.name(for: version)) -> \(allowed)"
        }
    }

    /// Written from ATS-SPEC R14, suite by suite.
    static let rows: [Row] = {
        var rows: [Row] = []
        func add(_ policy: CipherPolicy, _ version: UInt16, allowed: Bool, _ suites: UInt16...) {
            rows += suites.map { Row(policy: policy, suite: $0, version: version, allowed: allowed) }
        }
        // Forward secrecy: ECDHE_ECDSA / ECDHE_RSA with AES-GCM/CBC, and ECDHE ChaCha20.
        add(.forwardSecrecy, tls12, allowed: true, 0xC02F, 0xC030, 0xC02B, 0xC02C, 0xC027, 0xC028, 0xC023, 0xC024,
            0xCCA8, 0xCCA9)
        add(.forwardSecrecy, tls10, allowed: true, 0xC013, 0xC014, 0xC009, 0xC00A)
        add(.forwardSecrecy, tls12, allowed: false,
            0x002F, 0x0035, 0x003C, 0x003D, 0x009C, 0x009D,  // RSA key exchange
            0x0033, 0x0039, 0x009E, 0x009F, 0xCCAA,  // DHE: forward secret, but not in ATS's list
            0xC012, 0x000A,  // 3DES
            0xC011, 0x0005,  // RC4
            0xC0AC, 0xC0AD,  // ECDHE_ECDSA AES-CCM
            0xC076, 0xC060,  // ECDHE Camellia, ARIA
            0xCCAC,  // ECDHE_PSK ChaCha20
            0xC010, 0x0001,  // NULL encryption
            0x1301)  // a TLS 1.3 suite under TLS 1.2
        add(.forwardSecrecy, tls13, allowed: true, 0x1301, 0x1302, 0x1303, 0x1304, 0x1305)
        add(.forwardSecrecy, tls13, allowed: false, 0xC02F)
        // Plus TLS_RSA_WITH_AES_{128,256}_{GCM,CBC}_*.
        add(.forwardSecrecyOrRSA, tls12, allowed: true, 0x002F, 0x0035, 0x003C, 0x003D, 0x009C, 0x009D,
            0xC02F, 0xCCA9)
        add(.forwardSecrecyOrRSA, tls10, allowed: true, 0x002F, 0x0035)
        add(.forwardSecrecyOrRSA, tls12, allowed: false, 0x000A, 0x0005, 0x0033, 0xC09C, 0xC0A0, 0x0041, 0x00BA,
            0xC050)
        add(.forwardSecrecyOrRSA, tls13, allowed: true, 0x1301, 0x1302, 0x1303)
        // No restriction.
        add(.any, tls12, allowed: true, 0x000A, 0x0005, 0x0001, 0x0033, 0x002F, 0xC02F)
        add(.any, tls10, allowed: true, 0x0004, 0x0009)
        add(.any, tls13, allowed: true, 0x1301, 0xC02F)
        return rows
    }()

    @Test("allows(suite:version:)", arguments: rows)
    func table(_ row: Row) {
        #expect(row.policy.allows(suite: row.suite, version: row.version) == row.allowed)
    }

    @Test("over every named suite at TLS 1.2 the sets nest: 14 forward-secrecy, 20 with RSA, all for any")
    func nesting() {
        let suites = Array(CipherSuite.names.keys)
        let fs = Set(suites.filter { CipherPolicy.forwardSecrecy.allows(suite: $0, version: Self.tls12) })
        let rsa = Set(suites.filter { CipherPolicy.forwardSecrecyOrRSA.allows(suite: $0, version: Self.tls12) })
        let any = Set(suites.filter { CipherPolicy.any.allows(suite: $0, version: Self.tls12) })
        #expect(fs.count == 14)
        #expect(rsa.count == 20)
        #expect(fs.isSubset(of: rsa) && rsa.isSubset(of: any))
        #expect(any.count == suites.count)
    }

    @Test("the R14 sets agree with the IANA names")
    func setsMatchNames() {
        for suite in CipherPolicy.forwardSecrecySuites {
            let name = CipherSuite.name(for: suite)
            #expect(name.hasPrefix("TLS_ECDHE_ECDSA_WITH_") || name.hasPrefix("TLS_ECDHE_RSA_WITH_"), "\(name)")
            #expect(["AES_128_GCM", "AES_256_GCM", "AES_128_CBC", "AES_256_CBC", "CHACHA20_POLY1305"]
                .contains { name.contains($0) }, "\(name)")
        }
        for suite in CipherPolicy.rsaKeyExchangeSuites {
            #expect(CipherSuite.name(for: suite).hasPrefix("TLS_RSA_WITH_AES_"))
        }
        for suite in CipherPolicy.tls13Suites {
            #expect(!CipherSuite.name(for: suite).contains("_WITH_"))
        }
        // Every ECDHE_RSA / ECDHE_ECDSA AES-GCM/CBC or ChaCha20 suite in the table is in the set.
        let expected = CipherSuite.names.filter { _, name in
            (name.hasPrefix("TLS_ECDHE_ECDSA_WITH_") || name.hasPrefix("TLS_ECDHE_RSA_WITH_"))
                && (name.contains("AES_128_GCM") || name.contains("AES_256_GCM") || name.contains("AES_128_CBC")
                    || name.contains("AES_256_CBC") || name.contains("CHACHA20_POLY1305"))
        }
        #expect(Set(expected.keys) == CipherPolicy.forwardSecrecySuites)
    }

    // MARK: wireViolation

    static func violation(_ requirements: Requirements, _ version: UInt16, _ suite: UInt16,
                          host: String = "api.example.com") -> (reason: BlockReason, message: String)? {
        requirements.wireViolation(version: version, suite: suite, host: host,
                                   versionName: TLSProtocolVersion.name(for: version),
                                   suiteName: CipherSuite.name(for: suite))
    }

    /// NSExceptionRequiresForwardSecrecy = NO, nothing else.
    static let noForwardSecrecy = Requirements(cleartextAllowed: false, minimumTLSVersion: .tls12,
                                               forwardSecrecy: false, certificateChecks: true)
    /// NSExceptionRequiresForwardSecrecy = NO and NSExceptionAllowsInsecureHTTPLoads = YES.
    static let insecure = Requirements(cleartextAllowed: true, minimumTLSVersion: .tls12,
                                       forwardSecrecy: false, certificateChecks: false)
    /// NSExceptionMinimumTLSVersion = TLSv1.0.
    static let tls10Minimum = Requirements(cleartextAllowed: false, minimumTLSVersion: .tls10,
                                           forwardSecrecy: true, certificateChecks: true)

    @Test("a version under the minimum names both versions and the key")
    func versionTooLow() {
        let result = Self.violation(.full, Self.tls10, 0xC014)
        #expect(result?.reason == .tlsVersion)
        #expect(result?.message == "server negotiated TLSv1.0; api.example.com requires TLSv1.2 or later "
            + "(NSExceptionMinimumTLSVersion=TLSv1.0 would allow it)")
        #expect(Self.violation(.full, 0x0302, 0xC013)?.reason == .tlsVersion)
        #expect(Self.violation(Requirements(cleartextAllowed: false, minimumTLSVersion: .tls13, forwardSecrecy: true,
                                            certificateChecks: true), Self.tls12, 0xC02F)?.reason == .tlsVersion)
    }

    @Test("SSLv3 has no key to allow it")
    func sslv3() {
        #expect(Self.violation(.full, 0x0300, 0x002F)?.message
            == "server negotiated SSLv3; api.example.com requires TLSv1.2 or later (no ATS key allows SSLv3)")
    }

    @Test("the version is checked before the suite")
    func versionFirst() {
        #expect(Self.violation(.full, Self.tls10, 0x000A)?.reason == .tlsVersion)
    }

    @Test("an RSA key exchange under forward secrecy points at NSExceptionRequiresForwardSecrecy")
    func rsaUnderForwardSecrecy() {
        let result = Self.violation(.full, Self.tls12, 0x002F)
        #expect(result?.reason == .cipherSuite)
        #expect(result?.message == "server negotiated TLS_RSA_WITH_AES_128_CBC_SHA with TLSv1.2, which lacks "
            + "forward secrecy; api.example.com requires forward secrecy (NSExceptionRequiresForwardSecrecy=NO would allow it)")
    }

    @Test("3DES under forward secrecy needs both keys")
    func tripleDESUnderForwardSecrecy() {
        let result = Self.violation(.full, Self.tls12, 0x000A)
        #expect(result?.reason == .cipherSuite)
        #expect(result?.message.contains("TLS_RSA_WITH_3DES_EDE_CBC_SHA") == true)
        #expect(result?.message.contains(
            "NSExceptionRequiresForwardSecrecy=NO with NSExceptionAllowsInsecureHTTPLoads=YES would allow it") == true)
    }

    @Test("3DES without forward secrecy points at NSExceptionAllowsInsecureHTTPLoads")
    func tripleDESWithoutForwardSecrecy() {
        let result = Self.violation(Self.noForwardSecrecy, Self.tls12, 0x000A)
        #expect(result?.reason == .cipherSuite)
        #expect(result?.message == "server negotiated TLS_RSA_WITH_3DES_EDE_CBC_SHA with TLSv1.2; api.example.com "
            + "requires a forward-secrecy or TLS_RSA_WITH_AES_* cipher suite (NSExceptionAllowsInsecureHTTPLoads=YES would allow it)")
    }

    @Test("a TLS 1.2 suite under TLS 1.3 is refused")
    func wrongSuiteForVersion() {
        #expect(Self.violation(.full, Self.tls13, 0xC02F)?.message
            == "server negotiated TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 with TLSv1.3, which is not a TLS 1.3 cipher suite")
    }

    @Test("handshakes that meet the requirements", arguments: [
        (Requirements.full, UInt16(0x0304), UInt16(0x1301)),
        (.full, 0x0303, 0xC02F),
        (.full, 0x0303, 0xCCA8),
        (noForwardSecrecy, 0x0303, 0x009C),
        (insecure, 0x0303, 0x000A),
        (tls10Minimum, 0x0301, 0xC014),
        (.none, 0x0300, 0x0005),
    ])
    func meets(_ requirements: Requirements, _ version: UInt16, _ suite: UInt16) {
        #expect(Self.violation(requirements, version, suite) == nil)
    }

    @Test("the captured ServerHellos against full ATS: TLS 1.3 and ECDHE pass, RSA and TLS 1.0 do not",
          arguments: [
            (CapturedHandshakes.tls13, BlockReason?.none),
            (CapturedHandshakes.curl, nil),
            (CapturedHandshakes.tls13HelloRetry, nil),
            (CapturedHandshakes.tls12EcdheRSA, nil),
            (CapturedHandshakes.tls12RSA, .cipherSuite),
            (CapturedHandshakes.tls10, .tlsVersion),
          ])
    func captured(_ capture: CapturedHandshake, _ reason: BlockReason?) throws {
        let hello = try ServerHello(#require(capture.messages(.serverHello, fromServer: true).last))
        #expect(Self.violation(.full, hello.negotiatedVersion, hello.cipherSuite)?.reason == reason)
    }
}
