import COpenSSL
import TLSWire

/// The client Initial keys of one destination connection ID (RFC 9001 section 5.2): the AEAD key and
/// IV of AES-128-GCM, and the AES-128 header-protection key.
struct QUICInitialKeys: Equatable {
    var key: [UInt8]
    var iv: [UInt8]
    var hp: [UInt8]
}

/// The cryptography of QUIC Initial packets on OpenSSL: HKDF-SHA256 for the keys, AES-128-ECB for
/// the header-protection mask, AES-128-GCM for the payload. Algorithms are fetched once and the
/// contexts reused, because OpenSSL 3 looks an algorithm up (with locks) on every implicit fetch,
/// which would cost more than a packet's decryption. One instance serves one thread; freed in deinit.
final class QUICInitialCipher {
    private let hmac: OpaquePointer
    private let hmacContext: OpaquePointer
    private let ecb: OpaquePointer
    private let gcm: OpaquePointer
    private let ecbContext: OpaquePointer
    private let gcmContext: OpaquePointer

    init() {
        // The default provider always has these; without them no TLS would work either.
        guard let hmac = EVP_MAC_fetch(nil, "HMAC", nil), let hmacContext = EVP_MAC_CTX_new(hmac),
              let ecb = EVP_CIPHER_fetch(nil, "AES-128-ECB", nil), let gcm = EVP_CIPHER_fetch(nil, "AES-128-GCM", nil),
              let ecbContext = EVP_CIPHER_CTX_new(), let gcmContext = EVP_CIPHER_CTX_new() else {
            fatalError("OpenSSL has no HMAC, AES-128-ECB or AES-128-GCM: \(OpenSSLErrorQueue.drain().text)")
        }
        self.hmac = hmac
        self.hmacContext = hmacContext
        self.ecb = ecb
        self.gcm = gcm
        self.ecbContext = ecbContext
        self.gcmContext = gcmContext
        let digest = strdup("SHA256")
        defer { free(digest) }
        var parameters = [OSSL_PARAM_construct_utf8_string("digest", digest, 0), OSSL_PARAM_construct_end()]
        guard EVP_MAC_CTX_set_params(hmacContext, &parameters) == 1 else {
            fatalError("OpenSSL HMAC has no SHA-256: \(OpenSSLErrorQueue.drain().text)")
        }
    }

    deinit {
        EVP_CIPHER_CTX_free(gcmContext)
        EVP_CIPHER_CTX_free(ecbContext)
        EVP_CIPHER_free(gcm)
        EVP_CIPHER_free(ecb)
        EVP_MAC_CTX_free(hmacContext)
        EVP_MAC_free(hmac)
    }

    /// The client's Initial keys for `destinationConnectionID` under `version`'s salt and labels.
    func clientKeys(version: QUICVersion, destinationConnectionID: [UInt8]) -> QUICInitialKeys? {
        guard let salt = version.initialSalt, let labels = version.keyLabels else { return nil }
        let initialSecret = hmacSHA256(key: salt, destinationConnectionID)
        let clientSecret = expandLabel(initialSecret, "client in", length: 32)
        return QUICInitialKeys(key: expandLabel(clientSecret, labels.key, length: 16),
                               iv: expandLabel(clientSecret, labels.iv, length: 12),
                               hp: expandLabel(clientSecret, labels.hp, length: 16))
    }

    /// HKDF-Expand-Label (RFC 8446 section 7.1) with an empty context, for outputs of at most one
    /// SHA-256 block: T(1) = HMAC(secret, HkdfLabel || 0x01), cut to `length`.
    func expandLabel(_ secret: [UInt8], _ label: String, length: Int) -> [UInt8] {
        let fullLabel = Array("tls13 \(label)".utf8)
        let info = [UInt8(length >> 8), UInt8(length & 0xFF), UInt8(fullLabel.count)] + fullLabel + [0x00, 0x01]
        return Array(hmacSHA256(key: secret, info).prefix(length))
    }

    func hmacSHA256(key: [UInt8], _ data: [UInt8]) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: 32)
        var written = 0
        let ok = key.withUnsafeBufferPointer { key in
            data.withUnsafeBufferPointer { data in
                EVP_MAC_init(hmacContext, key.baseAddress, key.count, nil) == 1
                    && EVP_MAC_update(hmacContext, data.baseAddress, data.count) == 1
                    && EVP_MAC_final(hmacContext, &output, &written, output.count) == 1
            }
        }
        precondition(ok && written == 32, "HMAC-SHA256 failed: \(OpenSSLErrorQueue.drain().text)")
        return output
    }

    /// The 5 bytes of header-protection mask for `sample` (16 bytes): AES-128-ECB of the sample
    /// (RFC 9001 section 5.4.3).
    func headerProtectionMask(hp: [UInt8], sample: UnsafeRawBufferPointer) -> (UInt8, UInt8, UInt8, UInt8, UInt8) {
        var block = [UInt8](repeating: 0, count: 32)
        var written: Int32 = 0
        let ok = hp.withUnsafeBufferPointer { hp in
            EVP_EncryptInit_ex2(ecbContext, ecb, hp.baseAddress, nil, nil) == 1
                && EVP_CIPHER_CTX_set_padding(ecbContext, 0) == 1
                && EVP_EncryptUpdate(ecbContext, &block, &written, sample.baseAddress, 16) == 1
        }
        precondition(ok && written == 16, "AES-128-ECB failed: \(OpenSSLErrorQueue.drain().text)")
        return (block[0], block[1], block[2], block[3], block[4])
    }

    /// Decrypts and authenticates an AES-128-GCM payload into `output` (at least `ciphertext.count`
    /// bytes); false when the tag does not match.
    func open(key: [UInt8], nonce: [UInt8], additionalData: UnsafeRawBufferPointer, ciphertext: UnsafeRawBufferPointer,
              tag: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> Bool {
        var written: Int32 = 0
        var tagCopy = Array(tag)
        let ok = key.withUnsafeBufferPointer { key in
            nonce.withUnsafeBufferPointer { nonce in
                EVP_DecryptInit_ex2(gcmContext, gcm, key.baseAddress, nonce.baseAddress, nil) == 1
                    && EVP_DecryptUpdate(gcmContext, nil, &written, additionalData.baseAddress, Int32(additionalData.count)) == 1
                    && EVP_DecryptUpdate(gcmContext, output.baseAddress, &written, ciphertext.baseAddress, Int32(ciphertext.count)) == 1
                    && EVP_CIPHER_CTX_ctrl(gcmContext, EVP_CTRL_AEAD_SET_TAG, 16, &tagCopy) == 1
            }
        }
        guard ok else {
            OpenSSLErrorQueue.clear()
            return false
        }
        var last: Int32 = 0
        guard EVP_DecryptFinal_ex(gcmContext, output.baseAddress.map { $0 + Int(written) }, &last) == 1 else {
            // A tag mismatch is the expected failure of a packet that is not ours to read.
            OpenSSLErrorQueue.clear()
            return false
        }
        return true
    }

    /// Encrypts an AES-128-GCM payload: the ciphertext followed by the 16-byte tag.
    func seal(key: [UInt8], nonce: [UInt8], additionalData: [UInt8], plaintext: [UInt8]) -> [UInt8] {
        guard let context = EVP_CIPHER_CTX_new() else { fatalError("EVP_CIPHER_CTX_new failed") }
        defer { EVP_CIPHER_CTX_free(context) }
        var output = [UInt8](repeating: 0, count: plaintext.count + 16)
        var written: Int32 = 0
        var last: Int32 = 0
        var tag = [UInt8](repeating: 0, count: 16)
        let ok = EVP_EncryptInit_ex2(context, gcm, key, nonce, nil) == 1
            && EVP_EncryptUpdate(context, nil, &written, additionalData, Int32(additionalData.count)) == 1
            && EVP_EncryptUpdate(context, &output, &written, plaintext, Int32(plaintext.count)) == 1
            // GCM writes nothing at the end; the buffer is there for the call's sake.
            && EVP_EncryptFinal_ex(context, &tag, &last) == 1 && last == 0
            && EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_AEAD_GET_TAG, 16, &tag) == 1
        precondition(ok, "AES-128-GCM encryption failed: \(OpenSSLErrorQueue.drain().text)")
        output.replaceSubrange(plaintext.count..., with: tag)
        return output
    }
}
