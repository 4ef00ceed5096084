import AppleTrustStore
import ATSPolicy
import Foundation

/// A trust store in the layout of Apple's security_certificates project, read from a directory
/// (`--trust-store DIR`) or from the snapshot compiled into atsgate (`--trust-store apple`):
///   certificates/roots/*.cer                   the roots (DER, or PEM), named by their SHA-256
///   certificates/constraints.json              "system": root SHA-256 -> the policies it may anchor
///   certificate_transparency/log_list.json     Apple's CT log list (optional)
///   SOURCE                                     key=value lines: tag, commit (atsgate's snapshot)
///   distrust.json                              atsgate's own addition (optional): date-based distrusts
/// A root that constraints.json does not name may anchor any policy. Apple's project carries no data
/// for date-based distrusts (trustd has them in its code), so a directory may list them in
/// distrust.json, which then replaces atsgate's table (`AppleDistrust`) for that store:
///   {"distrusted": [{"name": "...", "certificate_sha256": "<hex>", "spki_sha256": "<hex>",
///                    "issued_after": "2024-11-15", "source": "https://support.apple.com/121668"}]}
struct AppleStoreLayout {
    struct Root {
        /// The path errors and messages name.
        var file: String
        var certificate: X509Certificate
        /// Upper-case hex SHA-256 of the certificate.
        var sha256: String
        /// The policy OIDs constraints.json allows it; nil when it is not constrained.
        var allowedPolicies: [String]?
    }

    static let rootsPath = "certificates/roots"
    static let constraintsPath = "certificates/constraints.json"
    static let logListPath = "certificate_transparency/log_list.json"
    static let distrustPath = "distrust.json"

    var roots: [Root]
    var logList: CTLogList?
    /// The SOURCE file's tag, else the project's TRUST_STORE_VERSION, else "unknown".
    var version: String
    /// distrust.json's entries; nil without the file (atsgate's table applies).
    var distrusted: [DistrustedCA]?

    /// Apple's SSL policy and its server variant (kSecPolicyAppleSSL, kSecPolicyAppleSSLServer): a root
    /// constrained to other policies does not anchor a TLS server chain.
    static let tlsServerPolicies: Set<String> = ["1.2.840.113635.100.1.3", "1.2.840.113635.100.1.3.1"]

    /// Where the files come from, and how errors name them.
    private struct Files {
        var read: (String) -> Result<Data, TrustStoreError>
        /// The names in a directory, nil when it does not exist.
        var list: (String) -> Result<[String], TrustStoreError>?
        var name: (String) -> String
    }

    /// Reads the store in `directory`.
    static func load(directory: String) throws(TrustStoreError) -> AppleStoreLayout {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) else {
            throw TrustStoreError(store: directory, problem: "no such directory")
        }
        guard isDirectory.boolValue else {
            throw TrustStoreError(store: directory, problem: "is not a directory (expected the layout of Apple's"
                + " security_certificates: certificates/roots/*.cer, certificates/constraints.json,"
                + " certificate_transparency/log_list.json)")
        }
        let top = URL(fileURLWithPath: directory)
        let path = { (relative: String) in top.appendingPathComponent(relative).path }
        let files = Files(
            read: { relative in
                switch PEMFile.contents(of: path(relative)) {
                case .success(let data): .success(data)
                case .failure(let problem): .failure(TrustStoreError(store: path(relative), problem: problem.text))
                }
            },
            list: { relative in
                var isDirectory: ObjCBool = false
                guard FileManager.default.fileExists(atPath: path(relative), isDirectory: &isDirectory),
                      isDirectory.boolValue else { return nil }
                do {
                    return .success(try FileManager.default.contentsOfDirectory(atPath: path(relative)))
                } catch {
                    return .failure(TrustStoreError(store: path(relative), problem: "cannot list it: \(error.localizedDescription)"))
                }
            },
            name: path)
        var layout = try AppleStoreLayout(files: files, top: directory)
        if layout.version == "unknown",
           let xcconfig = try? String(contentsOf: top.appendingPathComponent("config/security_certificates.xcconfig"), encoding: .utf8),
           let line = xcconfig.split(separator: "\n").first(where: { $0.hasPrefix("TRUST_STORE_VERSION") }),
           let value = line.split(separator: "=").last?.trimmingCharacters(in: .whitespaces), !value.isEmpty {
            layout.version = value
        }
        return layout
    }

    /// Reads the snapshot compiled into atsgate (`AppleTrustStoreSnapshot`).
    static func loadSnapshot() throws(TrustStoreError) -> AppleStoreLayout {
        let contents = snapshotFiles()
        let files = Files(
            read: { relative in
                contents[relative].map { .success($0) }
                    ?? .failure(TrustStoreError(store: "apple snapshot \(relative)", problem: "missing"))
            },
            list: { relative in
                let prefix = relative + "/"
                let names = contents.keys.filter { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) }
                return names.isEmpty ? nil : .success(names.filter { !$0.contains("/") })
            },
            name: { "apple snapshot \($0)" })
        return try AppleStoreLayout(files: files, top: "apple snapshot")
    }

    /// The snapshot's files by relative path.
    static func snapshotFiles() -> [String: Data] {
        var files: [String: Data] = [:]
        var path: String?
        var base64 = ""
        func finish() {
            if let path { files[path] = Data(base64Encoded: base64) }
            base64 = ""
        }
        for line in AppleTrustStoreSnapshot.files.split(separator: "\n") {
            if line.hasPrefix("--- ") {
                finish()
                path = String(line.dropFirst(4))
            } else {
                base64 += line
            }
        }
        finish()
        return files
    }

    private init(files: Files, top: String) throws(TrustStoreError) {
        guard let listed = files.list(Self.rootsPath) else {
            throw TrustStoreError(store: top, problem: "has no \(Self.rootsPath) directory (expected the layout of"
                + " Apple's security_certificates: certificates/roots/*.cer)")
        }
        let names = try listed.get().filter { !$0.hasPrefix(".") }.sorted()
        let constraints = try Self.constraints(files)
        var roots: [Root] = []
        for name in names {
            let relative = "\(Self.rootsPath)/\(name)"
            let data = try files.read(relative).get()
            let certificate: X509Certificate
            if let der = X509Certificate(der: [UInt8](data)) {
                certificate = der
            } else if let pem = PEMFile.certificates(in: data).first {
                certificate = pem
            } else {
                throw TrustStoreError(store: files.name(relative), problem: "is not a certificate (DER or PEM)")
            }
            let sha256 = Self.hex(certificate.sha256)
            roots.append(Root(file: files.name(relative), certificate: certificate, sha256: sha256,
                              allowedPolicies: constraints[sha256]))
        }
        guard !roots.isEmpty else {
            throw TrustStoreError(store: files.name(Self.rootsPath), problem: "holds no root certificate")
        }
        self.roots = roots
        if Self.exists(Self.logListPath, in: files) {
            let data = try files.read(Self.logListPath).get()
            do {
                logList = try CTLogList(data: data, file: files.name(Self.logListPath))
            } catch {
                throw TrustStoreError(store: error.file, key: error.key, problem: error.problem)
            }
        } else {
            logList = nil
        }
        distrusted = Self.exists(Self.distrustPath, in: files)
            ? try Self.distrusts(try files.read(Self.distrustPath).get(), file: files.name(Self.distrustPath)) : nil
        var source: [String: String] = [:]
        if case .success(let data) = files.read("SOURCE") {
            for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
                let parts = line.split(separator: "=", maxSplits: 1)
                if parts.count == 2 { source[String(parts[0])] = String(parts[1]) }
            }
        }
        version = source["tag"] ?? source["trust_store_version"] ?? "unknown"
    }

    /// constraints.json's "system" section: root SHA-256 (upper hex) -> allowed policy OIDs. No file,
    /// or no "system" section, constrains nothing.
    private static func constraints(_ files: Files) throws(TrustStoreError) -> [String: [String]] {
        guard exists(constraintsPath, in: files) else { return [:] }
        let data = try files.read(constraintsPath).get()
        let file = files.name(constraintsPath)
        guard let object = try? JSONSerialization.jsonObject(with: data), let top = object as? [String: Any] else {
            throw TrustStoreError(store: file, problem: "is not a JSON object")
        }
        guard let system = top["system"] else { return [:] }
        guard let table = system as? [String: Any] else {
            throw TrustStoreError(store: file, key: "system", problem: "expected an object of root SHA-256 -> policy OIDs")
        }
        var result: [String: [String]] = [:]
        for (hash, value) in table {
            guard hash.count == 64, hash.allSatisfy(\.isHexDigit) else {
                throw TrustStoreError(store: file, key: "system.\(hash)", problem: "expected a root's SHA-256 in hex")
            }
            guard let list = value as? [Any] else {
                throw TrustStoreError(store: file, key: "system.\(hash)", problem: "expected an array of policy OIDs")
            }
            var oids: [String] = []
            for (index, element) in list.enumerated() {
                guard let oid = element as? String, !oid.isEmpty,
                      oid.allSatisfy({ $0 == "." || $0.isASCII && $0.isNumber }) else {
                    throw TrustStoreError(store: file, key: "system.\(hash)[\(index)]", problem: "expected a policy OID string")
                }
                oids.append(oid)
            }
            result[hash.uppercased()] = oids
        }
        return result
    }

    /// distrust.json's entries: each a CA by its certificate's SHA-256 (and its key's, optional), the day
    /// after which its certificates are distrusted, and where that was announced.
    private static func distrusts(_ data: Data, file: String) throws(TrustStoreError) -> [DistrustedCA] {
        guard let object = try? JSONSerialization.jsonObject(with: data), let top = object as? [String: Any],
              let list = top["distrusted"] as? [Any] else {
            throw TrustStoreError(store: file, key: "distrusted", problem: "expected an object with a \"distrusted\" array")
        }
        let day = DateFormatter()
        day.locale = Locale(identifier: "en_US_POSIX")
        day.timeZone = TimeZone(identifier: "UTC")
        day.dateFormat = "yyyy-MM-dd"
        var result: [DistrustedCA] = []
        for (index, element) in list.enumerated() {
            let key = "distrusted[\(index)]"
            guard let entry = element as? [String: Any] else {
                throw TrustStoreError(store: file, key: key, problem: "expected an object")
            }
            func hash(_ name: String, required: Bool) throws(TrustStoreError) -> String {
                guard let value = entry[name] else {
                    if required { throw TrustStoreError(store: file, key: "\(key).\(name)", problem: "missing") }
                    return ""
                }
                guard let text = value as? String, text.count == 64, text.allSatisfy(\.isHexDigit) else {
                    throw TrustStoreError(store: file, key: "\(key).\(name)", problem: "expected a SHA-256 in hex (64 digits)")
                }
                return text.uppercased()
            }
            let certificate = try hash("certificate_sha256", required: true)
            let spki = try hash("spki_sha256", required: false)
            guard let after = entry["issued_after"] as? String, let date = day.date(from: after) else {
                throw TrustStoreError(store: file, key: "\(key).issued_after", problem: "expected a day, YYYY-MM-DD")
            }
            let name = entry["name"] as? String ?? certificate
            let source = entry["source"] as? String ?? file
            // "Issued after" the day: from the next midnight (UTC) on, as AppleDistrust reads Apple's dates.
            result.append(DistrustedCA(certificateSHA256: certificate, spkiSHA256: spki,
                                       distrust: .init(name: name, from: date.addingTimeInterval(86_400), source: source)))
        }
        return result
    }

    /// Whether the store has the file at `relative` (present but unreadable is an error on reading).
    private static func exists(_ relative: String, in files: Files) -> Bool {
        let parts = relative.split(separator: "/")
        guard case .success(let names)? = files.list(parts.dropLast().joined(separator: "/")) else { return false }
        return names.contains(String(parts.last ?? ""))
    }

    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789ABCDEF".utf8)
        var text = [UInt8]()
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
