import ATSPolicy

/// The TLS 1.2-and-below cipher strings a client offers under each policy of R14, derived from
/// `R14CipherSuites` (where each suite is written once). TLS 1.3 suites are configured separately by
/// OpenSSL and are always offered (all are acceptable).
enum CipherSuites {
    /// The cipher list string for `SSL_CTX_set_cipher_list`.
    static func openSSLList(for policy: CipherPolicy) -> String {
        // Unrestricted, but anonymous suites carry no certificate and no client offers them.
        guard let entries = R14CipherSuites.entries(for: policy) else { return "ALL:!aNULL" }
        return entries.map(\.openSSLName).joined(separator: ":")
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
