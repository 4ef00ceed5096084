import ATSPolicy
import Foundation
import Testing
import TestSupport
import TLSClient

/// `--trust-store DIR`: a directory in the layout of Apple's security_certificates project, and what
/// is wrong with one that is not, named by file and key.
@Suite struct TrustStoreDirectoryTests {
    /// A copy of the test store to damage; removed when the test ends.
    final class Copy {
        let path: String

        init() throws {
            path = FileManager.default.temporaryDirectory.appendingPathComponent("atsgate-store-copy-\(UUID().uuidString)").path
            try FileManager.default.copyItem(atPath: try TestTrustStore.storePath(), toPath: path)
        }

        deinit { try? FileManager.default.removeItem(atPath: path) }

        func write(_ relative: String, _ text: String) throws {
            try Data(text.utf8).write(to: URL(fileURLWithPath: path).appendingPathComponent(relative))
        }

        func remove(_ relative: String) throws {
            try FileManager.default.removeItem(atPath: URL(fileURLWithPath: path).appendingPathComponent(relative).path)
        }

        /// The log list as JSON, changed by `edit`, written back.
        func editLogList(_ edit: (inout [String: Any]) throws -> Void) throws {
            let url = URL(fileURLWithPath: path).appendingPathComponent("certificate_transparency/log_list.json")
            var list = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
            try edit(&list)
            try JSONSerialization.data(withJSONObject: list).write(to: url)
        }

        func error() throws -> TrustStoreError {
            try #require(throws: TrustStoreError.self) { try TrustStore(.directory(self.path)) }
        }
    }

    @Test func aDirectoryInApplesLayoutLoads() throws {
        let store = try TrustStore(.directory(try TestTrustStore.storePath()))
        #expect(store.kind == .directory(try TestTrustStore.storePath()))
        #expect(store.name == (try TestTrustStore.storePath()))
        #expect(store.version == "atsgate-test-store")
        #expect(store.rootCount == 3)
        #expect(store.constrainedRootCount == 1)
        #expect(store.logList?.entries.count == 8)
        #expect(store.logList?.version == "7")
        #expect(store.defaultTransparency != nil)
    }

    @Test func theKindIsParsedFromTheFlagsValue() {
        #expect(TrustStoreKind("apple") == .apple)
        #expect(TrustStoreKind("system") == .system)
        #expect(TrustStoreKind("/etc/atsgate/store") == .directory("/etc/atsgate/store"))
        #expect(TrustStoreKind.directory("/x").description == "/x")
    }

    @Test func withoutALogListThereIsNoDefaultTransparency() throws {
        let copy = try Copy()
        try copy.remove("certificate_transparency/log_list.json")
        let store = try TrustStore(.directory(copy.path))
        #expect(store.logList == nil)
        #expect(store.defaultTransparency == nil)
    }

    @Test func withoutSOURCETheVersionIsTheProjectsTrustStoreVersion() throws {
        let copy = try Copy()
        try copy.remove("SOURCE")
        #expect(try TrustStore(.directory(copy.path)).version == "unknown")
        try FileManager.default.createDirectory(atPath: copy.path + "/config", withIntermediateDirectories: true)
        try copy.write("config/security_certificates.xcconfig", "CURRENT_PROJECT_VERSION = 1\nTRUST_STORE_VERSION = 2025072000\n")
        #expect(try TrustStore(.directory(copy.path)).version == "2025072000")
    }

    @Test func withoutConstraintsEveryRootAnchors() throws {
        let copy = try Copy()
        try copy.remove("certificates/constraints.json")
        let store = try TrustStore(.directory(copy.path))
        #expect(store.rootCount == 4)
        #expect(store.constrainedRootCount == 0)
    }

    @Test func caFilesAddUserInstalledRoots() throws {
        let store = try TrustStore(.directory(try TestTrustStore.storePath()), caFiles: [try TestPKI.path("ca.pem")])
        #expect(store.extraCertificateCount == 1)
        let verdict = CertificateEvaluator.evaluate(chain: try TestPKI.chain("good-rsa"), host: "localhost",
                                                    requirements: .full, pin: nil, store: store)
        #expect(verdict.anchor == .operator)
        #expect(verdict.findings == [])
    }

    @Test func aDirectorysDistrustFileReplacesApplesTable() throws {
        let copy = try Copy()
        try copy.write("distrust.json", try AppleLayoutTestStore.distrustJSON())
        let store = try TrustStore(.directory(copy.path))
        let verdict = CertificateEvaluator.evaluate(chain: try TestTrustStore.chain("leaf-distrusted"), host: "localhost",
                                                    requirements: .full, pin: nil, store: store)
        #expect(verdict.findings.map(\.reason) == [.certificateDistrusted])
        #expect(verdict.certificateDepth == 2)
        #expect(verdict.distrust?.source == "make-trust-store.py")
        // Issued before the day: trusted still, as Apple keeps such certificates working until they expire.
        try copy.write("distrust.json", try AppleLayoutTestStore.distrustJSON(issuedAfter: "2099-01-01"))
        let later = CertificateEvaluator.evaluate(chain: try TestTrustStore.chain("leaf-distrusted"), host: "localhost",
                                                  requirements: .full, pin: nil, store: try TrustStore(.directory(copy.path)))
        #expect(later.findings == [])
    }

    @Test(arguments: [
        (#"[]"#, "distrusted", "expected an object with a \"distrusted\" array"),
        (#"{"distrusted": [7]}"#, "distrusted[0]", "expected an object"),
        (#"{"distrusted": [{"issued_after": "2024-11-15"}]}"#, "distrusted[0].certificate_sha256", "missing"),
        (#"{"distrusted": [{"certificate_sha256": "ABC", "issued_after": "2024-11-15"}]}"#,
         "distrusted[0].certificate_sha256", "expected a SHA-256 in hex (64 digits)"),
        (#"{"distrusted": [{"certificate_sha256": "\#(String(repeating: "AB", count: 32))", "issued_after": "15 Nov 2024"}]}"#,
         "distrusted[0].issued_after", "expected a day, YYYY-MM-DD"),
    ])
    func aBrokenDistrustFileIsNamedWithItsKey(text: String, key: String, problem: String) throws {
        let copy = try Copy()
        try copy.write("distrust.json", text)
        #expect(try copy.error().description == "trust store \(copy.path)/distrust.json: \(key): \(problem)")
    }

    // MARK: bad input

    @Test func aMissingDirectoryIsNamed() throws {
        let error = try #require(throws: TrustStoreError.self) { try TrustStore(.directory("/nonexistent/store")) }
        #expect(error.description == "trust store /nonexistent/store: no such directory")
    }

    @Test func aFileIsNotAStore() throws {
        let file = try TestTrustStore.path("manifest.json")
        let error = try #require(throws: TrustStoreError.self) { try TrustStore(.directory(file)) }
        #expect(error.description.hasPrefix("trust store \(file): is not a directory (expected the layout of Apple's"))
    }

    @Test func aDirectoryWithoutRootsIsNamed() throws {
        let copy = try Copy()
        try copy.remove("certificates/roots")
        #expect(try copy.error().description == "trust store \(copy.path): has no certificates/roots directory (expected"
            + " the layout of Apple's security_certificates: certificates/roots/*.cer)")
        try FileManager.default.createDirectory(atPath: copy.path + "/certificates/roots", withIntermediateDirectories: true)
        #expect(try copy.error().description == "trust store \(copy.path)/certificates/roots: holds no root certificate")
    }

    @Test func anUnreadableOrDamagedRootIsNamed() throws {
        let copy = try Copy()
        try copy.write("certificates/roots/broken.cer", "not a certificate")
        #expect(try copy.error().description
            == "trust store \(copy.path)/certificates/roots/broken.cer: is not a certificate (DER or PEM)")
        try copy.remove("certificates/roots/broken.cer")
        try FileManager.default.createDirectory(atPath: copy.path + "/certificates/roots/unreadable.cer",
                                                withIntermediateDirectories: true)
        #expect(try copy.error().description
            == "trust store \(copy.path)/certificates/roots/unreadable.cer: is a directory, not a PEM file")
    }

    @Test("a malformed constraints.json is named with its key", arguments: [
        ("[1, 2]", nil as String?, "is not a JSON object"),
        ("{\"system\": []}", "system", "expected an object of root SHA-256 -> policy OIDs"),
        ("{\"system\": {\"NOTAHASH\": []}}", "system.NOTAHASH", "expected a root's SHA-256 in hex"),
        ("{\"system\": {\"\(String(repeating: "AB", count: 32))\": \"1.2.3\"}}",
         "system.\(String(repeating: "AB", count: 32))", "expected an array of policy OIDs"),
        ("{\"system\": {\"\(String(repeating: "AB", count: 32))\": [\"1.2.3\", 7]}}",
         "system.\(String(repeating: "AB", count: 32))[1]", "expected a policy OID string"),
    ])
    func malformedConstraints(text: String, key: String?, problem: String) throws {
        let copy = try Copy()
        try copy.write("certificates/constraints.json", text)
        let error = try copy.error()
        #expect(error.file == copy.path + "/certificates/constraints.json")
        #expect(error.key == key)
        #expect(error.problem == problem)
        #expect(error.description == "trust store \(copy.path)/certificates/constraints.json: "
            + (key.map { "\($0): " } ?? "") + problem)
    }

    @Test func aLogListThatIsNotJSONIsNamed() throws {
        let copy = try Copy()
        try copy.write("certificate_transparency/log_list.json", "{ not json")
        #expect(try copy.error().description == "trust store \(copy.path)/certificate_transparency/log_list.json: is not JSON")
    }

    @Test("a malformed log list is named with its key", arguments: [
        ("operators[0].logs[1].key", "expected the log's public key in base64"),
        ("operators[0].logs[1].log_id", "is not the SHA-256 of the log's key"),
        ("operators[0].logs[1].state.usable.timestamp", "expected an RFC 3339 date"),
        ("operators[0].logs[1].state.retired.timestamp", "a retired log needs the date it retired"),
        ("operators[1].tiled_logs", "expected an array"),
        ("operators", "is not a CT log list (expected a JSON object with an \"operators\" array)"),
    ])
    func malformedLogList(key: String, problem: String) throws {
        let copy = try Copy()
        try copy.editLogList { list in
            var operators = list["operators"] as? [[String: Any]] ?? []
            var logs = operators[0]["logs"] as? [[String: Any]] ?? []
            switch key {
            case "operators[0].logs[1].key": logs[1]["key"] = "%%%"
            case "operators[0].logs[1].log_id": logs[1]["log_id"] = Data(repeating: 1, count: 32).base64EncodedString()
            case "operators[0].logs[1].state.usable.timestamp": logs[1]["state"] = ["usable": ["timestamp": "yesterday"]]
            case "operators[0].logs[1].state.retired.timestamp": logs[1]["state"] = ["retired": [String: String]()]
            case "operators[1].tiled_logs": operators[1]["tiled_logs"] = "none"
            default: list["operators"] = "none"
            }
            operators[0]["logs"] = logs
            if key != "operators" { list["operators"] = operators }
        }
        let error = try copy.error()
        #expect(error.file == copy.path + "/certificate_transparency/log_list.json")
        #expect(error.key == key)
        #expect(error.problem == problem)
    }

    @Test func aLogKeyThatIsNoPublicKeyIsNamed() throws {
        let copy = try Copy()
        try copy.editLogList { list in
            var operators = list["operators"] as? [[String: Any]] ?? []
            var logs = operators[0]["logs"] as? [[String: Any]] ?? []
            logs[0]["key"] = Data("not a key".utf8).base64EncodedString()
            logs[0]["log_id"] = nil
            operators[0]["logs"] = logs
            list["operators"] = operators
        }
        let error = try copy.error()
        #expect(error.key == "operators[0].logs[0].key")
        #expect(error.problem == "is not a DER SubjectPublicKeyInfo")
    }

    @Test func aCTLogListFileGivenAloneNamesItsKeyToo() throws {
        let copy = try Copy()
        try copy.write("certificate_transparency/log_list.json", "{\"operators\": [{\"name\": \"x\", \"logs\": [{\"key\": 5}]}]}")
        let file = copy.path + "/certificate_transparency/log_list.json"
        let error = try #require(throws: CTLogListError.self) { try CTLogList(file: file) }
        #expect(error.description == "CT log list \(file): operators[0].logs[0].key: expected the log's public key in base64")
    }
}
