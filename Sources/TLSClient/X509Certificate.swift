import ATSPolicy
import COpenSSL
import Foundation
import Glibc

/// One X.509 certificate: owns an `X509*` reference and frees it in deinit.
///
/// Immutable after creation and only ever read, which OpenSSL allows from any thread.
final class X509Certificate: @unchecked Sendable {
    let pointer: OpaquePointer

    /// Takes over one reference the caller already holds.
    init(taking pointer: OpaquePointer) {
        self.pointer = pointer
    }

    /// Adds a reference to a certificate someone else owns.
    convenience init(retaining pointer: OpaquePointer) {
        X509_up_ref(pointer)
        self.init(taking: pointer)
    }

    /// Parses DER; nil when the bytes are not one certificate.
    convenience init?(der: [UInt8]) {
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            guard let parsed = d2i_X509(nil, &cursor, buffer.count) else { return nil }
            // Trailing bytes mean this was not exactly one certificate.
            guard cursor == buffer.baseAddress.map({ $0 + buffer.count }) else {
                X509_free(parsed)
                return nil
            }
            return parsed
        }
        guard let parsed else {
            OpenSSLErrorQueue.clear()
            return nil
        }
        self.init(taking: parsed)
    }

    deinit { X509_free(pointer) }

    var der: [UInt8] {
        let length = i2d_X509(pointer, nil)
        guard length > 0 else { return [] }
        return [UInt8](unsafeUninitializedCapacity: Int(length)) { buffer, count in
            var cursor = buffer.baseAddress
            count = Int(i2d_X509(pointer, &cursor))
        }
    }

    var subject: String { Self.text(of: X509_get_subject_name(pointer)) }
    var issuer: String { Self.text(of: X509_get_issuer_name(pointer)) }

    /// Subject and issuer are the same name (a root, or a self-signed leaf).
    var isSelfIssued: Bool { X509_NAME_cmp(X509_get_subject_name(pointer), X509_get_issuer_name(pointer)) == 0 }

    var notBefore: Date? { Self.date(X509_get0_notBefore(pointer)) }
    var notAfter: Date? { Self.date(X509_get0_notAfter(pointer)) }

    /// The public key as R15 judges it.
    var publicKey: PublicKeyFacts {
        guard let key = X509_get0_pubkey(pointer) else { return PublicKeyFacts(kind: .other("none"), bits: 0) }
        let bits = Int(EVP_PKEY_get_bits(key))
        switch EVP_PKEY_get_base_id(key) {
        case EVP_PKEY_RSA, EVP_PKEY_RSA_PSS:
            return PublicKeyFacts(kind: .rsa, bits: bits)
        case EVP_PKEY_EC:
            var name = [CChar](repeating: 0, count: 80)
            var length = 0
            guard EVP_PKEY_get_group_name(key, &name, name.count, &length) == 1 else {
                return PublicKeyFacts(kind: .ec(curve: "unknown"), bits: bits)
            }
            let curve = String(nulTerminated: name)
            // Prefer the NIST spelling (P-256) that Apple's documentation uses over prime256v1.
            let nist = EC_curve_nid2nist(OBJ_sn2nid(curve)).map { String(cString: $0) }
            return PublicKeyFacts(kind: .ec(curve: nist ?? curve), bits: bits)
        case let id:
            let name = OBJ_nid2sn(id).map { String(cString: $0) } ?? "type \(id)"
            return PublicKeyFacts(kind: .other(name), bits: bits)
        }
    }

    /// OpenSSL's long name of the signature algorithm, e.g. "sha256WithRSAEncryption".
    var signatureAlgorithm: String {
        let nid = X509_get_signature_nid(pointer)
        return OBJ_nid2ln(nid).map { String(cString: $0) } ?? "unknown"
    }

    /// The digest the issuer signed with (NID), or NID_undef for schemes without a separate one (Ed25519).
    var signatureDigest: Int32 {
        var digest: Int32 = NID_undef
        var keyType: Int32 = NID_undef
        guard X509_get_signature_info(pointer, &digest, &keyType, nil, nil) == 1 else {
            OpenSSLErrorQueue.clear()
            return NID_undef
        }
        return digest
    }

    /// The digest as R15 judges it.
    var signatureHash: SignatureHash {
        switch signatureDigest {
        case NID_sha256: .sha256
        case NID_sha384: .sha384
        case NID_sha512: .sha512
        case NID_sha3_256: .sha3_256
        case NID_sha3_384: .sha3_384
        case NID_sha3_512: .sha3_512
        case NID_sha224: .sha224
        case NID_sha1: .sha1
        case NID_md5: .md5
        default: .none
        }
    }

    /// The extendedKeyUsage OIDs in dotted form; nil when the extension is absent (R15a).
    var extendedKeyUsages: [String]? {
        var text = [CChar](repeating: 0, count: 2048)
        let count = atsgate_extended_key_usages(pointer, &text, Int32(text.count))
        OpenSSLErrorQueue.clear()
        guard count >= 0 else { return nil }
        return String(nulTerminated: text).split(separator: " ").map(String.init)
    }

    /// The log ids of the SCTs embedded in the certificate (R16).
    var embeddedSCTLogIDs: [[UInt8]] {
        guard let list = atsgate_embedded_scts(pointer) else {
            OpenSSLErrorQueue.clear()
            return []
        }
        defer { atsgate_sct_list_free(list) }
        return (0..<atsgate_sct_count(list)).compactMap { atsgate_sct_value(list, $0).flatMap(SCTReader.logID) }
    }

    /// DNS names and IP addresses of the subjectAltName extension, in certificate order.
    var subjectAlternativeNames: [String] {
        guard let names = atsgate_subject_alt_names(pointer) else {
            OpenSSLErrorQueue.clear()
            return []
        }
        defer { atsgate_general_names_free(names) }
        var result: [String] = []
        for index in 0..<atsgate_general_names_count(names) {
            guard let name = atsgate_general_names_value(names, index) else { continue }
            switch name.pointee.type {
            case GEN_DNS:
                if let text = Self.string(name.pointee.d.dNSName) { result.append("DNS:\(text)") }
            case GEN_IPADD:
                if let text = Self.ipText(name.pointee.d.iPAddress) { result.append("IP:\(text)") }
            default:
                continue
            }
        }
        return result
    }

    /// SHA-256 of the DER SubjectPublicKeyInfo: the identity NSPinnedDomains names (R17).
    var spkiSHA256: [UInt8] {
        let length = i2d_X509_PUBKEY(X509_get_X509_PUBKEY(pointer), nil)
        guard length > 0 else { return [] }
        var spki = [UInt8](repeating: 0, count: Int(length))
        spki.withUnsafeMutableBufferPointer { buffer in
            var cursor = buffer.baseAddress
            _ = i2d_X509_PUBKEY(X509_get_X509_PUBKEY(pointer), &cursor)
        }
        return Self.sha256(spki)
    }

    /// SHA-256 of the DER certificate: how Apple's trust store names and constrains its roots.
    var sha256: [UInt8] { Self.sha256(der) }

    static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var digestLength: UInt32 = 0
        guard EVP_Digest(bytes, bytes.count, &digest, &digestLength, EVP_sha256(), nil) == 1 else { return [] }
        return Array(digest[..<Int(digestLength)])
    }

    /// The caIssuers URIs of the Authority Information Access extension, in certificate order: where
    /// the device fetches a missing issuer (R15).
    var caIssuerURLs: [String] {
        var text = [CChar](repeating: 0, count: 4096)
        let count = atsgate_ca_issuers(pointer, &text, Int32(text.count))
        OpenSSLErrorQueue.clear()
        guard count > 0 else { return [] }
        return String(nulTerminated: text).split(separator: "\n").map(String.init)
    }

    /// The certificates of a caIssuers answer: one DER certificate, or a DER PKCS#7 "certs-only"
    /// bundle (RFC 5280 section 4.2.2.1 allows both); nil when the bytes are neither.
    static func certificates(inIssuerAnswer bytes: [UInt8]) -> [X509Certificate]? {
        if let one = X509Certificate(der: bytes) { return [one] }
        let bundle: UnsafeMutablePointer<PKCS7>? = bytes.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_PKCS7(nil, &cursor, buffer.count)
        }
        defer {
            if let bundle { PKCS7_free(bundle) }
            OpenSSLErrorQueue.clear()
        }
        guard let bundle, let stack = atsgate_pkcs7_certificates(bundle) else { return nil }
        let found = (0..<atsgate_sk_X509_num(stack)).compactMap { index in
            atsgate_sk_X509_value(stack, index).map { X509Certificate(retaining: $0) }
        }
        return found.isEmpty ? nil : found
    }

    /// Whether the certificate names `host` (a DNS name, or an IPv4/IPv6 literal without brackets).
    ///
    /// Only subjectAltName counts: Apple stopped trusting names in the CommonName in iOS 13.
    func matches(host: String) -> Bool {
        let result: Int32
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        if let address = IPAddress.parseStrict(bare[...]) {
            result = X509_check_ip_asc(pointer, address.description, 0)
        } else {
            result = X509_check_host(pointer, host, host.utf8.count,
                                     UInt32(X509_CHECK_FLAG_NEVER_CHECK_SUBJECT | X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS),
                                     nil)
        }
        OpenSSLErrorQueue.clear()
        return result == 1
    }

    /// The names the certificate is for, for messages: its SANs, else its subject.
    var nameSummary: String {
        let names = subjectAlternativeNames.map { $0.split(separator: ":", maxSplits: 1).last.map(String.init) ?? $0 }
        if names.isEmpty { return subject.isEmpty ? "(no name)" : subject }
        return names.prefix(4).joined(separator: ", ") + (names.count > 4 ? ", ..." : "")
    }

    private static func text(of name: OpaquePointer?) -> String {
        guard let name, let bio = MemoryBIO() else { return "" }
        guard X509_NAME_print_ex(bio.pointer, name, 0, atsgate_name_print_flags()) >= 0 else { return "" }
        return bio.contents
    }

    private static func date(_ time: UnsafePointer<ASN1_TIME>?) -> Date? {
        guard let time else { return nil }
        var parts = tm()
        guard ASN1_TIME_to_tm(time, &parts) == 1 else { return nil }
        return Date(timeIntervalSince1970: TimeInterval(timegm(&parts)))
    }

    private static func string(_ value: UnsafeMutablePointer<ASN1_STRING>?) -> String? {
        guard let value, let data = ASN1_STRING_get0_data(value) else { return nil }
        let bytes = UnsafeBufferPointer(start: data, count: Int(ASN1_STRING_length(value)))
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func ipText(_ value: UnsafeMutablePointer<ASN1_STRING>?) -> String? {
        guard let value, let data = ASN1_STRING_get0_data(value) else { return nil }
        let bytes = UnsafeBufferPointer(start: data, count: Int(ASN1_STRING_length(value)))
        switch bytes.count {
        case 4: return IPAddress.v4(bytes.reduce(0) { $0 << 8 | UInt32($1) }).description
        case 16: return IPAddress.v6(bytes.reduce(0) { $0 << 8 | UInt128($1) }).description
        default: return nil
        }
    }
}
