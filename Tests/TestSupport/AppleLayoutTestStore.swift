import Foundation
import Glibc

/// The directory to remove when the test process exits.
nonisolated(unsafe) private var madeStore: String?

/// The trust store of Tests/Fixtures/make-trust-store.py (Apple's layout, its own CT logs, weak and
/// constrained chains, a root to distrust), made once per test run in a temporary directory, for the
/// TLSClient tests and the daemon's alike.
public enum AppleLayoutTestStore {
    private static let result: Result<URL, HarnessError> = {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("atsgate-store-\(UUID().uuidString)")
        do {
            let run = try Shell.run(pythonExecutable, [fixturePath("make-trust-store.py"), directory.path], timeout: 120)
            guard run.status == 0 else { return .failure(HarnessError("make-trust-store.py: \(run.stderr)")) }
            madeStore = directory.path
            atexit { if let madeStore { try? FileManager.default.removeItem(atPath: madeStore) } }
            return .success(directory)
        } catch {
            return .failure(HarnessError("make-trust-store.py: \(error)"))
        }
    }()

    public static func directory() throws -> URL { try result.get() }

    public static func path(_ name: String) throws -> String { try directory().appendingPathComponent(name).path }

    /// The store directory in Apple's layout.
    public static func storePath() throws -> String { try path("store") }

    /// The hashes of a certificate the script made ("root-distrusted"): upper-case hex.
    public static func manifest(_ label: String) throws -> (sha256: String, spki: String, subject: String) {
        let data = try Data(contentsOf: URL(fileURLWithPath: try path("manifest.json")))
        guard let object = try JSONSerialization.jsonObject(with: data) as? [String: [String: String]],
              let entry = object[label] else { throw HarnessError("no \(label) in manifest.json") }
        return (entry["sha256"] ?? "", entry["spki_sha256"] ?? "", entry["subject"] ?? "")
    }

    /// distrust.json (atsgate's addition to Apple's layout) distrusting root-distrusted for certificates
    /// issued after `issuedAfter` (YYYY-MM-DD; default the day before yesterday, so today's leaves are).
    public static func distrustJSON(issuedAfter: String? = nil) throws -> String {
        let root = try manifest("root-distrusted")
        let day = issuedAfter ?? String(ISO8601DateFormatter().string(from: Date().addingTimeInterval(-2 * 86_400)).prefix(10))
        return #"{"distrusted": [{"name": "atsgate Distrusted Root", "certificate_sha256": "\#(root.sha256)", "#
            + #""spki_sha256": "\#(root.spki)", "issued_after": "\#(day)", "source": "make-trust-store.py"}]}"#
    }
}

/// Tests/Fixtures/aia_server.py on a loopback port, serving the test store's intermediate (and slow,
/// huge, garbage and looping answers), with the leaves of `make-trust-store.py OUTDIR aia BASE` whose
/// caIssuers URLs point at it. One server for the test run; it stops when the test process exits.
public final class AIAServer: @unchecked Sendable {
    public static let shared: Result<AIAServer, HarnessError> = Result { try AIAServer() }.mapError { HarnessError("\($0)") }

    public let port: Int
    private let process = Process()
    private let input = Pipe()
    private let output = Lines()

    public var base: String { "http://127.0.0.1:\(port)" }

    private init() throws {
        let directory = try AppleLayoutTestStore.directory()
        process.executableURL = URL(fileURLWithPath: pythonExecutable)
        process.arguments = [fixturePath("aia_server.py"), directory.path]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = out
        process.standardInput = input
        let output = output
        PipeDrain.start(out.fileHandleForReading, onData: { output.append($0) })
        try process.run()
        let deadline = Date().addingTimeInterval(15)
        var found: Int?
        while found == nil, Date() < deadline, process.isRunning {
            if let match = output.text.firstMatch(of: /PORT (\d+)/) { found = Int(match.1) } else { usleep(20_000) }
        }
        guard let found else { throw HarnessError("aia_server.py did not start: \(output.text)") }
        port = found
        let run = try Shell.run(pythonExecutable, [fixturePath("make-trust-store.py"), directory.path, "aia",
                                                   "http://127.0.0.1:\(found)/"], timeout: 60)
        guard run.status == 0 else { throw HarnessError("make-trust-store.py aia: \(run.stderr)") }
    }

    /// The requests the server has seen whose target contains `text`, once there are at least `atLeast`
    /// (or 5 s have passed): the server prints a request before it answers, but its output reaches the
    /// test through a pipe some time later.
    public func requests(containing text: String, atLeast: Int = 1) -> [String] {
        let deadline = Date().addingTimeInterval(5)
        while true {
            let seen = output.text.split(separator: "\n").map(String.init).filter { $0.hasPrefix("GET ") && $0.contains(text) }
            if seen.count >= atLeast || Date() > deadline { return seen }
            usleep(10_000)
        }
    }

    /// The leaf `name` of the aia-leaves set ("aia-der"), sent without its intermediate.
    public func leaf(_ name: String) throws -> [[UInt8]] {
        [[UInt8](try Data(contentsOf: try AppleLayoutTestStore.directory().appendingPathComponent("aia-leaves/\(name).der")))]
    }

    private final class Lines: @unchecked Sendable {
        private let lock = NSLock()
        private var collected = ""
        func append(_ data: Data) { lock.withLock { collected += String(decoding: data, as: UTF8.self) } }
        var text: String { lock.withLock { collected } }
    }
}
