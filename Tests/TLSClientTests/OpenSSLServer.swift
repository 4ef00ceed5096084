import Foundation
import TestSupport
import Glibc

/// `openssl s_server -www` on an ephemeral loopback port, serving a certificate of the test PKI.
/// s_server answers one connection at a time, which is all these tests need. Stopped on deinit.
final class OpenSSLServer: @unchecked Sendable {
    let port: Int
    private let process = Process()

    /// `leaf` names a certificate of TestPKI ("good-rsa"); `arguments` restrict versions and suites.
    init(leaf: String = "good-rsa", _ arguments: [String] = []) throws {
        // A server that resets mid-write must not kill the test process.
        signal(SIGPIPE, SIG_IGN)
        var certificate = ["-cert", try TestPKI.path("\(leaf).pem"), "-key", try TestPKI.path("\(leaf).key")]
        if !TestPKI.standsAlone(leaf) { certificate += ["-cert_chain", try TestPKI.path("intermediate.pem")] }
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        // Port 0: s_server prints "ACCEPT 127.0.0.1:PORT" once it listens, so there is no port race.
        process.arguments = ["s_server", "-accept", "127.0.0.1:0", "-www"] + certificate + arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = out
        process.standardInput = Pipe()
        let output = Output()
        PipeDrain.start(out.fileHandleForReading, onData: { output.append($0) })
        try process.run()
        let deadline = Date().addingTimeInterval(15)
        var found: Int?
        while found == nil, Date() < deadline, process.isRunning {
            if let match = output.text.firstMatch(of: /ACCEPT 127\.0\.0\.1:(\d+)/) { found = Int(match.1) }
            else { usleep(20_000) }
        }
        guard let found else {
            let text = output.text
            kill(process.processIdentifier, SIGKILL)
            throw HarnessError("openssl s_server \(arguments) did not start: \(text)")
        }
        port = found
    }

    deinit {
        // SIGKILL: the child inherits the test thread's signal mask, in which SIGTERM is blocked.
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    /// What the server printed so far.
    private final class Output: @unchecked Sendable {
        private let lock = NSLock()
        private var collected = ""
        func append(_ data: Data) { lock.withLock { collected += String(decoding: data, as: UTF8.self) } }
        var text: String { lock.withLock { collected } }
    }
}

/// A loopback listener that accepts TCP connections (the kernel does) but never speaks TLS.
final class SilentListener {
    let fd: Int32
    let port: Int

    init() throws {
        (fd, port) = try loopbackListener(backlog: 8)
    }

    deinit { close(fd) }
}

/// A loopback port with nothing listening (bound, read, closed).
func closedPort() throws -> Int {
    let listener = try SilentListener()
    return listener.port
}
