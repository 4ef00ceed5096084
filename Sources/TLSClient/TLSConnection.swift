import ATSPolicy
import COpenSSL
import Foundation
import Glibc

/// Client TLS over a connected non-blocking socket, offering exactly what the requirements allow
/// (R13, R14). Owns its `SSL*` (freed in deinit) but not the descriptor: the caller closes that.
///
/// Confined to one thread or serial queue at a time. A peer that resets the connection can raise
/// SIGPIPE on a write, so the process must ignore SIGPIPE (the daemon and `diagnose` do).
public final class TLSConnection {
    private let ssl: OpaquePointer
    private let context: TLSContext
    /// The trust store the connection was set up with, for `evaluatePeer`.
    public let store: TrustStore
    /// The requirements the handshake offers.
    public let requirements: Requirements
    /// The SNI name sent, if any.
    public let serverName: String?
    /// Reason codes (SSL_R_*) of the last failure, oldest first; empty when nothing failed.
    private(set) var failureReasons: [Int32] = []

    /// Sets up TLS on `fd`. `serverName` is sent as SNI (never an IP literal: RFC 6066 forbids it).
    /// `requestSCTs` asks the server for SCTs (TLS extension, stapled OCSP) for R16.
    public init(fd: Int32, serverName: String?, requirements: Requirements, store: TrustStore,
                requestSCTs: Bool = false) throws(TLSSetupError) {
        context = try TLSContext.shared(for: requirements)
        OpenSSLErrorQueue.clear()
        guard let ssl = SSL_new(context.pointer) else {
            throw TLSSetupError("SSL_new: \(OpenSSLErrorQueue.drain().text)")
        }
        self.ssl = ssl
        self.store = store
        self.requirements = requirements
        let sni = serverName.flatMap(ServerNameIndication.name(for:))
        self.serverName = sni
        guard SSL_set_fd(ssl, fd) == 1 else {
            throw TLSSetupError("SSL_set_fd(\(fd)): \(OpenSSLErrorQueue.drain().text)")
        }
        if let sni, atsgate_SSL_set_tlsext_host_name(ssl, sni) != 1 {
            throw TLSSetupError("cannot send server name \(sni): \(OpenSSLErrorQueue.drain().text)")
        }
        if requestSCTs, atsgate_SSL_request_scts(ssl) != 1 {
            throw TLSSetupError("cannot request SCTs: \(OpenSSLErrorQueue.drain().text)")
        }
        SSL_set_connect_state(ssl)
    }

    deinit { SSL_free(ssl) }

    /// One step of the client handshake.
    public func handshake() -> TLSIOResult {
        OpenSSLErrorQueue.clear()
        let result = SSL_do_handshake(ssl)
        if result == 1 { return .done }
        return outcome(of: result, during: "handshake")
    }

    /// Reads decrypted bytes into `buffer`.
    public func read(into buffer: UnsafeMutableRawBufferPointer) -> TLSIOResult {
        guard buffer.count > 0 else { return .bytes(0) }
        OpenSSLErrorQueue.clear()
        var count = 0
        let result = SSL_read_ex(ssl, buffer.baseAddress, buffer.count, &count)
        if result == 1 { return .bytes(count) }
        return outcome(of: result, during: "read")
    }

    /// Encrypts and sends bytes of `buffer`; `.bytes(n)` may be fewer than offered (partial writes).
    public func write(_ buffer: UnsafeRawBufferPointer) -> TLSIOResult {
        guard buffer.count > 0 else { return .bytes(0) }
        OpenSSLErrorQueue.clear()
        var count = 0
        let result = SSL_write_ex(ssl, buffer.baseAddress, buffer.count, &count)
        if result == 1 { return .bytes(count) }
        return outcome(of: result, during: "write")
    }

    /// Sends close_notify once, without waiting for the peer's (the caller closes the socket next).
    public func shutdown() {
        OpenSSLErrorQueue.clear()
        if SSL_get_shutdown(ssl) & SSL_SENT_SHUTDOWN == 0 { _ = SSL_shutdown(ssl) }
        OpenSSLErrorQueue.clear()
    }

    /// "TLSv1.2" and so on, after the handshake; TLS 1.0 is "TLSv1.0" as ATS spells it (OpenSSL says "TLSv1").
    public var negotiatedVersion: String? {
        if let version = negotiatedTLSVersion { return version.rawValue }
        guard SSL_is_init_finished(ssl) == 1, let text = SSL_get_version(ssl) else { return nil }
        return String(cString: text)
    }

    /// The negotiated version as ATS names it, after the handshake.
    public var negotiatedTLSVersion: TLSVersion? {
        guard SSL_is_init_finished(ssl) == 1 else { return nil }
        let wire = UInt16(truncatingIfNeeded: SSL_version(ssl))
        return TLSVersion.allCases.first { $0.wireValue == wire }
    }

    /// The IANA name of the negotiated suite, e.g. "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256".
    public var cipherName: String? {
        guard SSL_is_init_finished(ssl) == 1, let cipher = SSL_get_current_cipher(ssl),
              let name = SSL_CIPHER_standard_name(cipher) else { return nil }
        return String(cString: name)
    }

    /// The negotiated suite's IANA code point, e.g. 0xC02F.
    public var cipherSuite: UInt16? {
        guard SSL_is_init_finished(ssl) == 1, let cipher = SSL_get_current_cipher(ssl) else { return nil }
        return SSL_CIPHER_get_protocol_id(cipher)
    }

    /// The server agreed to the extended master secret (RFC 7627) in its ServerHello; meaningful for
    /// TLS 1.2 and below (R18).
    public var extendedMasterSecret: Bool {
        SSL_is_init_finished(ssl) == 1 && atsgate_SSL_get_extms_support(ssl) == 1
    }

    /// What the handshake settled, as the handshake rules (R14, R18) read it; nil before it is done.
    public func handshakeFacts(host: String) -> HandshakeFacts? {
        guard SSL_is_init_finished(ssl) == 1, let suite = cipherSuite else { return nil }
        return HandshakeFacts(version: UInt16(truncatingIfNeeded: SSL_version(ssl)), cipherSuite: suite,
                              extendedMasterSecret: extendedMasterSecret, host: host,
                              versionName: negotiatedVersion, suiteName: cipherName)
    }

    /// The SCTs the server sent in the TLS extension or a stapled OCSP response (R16); the embedded
    /// ones are read from the certificate itself.
    public var presentedSCTs: [PresentedSCT] {
        guard let list = SSL_get0_peer_scts(ssl) else {
            OpenSSLErrorQueue.clear()
            return []
        }
        var result: [PresentedSCT] = []
        for index in 0..<atsgate_sct_count(list) {
            guard let sct = atsgate_sct_value(list, index) else { continue }
            let source = SCTReader.source(sct)
            guard source != .embedded else { continue }
            var bytes: UnsafeMutablePointer<UInt8>?
            let length = i2o_SCT(sct, &bytes)
            guard length > 0, let bytes else { continue }
            result.append(PresentedSCT(source: source, bytes: Array(UnsafeBufferPointer(start: bytes, count: Int(length)))))
            CRYPTO_free(bytes, #fileID, #line)
        }
        OpenSSLErrorQueue.clear()
        return result
    }

    /// The certificates the server sent, DER, leaf first, as they came on the wire.
    public var peerChainDER: [[UInt8]] {
        guard let chain = SSL_get_peer_cert_chain(ssl) else { return [] }
        return (0..<atsgate_sk_X509_num(chain)).compactMap { index in
            atsgate_sk_X509_value(chain, index).map { X509Certificate(retaining: $0).der }
        }
    }

    /// Judges the server's chain for `host` under this connection's requirements (R15, R15a, R17, and R16
    /// when `transparency` is given).
    public func evaluatePeer(host: String, pin: PinnedDomain?, now: Date = Date(),
                             transparency: TransparencyCheck? = nil, aia: AIAFetcher? = nil) -> CertificateVerdict {
        CertificateEvaluator.evaluate(chain: peerChainDER, host: host, requirements: requirements, pin: pin,
                                      store: store, now: now, transparency: transparency,
                                      presentedSCTs: transparency == nil ? [] : presentedSCTs, aia: aia)
    }

    /// Judges the server's chain under an explicit rule set (R18's system connections).
    public func evaluatePeer(host: String, rules: CertificateRules,
                             transparency: TransparencyCheck? = nil, aia: AIAFetcher? = nil) -> CertificateVerdict {
        CertificateEvaluator.evaluate(chain: peerChainDER, host: host, rules: rules, store: store,
                                      transparency: transparency,
                                      presentedSCTs: transparency == nil ? [] : presentedSCTs, aia: aia)
    }

    private func outcome(of result: Int32, during step: String) -> TLSIOResult {
        let (outcome, reasons) = TLSIOResult.of(ssl, result: result, during: step, peer: "server")
        if let reasons { failureReasons = reasons }
        return outcome
    }
}
