import Testing
import TLSWire
import ATSPolicy

@Suite("Cipher suite and version names")
struct NameTableTests {
    @Test("IANA names for representative suites", arguments: [
        (UInt16(0xC02F), "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"),
        (0xC030, "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"),
        (0xC02B, "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"),
        (0xC013, "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA"),
        (0xCCA8, "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"),
        (0xCCA9, "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256"),
        (0x1301, "TLS_AES_128_GCM_SHA256"),
        (0x1302, "TLS_AES_256_GCM_SHA384"),
        (0x1303, "TLS_CHACHA20_POLY1305_SHA256"),
        (0x1304, "TLS_AES_128_CCM_SHA256"),
        (0x1305, "TLS_AES_128_CCM_8_SHA256"),
        (0x002F, "TLS_RSA_WITH_AES_128_CBC_SHA"),
        (0x009D, "TLS_RSA_WITH_AES_256_GCM_SHA384"),
        (0x0033, "TLS_DHE_RSA_WITH_AES_128_CBC_SHA"),
        (0x009E, "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256"),
        (0x000A, "TLS_RSA_WITH_3DES_EDE_CBC_SHA"),
        (0xC012, "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA"),
        (0x0005, "TLS_RSA_WITH_RC4_128_SHA"),
        (0xC011, "TLS_ECDHE_RSA_WITH_RC4_128_SHA"),
        (0x00FF, "TLS_EMPTY_RENEGOTIATION_INFO_SCSV"),
    ])
    func names(_ code: UInt16, _ name: String) {
        #expect(CipherSuite.name(for: code) == name)
    }

    @Test("an unknown code reads as four hex digits")
    func unknown() {
        #expect(CipherSuite.name(for: 0x0A0A) == "0x0A0A")
        #expect(CipherSuite.name(for: 0xC0FF) == "0xC0FF")
        #expect(CipherSuite.name(for: 0x0007) == "0x0007")
    }

    @Test("the table covers what OpenSSL 3 negotiates, all under IANA names")
    func table() {
        #expect(CipherSuite.names.count >= 60)
        #expect(CipherSuite.names.values.allSatisfy { $0.hasPrefix("TLS_") })
        #expect(Set(CipherSuite.names.values).count == CipherSuite.names.count, "no name twice")
    }

    @Test("version names match ATSPolicy's TLSVersion", arguments: TLSVersion.allCases)
    func versionNames(_ version: TLSVersion) {
        #expect(TLSProtocolVersion.name(for: version.wireValue) == version.rawValue)
    }

    @Test("SSLv3 and unknown versions")
    func otherVersions() {
        #expect(TLSProtocolVersion.name(for: 0x0300) == "SSLv3")
        #expect(TLSProtocolVersion.name(for: 0x7F1C) == "0x7F1C")
    }
}
