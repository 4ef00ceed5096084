/// R14's cipher suites, written once: each suite's code point, IANA name and OpenSSL name, and the set
/// it belongs to. The handshake rules read the code points; TLSClient derives the cipher strings it
/// offers from the OpenSSL names (a test checks them against `openssl ciphers -V`).
public enum R14CipherSuites {
    /// Which of R14's sets a suite is in.
    public enum Group: Sendable, Equatable {
        /// TLS 1.3: every suite is acceptable once TLS 1.3 is negotiated.
        case tls13
        /// ECDHE_ECDSA / ECDHE_RSA with AES-GCM, AES-CBC or ChaCha20-Poly1305.
        case forwardSecrecy
        /// TLS_RSA_WITH_AES_*: accepted only when forward secrecy is not required.
        case rsaKeyExchange
    }

    public struct Entry: Sendable, Equatable {
        public var code: UInt16
        public var ianaName: String
        /// OpenSSL's name (what `SSL_CTX_set_cipher_list` and `SSL_CTX_set_ciphersuites` take).
        public var openSSLName: String
        public var group: Group
    }

    /// In the order a client prefers them (strongest first within each group).
    public static let all: [Entry] = [
        Entry(code: 0x1301, ianaName: "TLS_AES_128_GCM_SHA256", openSSLName: "TLS_AES_128_GCM_SHA256", group: .tls13),
        Entry(code: 0x1302, ianaName: "TLS_AES_256_GCM_SHA384", openSSLName: "TLS_AES_256_GCM_SHA384", group: .tls13),
        Entry(code: 0x1303, ianaName: "TLS_CHACHA20_POLY1305_SHA256", openSSLName: "TLS_CHACHA20_POLY1305_SHA256",
              group: .tls13),
        Entry(code: 0x1304, ianaName: "TLS_AES_128_CCM_SHA256", openSSLName: "TLS_AES_128_CCM_SHA256", group: .tls13),
        Entry(code: 0x1305, ianaName: "TLS_AES_128_CCM_8_SHA256", openSSLName: "TLS_AES_128_CCM_8_SHA256",
              group: .tls13),

        Entry(code: 0xC02C, ianaName: "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
              openSSLName: "ECDHE-ECDSA-AES256-GCM-SHA384", group: .forwardSecrecy),
        Entry(code: 0xC02B, ianaName: "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
              openSSLName: "ECDHE-ECDSA-AES128-GCM-SHA256", group: .forwardSecrecy),
        Entry(code: 0xC024, ianaName: "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA384",
              openSSLName: "ECDHE-ECDSA-AES256-SHA384", group: .forwardSecrecy),
        Entry(code: 0xC023, ianaName: "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256",
              openSSLName: "ECDHE-ECDSA-AES128-SHA256", group: .forwardSecrecy),
        Entry(code: 0xC00A, ianaName: "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA",
              openSSLName: "ECDHE-ECDSA-AES256-SHA", group: .forwardSecrecy),
        Entry(code: 0xC009, ianaName: "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA",
              openSSLName: "ECDHE-ECDSA-AES128-SHA", group: .forwardSecrecy),
        Entry(code: 0xCCA9, ianaName: "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
              openSSLName: "ECDHE-ECDSA-CHACHA20-POLY1305", group: .forwardSecrecy),
        Entry(code: 0xC030, ianaName: "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
              openSSLName: "ECDHE-RSA-AES256-GCM-SHA384", group: .forwardSecrecy),
        Entry(code: 0xC02F, ianaName: "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
              openSSLName: "ECDHE-RSA-AES128-GCM-SHA256", group: .forwardSecrecy),
        Entry(code: 0xC028, ianaName: "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384",
              openSSLName: "ECDHE-RSA-AES256-SHA384", group: .forwardSecrecy),
        Entry(code: 0xC027, ianaName: "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256",
              openSSLName: "ECDHE-RSA-AES128-SHA256", group: .forwardSecrecy),
        Entry(code: 0xC014, ianaName: "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
              openSSLName: "ECDHE-RSA-AES256-SHA", group: .forwardSecrecy),
        Entry(code: 0xC013, ianaName: "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
              openSSLName: "ECDHE-RSA-AES128-SHA", group: .forwardSecrecy),
        Entry(code: 0xCCA8, ianaName: "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
              openSSLName: "ECDHE-RSA-CHACHA20-POLY1305", group: .forwardSecrecy),

        Entry(code: 0x009D, ianaName: "TLS_RSA_WITH_AES_256_GCM_SHA384", openSSLName: "AES256-GCM-SHA384",
              group: .rsaKeyExchange),
        Entry(code: 0x009C, ianaName: "TLS_RSA_WITH_AES_128_GCM_SHA256", openSSLName: "AES128-GCM-SHA256",
              group: .rsaKeyExchange),
        Entry(code: 0x003D, ianaName: "TLS_RSA_WITH_AES_256_CBC_SHA256", openSSLName: "AES256-SHA256",
              group: .rsaKeyExchange),
        Entry(code: 0x003C, ianaName: "TLS_RSA_WITH_AES_128_CBC_SHA256", openSSLName: "AES128-SHA256",
              group: .rsaKeyExchange),
        Entry(code: 0x0035, ianaName: "TLS_RSA_WITH_AES_256_CBC_SHA", openSSLName: "AES256-SHA",
              group: .rsaKeyExchange),
        Entry(code: 0x002F, ianaName: "TLS_RSA_WITH_AES_128_CBC_SHA", openSSLName: "AES128-SHA",
              group: .rsaKeyExchange),
    ]

    private static let byCode: [UInt16: Entry] = Dictionary(uniqueKeysWithValues: all.map { ($0.code, $0) })

    public static func entry(_ code: UInt16) -> Entry? { byCode[code] }

    /// The code points of one group.
    public static func codes(_ group: Group) -> Set<UInt16> {
        Set(all.lazy.filter { $0.group == group }.map(\.code))
    }

    /// The TLS 1.2-and-below suites a policy accepts, in preference order; nil when it accepts any.
    public static func entries(for policy: CipherPolicy) -> [Entry]? {
        switch policy {
        case .forwardSecrecy: all.filter { $0.group == .forwardSecrecy }
        case .forwardSecrecyOrRSA: all.filter { $0.group == .forwardSecrecy || $0.group == .rsaKeyExchange }
        case .any: nil
        }
    }
}
