import ATSPolicy
import COpenSSL
import Foundation

/// The roots a certificate chain may lead to (R15): the system's default store plus the PEM CA files
/// an operator configured ("installed by the user or a system administrator").
///
/// Owns an `X509_STORE*` and frees it in deinit. Built once, then only read: OpenSSL locks the store
/// internally for verification from several threads.
public final class TrustStore: @unchecked Sendable {
    let pointer: OpaquePointer
    /// The extra CA files, as given.
    public let caFiles: [String]
    /// How many certificates the CA files held.
    public let extraCertificateCount: Int
    /// DER of every certificate the CA files held: a chain that ends at one of them ends at an
    /// operator's root, not the system store's (R15a's 398-day rule and R16 apply to the latter only).
    private let operatorCertificates: Set<[UInt8]>

    /// The system store, plus every certificate of each PEM file in `caFiles`.
    /// Throws when a file cannot be read or holds no certificate, naming the file.
    ///
    /// `systemRoots` replaces the system store (OpenSSL's default paths, which `SSL_CERT_FILE` and
    /// `SSL_CERT_DIR` also move) with PEM files: tests use it for a "publicly trusted" test root.
    public init(caFiles: [String] = [], systemRoots: [String]? = nil) throws(TrustStoreError) {
        guard let store = X509_STORE_new() else { throw TrustStoreError(file: nil, problem: "out of memory") }
        pointer = store
        self.caFiles = caFiles
        OpenSSLErrorQueue.clear()
        if let systemRoots {
            for file in systemRoots { _ = try Self.addCertificates(from: file, to: store) }
        } else {
            // A missing system bundle is not an error: the CA files may be all the operator trusts.
            X509_STORE_set_default_paths(store)
        }
        OpenSSLErrorQueue.clear()
        var added: [[UInt8]] = []
        for file in caFiles {
            added += try Self.addCertificates(from: file, to: store)
        }
        extraCertificateCount = added.count
        operatorCertificates = Set(added)
    }

    /// Where a verified chain (leaf first) ends: an operator's CA file or the system store.
    func anchor(of chain: [X509Certificate]) -> TrustAnchor {
        guard let root = chain.last else { return .untrusted("no chain") }
        return operatorCertificates.contains(root.der) ? .operator : .system
    }

    deinit { X509_STORE_free(pointer) }

    /// Adds each certificate of a PEM file and returns their DER.
    private static func addCertificates(from file: String, to store: OpaquePointer) throws(TrustStoreError) -> [[UInt8]] {
        let data: Data
        switch PEMFile.contents(of: file) {
        case .success(let contents): data = contents
        case .failure(let problem): throw TrustStoreError(file: file, problem: problem.text)
        }
        let certificates = PEMFile.certificates(in: data)
        guard !certificates.isEmpty else {
            throw TrustStoreError(file: file, problem: "holds no PEM certificate (expected -----BEGIN CERTIFICATE-----)")
        }
        for certificate in certificates {
            // A certificate listed twice (in the system store and the file) is fine.
            X509_STORE_add_cert(store, certificate.pointer)
            OpenSSLErrorQueue.clear()
        }
        return certificates.map(\.der)
    }
}

/// A CA file that cannot serve as a trust anchor.
public struct TrustStoreError: Error, CustomStringConvertible, Sendable {
    /// The file at fault, nil when the store itself could not be made.
    public var file: String?
    public var problem: String

    public var description: String {
        guard let file else { return "trust store: \(problem)" }
        return "CA file \(file): \(problem)"
    }
}
