import Foundation

/// The real QUIC client of the tests: aioquic running Tests/Fixtures/quic_client.py, which sends its
/// Initial packets to HOST:PORT and gives up when nothing answers. aioquic is pinned in
/// Tests/Fixtures/requirements-har.txt (mitmproxy needs it) and installed by scripts/install-test-tools
/// into .build/test-tools; without it the tests fail and say so.
public enum QUICClient {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// The environment's interpreter (`$ATSGATE_QUIC_PYTHON` overrides it).
    public static var python: String {
        ProcessInfo.processInfo.environment["ATSGATE_QUIC_PYTHON"]
            ?? repository.appendingPathComponent(".build/test-tools/bin/python").path
    }

    public static let script = repository.appendingPathComponent("Tests/Fixtures/quic_client.py").path

    /// The command line of one connection attempt to `address` (`IP:PORT`, `[IPv6]:PORT`), for a
    /// caller that runs it where it wants (in a lab namespace, say). `alpnPadding` long made-up ALPN
    /// names make the ClientHello span several Initial packets.
    public static func command(connect address: String, serverName: String, version: Int = 1,
                               alpnPadding: Int = 0, timeout: Double = 1) throws -> [String] {
        guard FileManager.default.isExecutableFile(atPath: python) else {
            throw HarnessError("\(python) is missing: run scripts/install-test-tools (aioquic is pinned in "
                               + "Tests/Fixtures/requirements-har.txt)")
        }
        return [python, script, "--connect", address, "--servername", serverName, "--version", "\(version)",
                "--alpn-padding", "\(alpnPadding)", "--timeout", "\(timeout)"]
    }
}
