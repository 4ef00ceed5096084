import ATSPolicy

/// The TLS 1.2-and-below cipher suites a client offers under each policy of R14, in OpenSSL's names.
/// TLS 1.3 suites are configured separately by OpenSSL and are always offered (all are acceptable).
enum CipherSuites {
    /// R14: ECDHE_ECDSA and ECDHE_RSA with AES-128/256 in GCM or CBC (SHA, SHA256, SHA384 MACs), and
    /// the ECDHE ChaCha20-Poly1305 suites.
    static let forwardSecrecy = [
        "ECDHE-ECDSA-AES256-GCM-SHA384", "ECDHE-ECDSA-AES128-GCM-SHA256",
        "ECDHE-ECDSA-AES256-SHA384", "ECDHE-ECDSA-AES128-SHA256",
        "ECDHE-ECDSA-AES256-SHA", "ECDHE-ECDSA-AES128-SHA",
        "ECDHE-ECDSA-CHACHA20-POLY1305",
        "ECDHE-RSA-AES256-GCM-SHA384", "ECDHE-RSA-AES128-GCM-SHA256",
        "ECDHE-RSA-AES256-SHA384", "ECDHE-RSA-AES128-SHA256",
        "ECDHE-RSA-AES256-SHA", "ECDHE-RSA-AES128-SHA",
        "ECDHE-RSA-CHACHA20-POLY1305",
    ]

    /// R14: TLS_RSA_WITH_AES_{128,256}_{GCM,CBC}_*, accepted when forward secrecy is not required.
    static let rsaKeyExchange = [
        "AES256-GCM-SHA384", "AES128-GCM-SHA256",
        "AES256-SHA256", "AES128-SHA256",
        "AES256-SHA", "AES128-SHA",
    ]

    /// The cipher list string for `SSL_CTX_set_cipher_list`.
    static func openSSLList(for policy: CipherPolicy) -> String {
        switch policy {
        case .forwardSecrecy: forwardSecrecy.joined(separator: ":")
        case .forwardSecrecyOrRSA: (forwardSecrecy + rsaKeyExchange).joined(separator: ":")
        // Unrestricted, but anonymous suites carry no certificate and no client offers them.
        case .any: "ALL:!aNULL"
        }
    }

    /// How a message names the policy.
    static func describe(_ policy: CipherPolicy) -> String {
        switch policy {
        case .forwardSecrecy: "an ECDHE (forward secrecy) suite"
        case .forwardSecrecyOrRSA: "an ECDHE or TLS_RSA_WITH_AES suite"
        case .any: "any suite"
        }
    }
}
