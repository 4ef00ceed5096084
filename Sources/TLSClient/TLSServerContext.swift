import COpenSSL
import Foundation

/// The proxy's own side of TLS for its TLS listener (`--listen-tls`): a server `SSL_CTX` holding the
/// certificate chain and private key of two PEM files; freed in deinit.
///
/// Made at start and again on every reload. Each session made from it holds a reference to it, so a
/// rotation gives new connections the new pair while open ones finish with the pair they began with.
/// Configured once in init, then only used to make sessions, which OpenSSL allows from any thread.
public final class TLSServerContext: @unchecked Sendable {
    let pointer: OpaquePointer
    public let certificateFile: String
    public let keyFile: String
    /// The leaf's subject, for the operator's log lines.
    public let subject: String
    /// The leaf's end of validity.
    public let notAfter: Date?

    /// Loads the chain (leaf first, then any intermediates) and the key. Throws naming the file at
    /// fault: missing, unreadable, no certificate or key in it, an encrypted key, or a key that is not
    /// the certificate's.
    public init(certificateFile: String, keyFile: String) throws(TLSIdentityError) {
        self.certificateFile = certificateFile
        self.keyFile = keyFile
        let chain: [X509Certificate]
        switch PEMFile.contents(of: certificateFile) {
        case .failure(let problem):
            throw TLSIdentityError(file: certificateFile, part: .certificate, problem: problem.text)
        case .success(let data):
            chain = PEMFile.certificates(in: data)
        }
        guard let leaf = chain.first else {
            throw TLSIdentityError(file: certificateFile, part: .certificate,
                                   problem: "holds no PEM certificate (expected -----BEGIN CERTIFICATE-----)")
        }
        let key = try Self.privateKey(in: keyFile)
        defer { EVP_PKEY_free(key) }

        OpenSSLErrorQueue.clear()
        guard let context = SSL_CTX_new(TLS_server_method()) else {
            throw TLSIdentityError(file: certificateFile, part: .certificate,
                                   problem: "SSL_CTX_new: \(OpenSSLErrorQueue.drain().text)")
        }
        pointer = context
        subject = leaf.subject
        notAfter = leaf.notAfter
        guard SSL_CTX_use_certificate(context, leaf.pointer) == 1 else {
            throw TLSIdentityError(file: certificateFile, part: .certificate,
                                   problem: "OpenSSL refuses the certificate: \(OpenSSLErrorQueue.drain().text)")
        }
        for intermediate in chain.dropFirst() where atsgate_SSL_CTX_add1_chain_cert(context, intermediate.pointer) != 1 {
            throw TLSIdentityError(file: certificateFile, part: .certificate,
                                   problem: "OpenSSL refuses a chain certificate: \(OpenSSLErrorQueue.drain().text)")
        }
        guard SSL_CTX_use_PrivateKey(context, key) == 1, SSL_CTX_check_private_key(context) == 1 else {
            OpenSSLErrorQueue.clear()
            throw TLSIdentityError(file: keyFile, part: .key,
                                   problem: "is not the private key of the certificate in \(certificateFile)")
        }
        // TLS 1.2 and 1.3 only: every client that speaks TLS to a proxy has them, and the proxy's
        // login travels inside.
        guard atsgate_SSL_CTX_set_min_proto_version(context, Int32(TLS1_2_VERSION)) == 1 else {
            throw TLSIdentityError(file: certificateFile, part: .certificate,
                                   problem: "cannot set the minimum TLS version: \(OpenSSLErrorQueue.drain().text)")
        }
        SSL_CTX_set_options(context, atsgate_server_options())
        // Resumption by ticket (stateless) only: a server-side session cache would grow with every
        // client and need its own lock.
        _ = atsgate_SSL_CTX_set_session_cache_mode(context, Int(SSL_SESS_CACHE_OFF))
        // An idle connection gives its 17 KiB record buffers back; plaintext may be offered again
        // from another address after a partial write.
        atsgate_SSL_CTX_set_mode(context, Int(SSL_MODE_RELEASE_BUFFERS | SSL_MODE_ENABLE_PARTIAL_WRITE
                                              | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER))
        atsgate_SSL_CTX_select_http11(context)
        OpenSSLErrorQueue.clear()
    }

    deinit { SSL_CTX_free(pointer) }

    /// The first private key of a PEM file (an owned reference).
    private static func privateKey(in file: String) throws(TLSIdentityError) -> OpaquePointer {
        let data: Data
        switch PEMFile.contents(of: file) {
        case .failure(let problem): throw TLSIdentityError(file: file, part: .key, problem: problem.text)
        case .success(let contents): data = contents
        }
        let text = String(decoding: data, as: UTF8.self)
        if text.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----") || text.contains("Proc-Type: 4,ENCRYPTED") {
            throw TLSIdentityError(file: file, part: .key, problem: "holds an encrypted private key; the daemon "
                + "cannot ask for a passphrase (write it without one: openssl pkey -in FILE -out FILE.plain)")
        }
        OpenSSLErrorQueue.clear()
        let key: OpaquePointer? = data.withUnsafeBytes { bytes in
            guard let bio = MemoryBIO(reading: bytes) else { return nil }
            // Never OpenSSL's default passphrase prompt on the terminal: a daemon has none.
            return PEM_read_bio_PrivateKey(bio.pointer, nil, { _, _, _, _ in 0 }, nil)
        }
        OpenSSLErrorQueue.clear()
        guard let key else {
            throw TLSIdentityError(file: file, part: .key,
                                   problem: "holds no PEM private key (expected -----BEGIN PRIVATE KEY-----)")
        }
        return key
    }
}

/// A certificate or key file the TLS listener cannot use.
public struct TLSIdentityError: Error, CustomStringConvertible, Sendable {
    /// Which of the two files: the caller names its flag.
    public enum Part: Sendable { case certificate, key }
    public var file: String
    public var part: Part
    public var problem: String

    public var description: String { "\(file): \(problem)" }
}
