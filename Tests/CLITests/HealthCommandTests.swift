import Foundation
import Glibc
import Testing
import TestSupport

/// `atsgate health` against real loopback servers: python's http.server stands in for the admin listener.
@Suite struct HealthCommandTests {
    @Test func aTwoHundredIsHealthy() throws {
        let server = try StaticHTTPServer(files: ["healthz": "ok\n", "readyz": "ready\n"])
        let alive = try Atsgate.run(["health", "--admin", "127.0.0.1:\(server.port)"])
        #expect(alive.status == 0, "\(alive.stderr)")
        #expect(alive.stdout.isEmpty && alive.stderr.isEmpty)
        let ready = try Atsgate.run(["health", "--admin", "127.0.0.1:\(server.port)", "--path", "/readyz"])
        #expect(ready.status == 0, "\(ready.stderr)")
    }

    @Test func anyOtherStatusIsUnhealthy() throws {
        let server = try StaticHTTPServer(files: ["healthz": "ok\n"])
        let run = try Atsgate.run(["health", "--admin", "127.0.0.1:\(server.port)", "--path", "/readyz"])
        #expect(run.status == 1)
        #expect(run.stderr == "atsgate: health: http://127.0.0.1:\(server.port)/readyz answered 404 File not found\n")
    }

    @Test func ipv6Loopback() throws {
        let server = try StaticHTTPServer(files: ["healthz": "ok\n"], bind: "::1")
        let run = try Atsgate.run(["health", "--admin", "[::1]:\(server.port)"])
        #expect(run.status == 0, "\(run.stderr)")
    }

    @Test func nothingListeningIsUnhealthy() throws {
        let port = try freePort()
        let run = try Atsgate.run(["health", "--admin", "127.0.0.1:\(port)"])
        #expect(run.status == 1)
        #expect(run.stderr == "atsgate: health: http://127.0.0.1:\(port)/healthz: cannot connect: Connection refused\n")
    }

    @Test func noAnswerInTimeIsUnhealthy() throws {
        // The kernel completes the handshake for a listener that never accepts, so the request goes out
        // and no answer comes back.
        let (fd, port) = try silentListener()
        defer { close(fd) }
        let run = try Atsgate.run(["health", "--admin", "127.0.0.1:\(port)", "--timeout", "0.5"])
        #expect(run.status == 1)
        #expect(run.stderr == "atsgate: health: http://127.0.0.1:\(port)/healthz: no answer within 0.5s (waiting for the answer)\n")
    }

    @Test(arguments: [
        (["--admin", "9090"], "--admin 9090: expected HOST:PORT"),
        (["--admin", "::1:9090"], "--admin ::1:9090: expected HOST:PORT"),
        (["--admin", "127.0.0.1:70000"], "--admin 127.0.0.1:70000: expected HOST:PORT"),
        (["--path", "healthz"], "--path healthz: expected an absolute path"),
        (["--timeout", "0"], "--timeout must be positive"),
    ])
    func usageErrorsExitTwo(_ arguments: [String], _ message: String) throws {
        let run = try Atsgate.run(["health"] + arguments)
        #expect(run.status == 2)
        #expect(run.stderr.contains(message), "\(run.stderr)")
    }
}

/// `python3 -m http.server` over a directory holding `files`, on a free loopback port.
private final class StaticHTTPServer {
    let directory: TemporaryDirectory
    let process: BackgroundProcess
    let port: Int

    init(files: [String: String], bind: String = "127.0.0.1") throws {
        directory = try TemporaryDirectory()
        for (name, contents) in files { try directory.write(name, contents) }
        port = try freePort()
        process = try BackgroundProcess(Origin.python, ["-m", "http.server", String(port), "--bind", bind,
                                                        "--directory", directory.url.path])
        try process.wait { _, _ in canConnect(bind, port) }
    }
}

private func canConnect(_ host: String, _ port: Int) -> Bool {
    let run = try? Atsgate.run(["health", "--admin", host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)",
                                "--path", "/", "--timeout", "2"])
    return run.map { !$0.stderr.contains("cannot connect") } ?? false
}

/// A loopback listener that never accepts.
private func silentListener() throws -> (Int32, Int) {
    try loopbackListener(backlog: 8)
}
