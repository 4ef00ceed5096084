import COpenSSL
import Foundation

/// A certificate file to be handed on rather than used here (a device profile's root payloads): every
/// certificate it holds, in DER, with the facts a message about it needs.
///
/// Reads PEM (any number of certificates) or one DER certificate, as `.cer` files often are. Each
/// certificate is parsed by OpenSSL, so bytes that merely look like one are refused.
package enum CertificateFile {
    /// One certificate of the file.
    package struct Entry: Sendable {
        package var der: [UInt8]
        /// RFC 2253, e.g. `CN=atsgate lab CA,O=Example`.
        package var subject: String
        package var issuer: String
        /// The subject's common name, if it has one.
        package var commonName: String?
        /// Subject and issuer are the same name: a root (or a self-signed leaf).
        package var isSelfIssued: Bool
        /// basicConstraints says CA:TRUE.
        package var isCA: Bool
        package var notBefore: Date?
        package var notAfter: Date?

        /// The common name, else the whole subject: what a person recognises the certificate by.
        package var name: String { commonName ?? (subject.isEmpty ? "(no subject)" : subject) }
    }

    /// The certificates of `path` in file order, or what is wrong with the file (the caller names it).
    package static func read(_ path: String) -> Result<[Entry], CertificateFileError> {
        let data: Data
        switch PEMFile.contents(of: path) {
        case .success(let contents): data = contents
        case .failure(let problem): return .failure(CertificateFileError(problem: problem.text))
        }
        return entries(in: data)
    }

    /// The certificates of a file's bytes: PEM, else one DER certificate.
    package static func entries(in data: Data) -> Result<[Entry], CertificateFileError> {
        guard !data.isEmpty else { return .failure(CertificateFileError(problem: "is empty")) }
        let text = String(decoding: data, as: UTF8.self)
        if text.contains("-----BEGIN ") {
            // PEM_read_bio_X509 stops quietly at a block it cannot parse: count the blocks, so that a
            // damaged second certificate is an error instead of a certificate silently left out.
            let blocks = text.components(separatedBy: "-----BEGIN CERTIFICATE-----").count - 1
                + text.components(separatedBy: "-----BEGIN X509 CERTIFICATE-----").count - 1
            let certificates = PEMFile.certificates(in: data)
            guard blocks > 0 else {
                let hint = text.contains("PRIVATE KEY-----") ? " (it holds a private key: give the certificate)" : ""
                return .failure(CertificateFileError(problem: "holds no certificate\(hint): expected PEM "
                    + "-----BEGIN CERTIFICATE----- or one DER certificate"))
            }
            guard certificates.count == blocks else {
                return .failure(CertificateFileError(problem: "certificate \(certificates.count + 1) of \(blocks) "
                    + "is not a valid X.509 certificate"))
            }
            return .success(certificates.map(entry))
        }
        guard let certificate = X509Certificate(der: [UInt8](data)) else {
            return .failure(CertificateFileError(problem: "is not a certificate: expected PEM -----BEGIN CERTIFICATE----- "
                + "or one DER certificate"))
        }
        return .success([entry(certificate)])
    }

    private static func entry(_ certificate: X509Certificate) -> Entry {
        let isCA = X509_check_ca(certificate.pointer) != 0
        OpenSSLErrorQueue.clear()
        return Entry(der: certificate.der, subject: certificate.subject, issuer: certificate.issuer,
                     commonName: commonName(of: certificate), isSelfIssued: certificate.isSelfIssued, isCA: isCA,
                     notBefore: certificate.notBefore, notAfter: certificate.notAfter)
    }

    private static func commonName(of certificate: X509Certificate) -> String? {
        guard let name = X509_get_subject_name(certificate.pointer) else { return nil }
        let index = X509_NAME_get_index_by_NID(name, NID_commonName, -1)
        guard index >= 0, let entry = X509_NAME_get_entry(name, index),
              let value = X509_NAME_ENTRY_get_data(entry) else { return nil }
        var utf8: UnsafeMutablePointer<UInt8>?
        let length = ASN1_STRING_to_UTF8(&utf8, value)
        guard length >= 0, let utf8 else {
            OpenSSLErrorQueue.clear()
            return nil
        }
        defer { CRYPTO_free(utf8, #fileID, Int32(#line)) }
        return String(decoding: UnsafeBufferPointer(start: utf8, count: Int(length)), as: UTF8.self)
    }
}

/// Why a certificate file cannot be used; the caller names the file.
package struct CertificateFileError: Error, CustomStringConvertible, Sendable {
    package var problem: String
    package var description: String { problem }
}
