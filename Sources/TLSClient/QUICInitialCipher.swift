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
    /// Per version: an HMAC context keyed with its salt once (HKDF-Extract's key never changes),
    /// and the HkdfLabel bytes of its four labels.
    private var versions: [QUICVersion: VersionState] = [:]

    private struct VersionState {
        let saltContext: OpaquePointer
        let clientIn: [UInt8]
        let key: [UInt8]
        let iv: [UInt8]
        let hp: [UInt8]
    }

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
        // The cipher is set once; every packet then only sets its key (and IV), because passing the
        // cipher again makes OpenSSL build the context anew.
        guard Self.setDigest(hmacContext), EVP_EncryptInit_ex2(ecbContext, ecb, nil, nil, nil) == 1,
              EVP_DecryptInit_ex2(gcmContext, gcm, nil, nil, nil) == 1 else {
            fatalError("OpenSSL cannot set up HMAC-SHA256 or AES: \(OpenSSLErrorQueue.drain().text)")
        }
        for version in [QUICVersion.version1, .version2] {
            guard let salt = version.initialSalt, let labels = version.keyLabels,
                  let saltContext = EVP_MAC_CTX_new(hmac), Self.setDigest(saltContext),
                  EVP_MAC_init(saltContext, salt, salt.count, nil) == 1 else {
                fatalError("OpenSSL cannot key HMAC-SHA256: \(OpenSSLErrorQueue.drain().text)")
            }
            versions[version] = VersionState(saltContext: saltContext, clientIn: Self.hkdfLabel("client in", length: 32),
                                             key: Self.hkdfLabel(labels.key, length: 16),
                                             iv: Self.hkdfLabel(labels.iv, length: 12), hp: Self.hkdfLabel(labels.hp, length: 16))
        }
    }

    deinit {
        for state in versions.values { EVP_MAC_CTX_free(state.saltContext) }
        EVP_CIPHER_CTX_free(gcmContext)
        EVP_CIPHER_CTX_free(ecbContext)
        EVP_CIPHER_free(gcm)
        EVP_CIPHER_free(ecb)
        EVP_MAC_CTX_free(hmacContext)
        EVP_MAC_free(hmac)
    }

    private static func setDigest(_ context: OpaquePointer) -> Bool {
        // OSSL_PARAM keeps both pointers until the set call: a Swift string passed as the key is a
        // temporary freed when the construct call returns (AddressSanitizer found it read after that).
        let key = strdup("digest"), digest = strdup("SHA256")
        defer {
            free(key)
            free(digest)
        }
        var parameters = [OSSL_PARAM_construct_utf8_string(key, digest, 0), OSSL_PARAM_construct_end()]
        return EVP_MAC_CTX_set_params(context, &parameters) == 1
    }

    /// The HkdfLabel of HKDF-Expand-Label (RFC 8446 section 7.1) with an empty context, followed by
    /// HKDF-Expand's counter byte 0x01: every output here fits one SHA-256 block.
    static func hkdfLabel(_ label: String, length: Int) -> [UInt8] {
        let fullLabel = Array("tls13 \(label)".utf8)
        return [UInt8(length >> 8), UInt8(length & 0xFF), UInt8(fullLabel.count)] + fullLabel + [0x00, 0x01]
    }

    /// The client's Initial keys for `destinationConnectionID` under `version`'s salt and labels.
    func clientKeys(version: QUICVersion, destinationConnectionID: QUICConnectionID) -> QUICInitialKeys? {
        guard let state = versions[version] else { return nil }
        // HKDF-Extract: the salt's context restarts with its key (a NULL key reuses it).
        let initialSecret = mac(state.saltContext, key: nil, destinationConnectionID.bytes, length: 32)
        let clientSecret = mac(hmacContext, key: initialSecret, state.clientIn, length: 32)
        return QUICInitialKeys(key: mac(hmacContext, key: clientSecret, state.key, length: 16),
                               iv: mac(hmacContext, key: nil, state.iv, length: 12),
                               hp: mac(hmacContext, key: nil, state.hp, length: 16))
    }

    /// HMAC-SHA256 of `data` on `context`, keyed with `key`, or with the key it already has when nil;
    /// the first `length` bytes.
    private func mac(_ context: OpaquePointer, key: [UInt8]?, _ data: [UInt8], length: Int) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: 32)
        var written = 0
        let keyed: Bool
        if let key {
            keyed = EVP_MAC_init(context, key, key.count, nil) == 1
        } else {
            keyed = EVP_MAC_init(context, nil, 0, nil) == 1
        }
        let ok = keyed && EVP_MAC_update(context, data, data.count) == 1
            && EVP_MAC_final(context, &output, &written, output.count) == 1
        precondition(ok && written == 32, "HMAC-SHA256 failed: \(OpenSSLErrorQueue.drain().text)")
        if length < 32 { output.removeLast(32 - length) }
        return output
    }

    /// The header-protection mask for `sample` (16 bytes), the first 5 bytes of its AES-128-ECB
    /// encryption (RFC 9001 section 5.4.3): the first byte's and the packet number's.
    func headerProtectionMask(hp: [UInt8], sample: UnsafeRawBufferPointer) -> (first: UInt8, packetNumber: UInt32) {
        var block: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        var written: Int32 = 0
        // One whole block of encryption is written at once, whatever the padding setting.
        let ok = withUnsafeMutableBytes(of: &block) { block in
            EVP_EncryptInit_ex2(ecbContext, nil, hp, nil, nil) == 1
                && EVP_EncryptUpdate(ecbContext, block.baseAddress, &written, sample.baseAddress, 16) == 1
        }
        precondition(ok && written == 16, "AES-128-ECB failed: \(OpenSSLErrorQueue.drain().text)")
        return withUnsafeBytes(of: block) { bytes in
            (bytes[0], UInt32(bytes[1]) << 24 | UInt32(bytes[2]) << 16 | UInt32(bytes[3]) << 8 | UInt32(bytes[4]))
        }
    }

    /// Decrypts and authenticates an AES-128-GCM payload into `output` (at least `ciphertext.count`
    /// bytes); false when the tag does not match.
    func open(key: [UInt8], nonce: [UInt8], additionalData: UnsafeRawBufferPointer, ciphertext: UnsafeRawBufferPointer,
              tag: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> Bool {
        var written: Int32 = 0
        // OpenSSL takes the tag through a mutable pointer.
        var tagCopy: (UInt64, UInt64) = (0, 0)
        withUnsafeMutableBytes(of: &tagCopy) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: tag.prefix(16))) }
        let ok = key.withUnsafeBufferPointer { key in
            nonce.withUnsafeBufferPointer { nonce in
                EVP_DecryptInit_ex2(gcmContext, nil, key.baseAddress, nonce.baseAddress, nil) == 1
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
