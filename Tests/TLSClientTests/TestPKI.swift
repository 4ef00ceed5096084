import Foundation
import Testing
import TestSupport

/// The directory to remove when the test process exits.
nonisolated(unsafe) private var made: String?

/// The certificates of Tests/Fixtures/make-pki.sh, made once per test run in a temporary directory.
enum TestPKI {
    private static let result: Result<URL, HarnessError> = {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("atsgate-pki-\(UUID().uuidString)")
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/make-pki.sh").path
        do {
            let run = try Shell.run("/bin/sh", [script, directory.path], timeout: 120)
            guard run.status == 0 else { return .failure(HarnessError("make-pki.sh: \(run.stderr)")) }
            made = directory.path
            atexit { if let made { try? FileManager.default.removeItem(atPath: made) } }
            return .success(directory)
        } catch {
            return .failure(HarnessError("make-pki.sh: \(error)"))
        }
    }()

    static func directory() throws -> URL { try result.get() }

    /// The path of a file the script made, e.g. "ca.pem" or "good-rsa.key".
    static func path(_ name: String) throws -> String {
        try directory().appendingPathComponent(name).path
    }

    /// Whether a leaf is sent alone: self-signed, or signed directly by the "system store" root.
    static func standsAlone(_ leaf: String) -> Bool { leaf == "self-signed" || leaf.hasPrefix("sys-") }

    /// What a server sends: the leaf, then (unless it stands alone) the intermediate, in DER.
    static func chain(_ leaf: String) throws -> [[UInt8]] {
        let names = standsAlone(leaf) ? [leaf] : [leaf, "intermediate"]
        return try names.map { [UInt8](try Data(contentsOf: URL(fileURLWithPath: try path("\($0).der")))) }
    }

    /// Base64 SHA-256 of a key's DER SubjectPublicKeyInfo, computed by the openssl CLI (not our code).
    static func spkiHash(key: String) throws -> Data {
        let run = try Shell.run("/bin/sh", ["-c",
            "openssl pkey -in \"$1\" -pubout -outform DER | openssl dgst -sha256 -binary | base64", "sh",
            try path(key)])
        let text = run.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        return try #require(Data(base64Encoded: text), "openssl gave no hash for \(key): \(run.stderr)")
    }
}
