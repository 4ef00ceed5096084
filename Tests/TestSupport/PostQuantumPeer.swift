import Foundation
import Glibc

/// The post-quantum TLS peer of Tests/Fixtures/pq_peer.py: pyOpenSSL on the OpenSSL 4 the pinned
/// `cryptography` wheel bundles, which negotiates X25519MLKEM768 (Debian's OpenSSL 3.0 cannot). It
/// runs from the venv scripts/install-test-tools makes; without it the tests fail and say so.
public enum PostQuantumPeer {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// The venv's interpreter (`$ATSGATE_PQ_PYTHON` overrides it).
    public static var python: String {
        ProcessInfo.processInfo.environment["ATSGATE_PQ_PYTHON"]
            ?? repository.appendingPathComponent(".build-venv/bin/python3").path
    }

    public static let script = repository.appendingPathComponent("Tests/Fixtures/pq_peer.py").path

    /// Throws, naming the fix, when the venv is missing.
    static func checkInstalled() throws {
        guard FileManager.default.isExecutableFile(atPath: python) else {
            throw HarnessError("\(python) is missing: run scripts/install-deps (it makes the venv with pyOpenSSL, "
                               + "pinned in Tests/Fixtures/requirements-pq.txt)")
        }
    }

    /// What the client printed: the negotiated version and group, the status line and body, or the error.
    public struct ClientResult: Sendable {
        public var version: String?
        public var group: String?
        public var status: String?
        public var body: String?
        public var error: String?
        public var exitStatus: Int32
    }

    /// One HTTPS request by the pyOpenSSL client to 127.0.0.1:`port` (through the proxy's CONNECT
    /// when `proxy` is given), offering `groups` (OpenSSL's list syntax; its default offers
    /// X25519MLKEM768 and x25519 shares). Bounded: the client times out its reads after 10 s.
    public static func request(port: Int, proxy: Int? = nil, serverName: String? = nil, groups: String? = nil,
                               maximumVersion: String? = nil, userAgent: String? = nil) throws -> ClientResult {
        try checkInstalled()
        var arguments = [script, "client", "--connect", "127.0.0.1:\(port)"]
        if let proxy { arguments += ["--proxy", "127.0.0.1:\(proxy)"] }
        if let serverName { arguments += ["--servername", serverName] }
        if let groups { arguments += ["--groups", groups] }
        if let maximumVersion { arguments += ["--max", maximumVersion] }
        if let userAgent { arguments += ["--user-agent", userAgent] }
        let run = try Shell.run(python, arguments, timeout: 60)
        let line = run.stdout.split(separator: "\n").last.map(String.init) ?? ""
        guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
            throw HarnessError("pq_peer.py client printed no result: \(run.stderr)")
        }
        return ClientResult(version: object["version"] as? String, group: object["group"] as? String,
                            status: object["status"] as? String, body: object["body"] as? String,
                            error: object["error"] as? String, exitStatus: run.status)
    }
}

/// The pyOpenSSL server on a loopback port the kernel picks; answers every request with 200 and
/// "ok from pq_peer group=GROUP". Serves connections concurrently; stopped on deinit.
public final class PostQuantumServer: @unchecked Sendable {
    public let port: Int
    private let process = Process()
    private let input = Pipe()

    /// `certificate` and `key` are PEM files; `groups` is OpenSSL's list (default: OpenSSL 4's, which
    /// prefers X25519MLKEM768); `maximumVersion` is "TLSv1_2" or "TLSv1_3".
    public init(certificate: String, key: String, groups: String? = nil, maximumVersion: String? = nil) throws {
        try PostQuantumPeer.checkInstalled()
        var arguments = [PostQuantumPeer.script, "server", "--cert", certificate, "--key", key]
        if let groups { arguments += ["--groups", groups] }
        if let maximumVersion { arguments += ["--max", maximumVersion] }
        process.executableURL = URL(fileURLWithPath: PostQuantumPeer.python)
        process.arguments = arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        process.standardInput = input
        try process.run()
        // The first line is "port=PORT"; read it with a deadline so a broken venv cannot hang the test.
        let reader = out.fileHandleForReading
        nonisolated(unsafe) var line = ""
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            var bytes: [UInt8] = []
            while true {
                let data = reader.readData(ofLength: 1)
                guard let byte = data.first, byte != 0x0A else { break }
                bytes.append(byte)
            }
            line = String(decoding: bytes, as: UTF8.self)
            done.signal()
        }
        guard done.wait(timeout: .now() + 30) == .success, let port = Int(line.dropFirst("port=".count)),
              line.hasPrefix("port=") else {
            kill(process.processIdentifier, SIGKILL)
            throw HarnessError("pq_peer.py server did not start (printed \(line.debugDescription))")
        }
        self.port = port
    }

    deinit {
        try? input.fileHandleForWriting.close()
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}
