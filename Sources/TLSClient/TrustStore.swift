import ATSPolicy
import COpenSSL
import Foundation

/// Which roots a chain may lead to (`--trust-store`, R15).
public enum TrustStoreKind: Sendable, Equatable, CustomStringConvertible {
    /// The snapshot of Apple's trust store compiled into atsgate (its roots, their policy constraints,
    /// its CT log list).
    case apple
    /// The host's CA bundle: OpenSSL's default paths, which `SSL_CERT_FILE` and `SSL_CERT_DIR` move.
    case system
    /// A directory in the layout of Apple's security_certificates project (another OS release's store).
    case directory(String)

    /// `apple`, `system`, else the path of a directory.
    public init(_ value: String) {
        switch value {
        case "apple": self = .apple
        case "system": self = .system
        default: self = .directory(value)
        }
    }

    public var description: String {
        switch self {
        case .apple: "apple"
        case .system: "system"
        case .directory(let path): path
        }
    }
}

/// The roots a certificate chain may lead to (R15): a trust store (Apple's snapshot, a directory in its
/// layout, or the host's bundle) plus the PEM CA files an operator configured, which count as roots
/// "installed by the user or a system administrator" (no CT, no 398-day rule). Apple's roots that its
/// constraints allow only for other policies never anchor a TLS chain.
///
/// Owns an `X509_STORE*` and frees it in deinit. Built once, then only read: OpenSSL locks the store
/// internally for verification from several threads.
public final class TrustStore: @unchecked Sendable {
    let pointer: OpaquePointer
    public let kind: TrustStoreKind
    /// "apple", "system", or the directory: `atsgate_trust_store_info{name}`.
    public let name: String
    /// The snapshot's or directory's release tag (SOURCE), else its TRUST_STORE_VERSION, else
    /// "unknown"; "host" for the system bundle: `atsgate_trust_store_info{version}`.
    public let version: String
    /// The extra CA files, as given.
    public let caFiles: [String]
    /// How many certificates the CA files held.
    public let extraCertificateCount: Int
    /// Roots of the store that may anchor a TLS server chain (0 for the system bundle, which OpenSSL
    /// reads on demand).
    public let rootCount: Int
    /// Roots of the store held for other policies only (constraints.json).
    public let constrainedRootCount: Int
    /// The store's CT log list (Apple's snapshot; a directory with one); nil for the system bundle.
    public let logList: CTLogList?

    /// DER of every certificate the CA files held.
    private let operatorCertificates: Set<[UInt8]>
    /// SHA-256 of every root of the store that anchors TLS.
    private let storeRoots: Set<[UInt8]>
    /// Roots held for other policies only, by SHA-256, with the policies they allow.
    private let constrainedRoots: [(certificate: X509Certificate, policies: [String], file: String)]
    /// Date-based distrusts by certificate SHA-256 and by SPKI SHA-256.
    private let distrusts: [[UInt8]: ChainCertificate.Distrust]

    /// R16 as the store implies it: on, verified against the store's log list, when it has one.
    public var defaultTransparency: TransparencyCheck? { logList.map { TransparencyCheck(logList: $0) } }

    /// The system store, plus every certificate of each PEM file in `caFiles`.
    /// Throws when a file cannot be read or holds no certificate, naming the file.
    ///
    /// `systemRoots` replaces the system store (OpenSSL's default paths, which `SSL_CERT_FILE` and
    /// `SSL_CERT_DIR` also move) with PEM files: tests use it for a "publicly trusted" test root.
    public convenience init(caFiles: [String] = [], systemRoots: [String]? = nil) throws(TrustStoreError) {
        try self.init(.system, caFiles: caFiles, systemRoots: systemRoots)
    }

    /// The store of `kind`, plus every certificate of each PEM file in `caFiles` as a user-installed
    /// root. `distrusted` are the date-based distrusts to apply to chains of this store (Apple's, by
    /// default; a directory's distrust.json replaces them). Throws naming the file, and the key within
    /// it, that cannot be used.
    public convenience init(_ kind: TrustStoreKind, caFiles: [String] = [],
                            distrusted: [DistrustedCA] = AppleDistrust.table) throws(TrustStoreError) {
        try self.init(kind, caFiles: caFiles, systemRoots: nil, distrusted: distrusted)
    }

    private init(_ kind: TrustStoreKind, caFiles: [String], systemRoots: [String]?,
                 distrusted: [DistrustedCA] = AppleDistrust.table) throws(TrustStoreError) {
        let layout: AppleStoreLayout?
        switch kind {
        case .apple: layout = try AppleStoreLayout.loadSnapshot()
        case .directory(let path): layout = try AppleStoreLayout.load(directory: path)
        case .system: layout = nil
        }
        guard let store = X509_STORE_new() else { throw TrustStoreError(store: kind.description, problem: "out of memory") }
        pointer = store
        self.kind = kind
        self.caFiles = caFiles
        OpenSSLErrorQueue.clear()
        var anchoring = Set<[UInt8]>()
        var constrained: [(X509Certificate, [String], String)] = []
        if let layout {
            for root in layout.roots {
                if let policies = root.allowedPolicies, AppleStoreLayout.tlsServerPolicies.isDisjoint(with: policies) {
                    constrained.append((root.certificate, policies, root.file))
                    continue
                }
                X509_STORE_add_cert(store, root.certificate.pointer)
                anchoring.insert(root.certificate.sha256)
            }
            name = kind.description
            version = layout.version
            logList = layout.logList
        } else {
            if let systemRoots {
                for file in systemRoots { anchoring.formUnion(try Self.addCertificates(from: file, to: store).map(X509Certificate.sha256)) }
            } else {
                // A missing system bundle is not an error: the CA files may be all the operator trusts.
                X509_STORE_set_default_paths(store)
            }
            name = "system"
            version = "host"
            logList = nil
        }
        OpenSSLErrorQueue.clear()
        var added: [[UInt8]] = []
        for file in caFiles {
            added += try Self.addCertificates(from: file, to: store)
        }
        extraCertificateCount = added.count
        operatorCertificates = Set(added)
        storeRoots = anchoring
        rootCount = layout == nil ? 0 : anchoring.count
        constrainedRoots = constrained
        constrainedRootCount = constrained.count
        var distrusts: [[UInt8]: ChainCertificate.Distrust] = [:]
        for entry in layout?.distrusted ?? distrusted {
            for hex in [entry.certificateSHA256, entry.spkiSHA256] where !hex.isEmpty {
                if let bytes = Self.bytes(hex: hex) { distrusts[bytes] = entry.distrust }
            }
        }
        self.distrusts = distrusts
    }

    deinit { X509_STORE_free(pointer) }

    /// Where a verified chain (leaf first) ends: the store, or a CA file the operator gave. A root in
    /// both is the store's.
    func anchor(of chain: [X509Certificate]) -> TrustAnchor {
        guard let root = chain.last else { return .untrusted("no chain") }
        if storeRoots.contains(root.sha256) { return .system }
        return operatorCertificates.contains(root.der) ? .operator : .system
    }

    /// The store's date-based distrust of `certificate` (by its hash or its key's), if any.
    func distrust(of certificate: X509Certificate) -> ChainCertificate.Distrust? {
        guard !distrusts.isEmpty else { return nil }
        return distrusts[certificate.sha256] ?? distrusts[certificate.spkiSHA256]
    }

    /// Why `certificate` cannot chain to the root that issued it, when that root is one of Apple's held
    /// for other policies only: a sentence for the untrusted finding.
    func constrainedIssuer(of certificate: X509Certificate) -> String? {
        for root in constrainedRoots {
            let issued = root.certificate.sha256 == certificate.sha256
                || X509_check_issued(root.certificate.pointer, certificate.pointer) == X509_V_OK
            OpenSSLErrorQueue.clear()
            guard issued else { continue }
            return "the chain ends at \(root.certificate.subject), which the \(name) trust store (\(version)) holds"
                + " for other uses only: its constraints (\(AppleStoreLayout.constraintsPath)) allow"
                + " \(root.policies.joined(separator: ", ")), not TLS server authentication"
                + " (1.2.840.113635.100.1.3)"
        }
        return nil
    }

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

    private static func bytes(hex: String) -> [UInt8]? {
        let digits = Array(hex.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let byte = UInt8(String(decoding: digits[index...index + 1], as: UTF8.self), radix: 16) else { return nil }
            bytes.append(byte)
        }
        return bytes
    }
}

/// A trust store or CA file that cannot be used, naming the file and, when one is at fault, the key.
public struct TrustStoreError: Error, CustomStringConvertible, Sendable {
    /// The file (or store directory) at fault; nil when the store itself could not be made.
    public var file: String?
    /// The JSON path of the value at fault within `file`, e.g. `system.0CB9...[2]`.
    public var key: String?
    public var problem: String
    /// Whether `file` is an operator's CA file (`--ca-file`) rather than part of a trust store.
    public var isCAFile: Bool

    /// A CA file at fault.
    public init(file: String?, problem: String) {
        self.file = file
        key = nil
        self.problem = problem
        isCAFile = true
    }

    /// A trust store's directory or file at fault.
    public init(store file: String, key: String? = nil, problem: String) {
        self.file = file
        self.key = key
        self.problem = problem
        isCAFile = false
    }

    public var description: String {
        guard let file else { return "trust store: \(problem)" }
        let place = (isCAFile ? "CA file " : "trust store ") + file
        return "\(place): " + (key.map { "\($0): " } ?? "") + problem
    }
}
