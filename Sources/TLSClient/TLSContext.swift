import ATSPolicy
import COpenSSL
import Synchronization

/// A client `SSL_CTX` configured to offer exactly what a set of requirements allows; freed in deinit.
///
/// Contexts are expensive to make (the cipher and group tables are built per context) and safe to share
/// once configured, so there is one per (minimum version, cipher policy), made on first use and kept.
final class TLSContext: @unchecked Sendable {
    let pointer: OpaquePointer

    private struct Key: Hashable {
        var minimumVersion: TLSVersion?
        var cipherPolicy: CipherPolicy
    }

    private static let cache = Mutex<[Key: TLSContext]>([:])

    /// The shared context for `requirements` (R13, R14).
    static func shared(for requirements: Requirements) throws(TLSSetupError) -> TLSContext {
        let key = Key(minimumVersion: requirements.minimumTLSVersion, cipherPolicy: requirements.cipherPolicy)
        if let context = cache.withLock({ $0[key] }) { return context }
        let made = try TLSContext(minimumVersion: key.minimumVersion, cipherPolicy: key.cipherPolicy)
        // Two threads may both make one; the first stored wins and the other is freed.
        return cache.withLock { contexts in
            if let existing = contexts[key] { return existing }
            contexts[key] = made
            return made
        }
    }

    private init(minimumVersion: TLSVersion?, cipherPolicy: CipherPolicy) throws(TLSSetupError) {
        OpenSSLErrorQueue.clear()
        guard let context = SSL_CTX_new(TLS_client_method()) else {
            throw TLSSetupError("SSL_CTX_new: \(OpenSSLErrorQueue.drain().text)")
        }
        pointer = context
        // Our rules judge the server, not OpenSSL's defaults: level 0 lets TLS 1.0 and SHA-1 servers
        // complete the handshake so that the requirements (and the certificate evaluator) can name
        // exactly what is wrong.
        SSL_CTX_set_security_level(context, 0)
        let floor = Int32(minimumVersion?.wireValue ?? UInt16(TLS1_VERSION))
        guard atsgate_SSL_CTX_set_min_proto_version(context, floor) == 1 else {
            throw TLSSetupError("cannot set minimum TLS version: \(OpenSSLErrorQueue.drain().text)")
        }
        let ciphers = CipherSuites.openSSLList(for: cipherPolicy)
        guard SSL_CTX_set_cipher_list(context, ciphers) == 1 else {
            throw TLSSetupError("cannot set cipher list \(ciphers): \(OpenSSLErrorQueue.drain().text)")
        }
        // No verification inside the handshake: the chain is captured and judged by CertificateEvaluator,
        // so a tolerated finding (R15) does not abort the connection.
        SSL_CTX_set_verify(context, SSL_VERIFY_NONE, nil)
        SSL_CTX_set_options(context, atsgate_client_options())
        // Non-blocking writes may be retried with a different buffer address after WANT_WRITE.
        atsgate_SSL_CTX_set_mode(context, Int(SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER))
    }

    deinit { SSL_CTX_free(pointer) }
}

/// OpenSSL could not be set up for a connection (not a failure of the peer).
public struct TLSSetupError: Error, CustomStringConvertible, Sendable {
    public var description: String
    init(_ description: String) { self.description = description }
}
