import ATSPolicy
import Foundation
import Testing
@testable import TLSClient

/// The snapshot of Apple's trust store that atsgate ships (data/apple-trust-store, compiled into
/// TLSClient by scripts/refresh-apple-trust-store), read independently of the loader for comparison.
@Suite struct AppleTrustStoreTests {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("data/apple-trust-store")

    static func source() throws -> [String: String] {
        let text = try String(contentsOf: folder.appendingPathComponent("SOURCE"), encoding: .utf8)
        var values: [String: String] = [:]
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: "=", maxSplits: 1)
            if parts.count == 2 { values[String(parts[0])] = String(parts[1]) }
        }
        return values
    }

    @Test func theCompiledSnapshotIsTheFolderByteForByte() throws {
        let compiled = AppleStoreLayout.snapshotFiles()
        let enumerator = try #require(FileManager.default.enumerator(atPath: Self.folder.path))
        var onDisk: [String: Data] = [:]
        while let relative = enumerator.nextObject() as? String {
            var isDirectory: ObjCBool = false
            let path = Self.folder.appendingPathComponent(relative).path
            if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue {
                onDisk[relative] = try Data(contentsOf: URL(fileURLWithPath: path))
            }
        }
        #expect(Set(compiled.keys) == Set(onDisk.keys), "run scripts/refresh-apple-trust-store after changing the folder")
        for (path, data) in onDisk { #expect(compiled[path] == data, "\(path) differs from the compiled copy") }
    }

    @Test func theSnapshotLoadsWithItsSourcesRootsConstraintsAndLogs() throws {
        let store = try TrustStore(.apple)
        let source = try Self.source()
        #expect(store.name == "apple")
        #expect(store.version == source["tag"])
        #expect(source["tag"] == "security_certificates-55349.0.11")
        let roots = try FileManager.default.contentsOfDirectory(atPath: Self.folder.appendingPathComponent("certificates/roots").path)
            .filter { $0.hasSuffix(".cer") }
        #expect(roots.count == 156)
        #expect(store.rootCount + store.constrainedRootCount == roots.count)
        #expect(Int(source["roots"] ?? "") == roots.count)
        // Every root constraints.json limits to policies other than Apple's SSL ones anchors no TLS chain.
        let constraints = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: Self.folder
            .appendingPathComponent("certificates/constraints.json"))) as? [String: [String: [String]]])
        let ssl: Set<String> = ["1.2.840.113635.100.1.3", "1.2.840.113635.100.1.3.1"]
        let notForTLS = (constraints["system"] ?? [:]).filter { hash, oids in
            roots.contains("\(hash).cer") && ssl.isDisjoint(with: oids)
        }
        #expect(store.constrainedRootCount == notForTLS.count)
        #expect(store.constrainedRootCount == 9)
        // The log list, with its tiled logs.
        let list = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: Self.folder
            .appendingPathComponent("certificate_transparency/log_list.json"))) as? [String: Any])
        let operators = try #require(list["operators"] as? [[String: Any]])
        let logCount = operators.reduce(0) { $0 + (($1["logs"] as? [Any])?.count ?? 0) + (($1["tiled_logs"] as? [Any])?.count ?? 0) }
        let logList = try #require(store.logList)
        #expect(logList.entries.count == logCount)
        #expect(logList.entries.values.contains { !$0.rfc6962 })
        #expect(logList.version == source["log_list_version"])
        #expect(store.defaultTransparency?.logList === logList)
    }

    /// A root alone is a chain of one: an unconstrained root is trusted, one held for other policies is not.
    @Test func aRootConstrainedToOtherPoliciesAnchorsNoTLSChain() throws {
        let store = try TrustStore(.apple)
        let roots = Self.folder.appendingPathComponent("certificates/roots")
        // ISRG Root X1, unconstrained.
        let isrg = [UInt8](try Data(contentsOf: roots.appendingPathComponent(
            "96BCEC06264976F37460779ACF28C5A7CFE8A3C0AAE11A8FFCEE05C0BDDF08C6.cer")))
        #expect(CertificateEvaluator.facts(chain: [isrg], host: "example.com", store: store).anchor == .system)
        // Constrained to X.509 basic, code signing, timestamping and another Apple policy: not TLS.
        let constrained = [UInt8](try Data(contentsOf: roots.appendingPathComponent(
            "0CB9124CADFF41D02701F59B477D71E2690B38ADD9F524C49BBED0140AD9B9EC.cer")))
        let facts = CertificateEvaluator.facts(chain: [constrained], host: "example.com", store: store)
        guard case .untrusted(let problem) = facts.anchor else {
            Issue.record("a root held for other policies anchored a TLS chain")
            return
        }
        #expect(problem.contains("which the apple trust store (security_certificates-55349.0.11) holds for other uses only"),
                "\(problem)")
        #expect(problem.contains("1.2.840.113635.100.1.2, 1.2.840.113635.100.1.16"))
        // The host's bundle knows nothing of Apple's constraints: it is a different store.
        #expect(try TrustStore(.system).name == "system")
    }
}
