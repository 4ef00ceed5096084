import Foundation
import Glibc

/// The daemon under soak: the release `atsgate run` as its own process, with proxy authentication,
/// three apps, TLS inspection, the admin listener and an open-file limit low enough that a burst of
/// connections exhausts it. Its decision log (stdout) and stderr go to files in the run's directory.
final class Daemon: @unchecked Sendable {
    let binary: String
    let port: Int
    let adminPort: Int
    let descriptorLimit: Int
    let logPath: String
    let stderrPath: String
    /// Whether this build takes `--dns-server` (the asynchronous resolver): the late-resolver
    /// fault runs only then.
    let hasDNSServer: Bool
    private(set) var child: Child!
    /// The flags it was started with (printed with the report).
    private(set) var arguments: [String] = []

    init(binary: String, world: World, descriptorLimit: Int) throws {
        self.binary = binary
        self.descriptorLimit = descriptorLimit
        port = try World.freePort()
        adminPort = try World.freePort()
        logPath = world.directory + "/decisions.jsonl"
        stderrPath = world.directory + "/atsgate.stderr"
        let help = Child.run(binary, ["run", "--help"])
        guard help.status == 0, help.stdout.contains("--auth-file") else {
            throw SoakError("\(binary) run --help does not describe the daemon: \(help.stderr.prefix(300))")
        }
        hasDNSServer = help.stdout.contains("--dns-server")
        var arguments = ["run", "--listen", "127.0.0.1:\(port)", "--admin", "127.0.0.1:\(adminPort)",
                         "--log-format", "json", "--auth-file", world.authFile]
        for (user, app) in World.users {
            arguments += ["--policy", "\(app)=\(world.policyFile(app))", "--route", "user:\(user)=\(app)"]
        }
        // 127.0.0.1 is then an IP address under full ATS, not a local destination exempt from it.
        arguments += ["--local-network", "192.0.2.0/24", "--tls-inspection", "on", "--certificate-check", "before",
                      "--ca-file", world.caFile, "--verdict-ttl", "10"]
        for origin in [world.plainPort, world.tls12Port, world.tls13Port, world.faults.httpPort, world.faults.eofPort,
                       world.faults.resetPort] {
            arguments += ["--connect-port", String(origin)]
        }
        for name in ["www.soak.test", "faults.soak.test"] + (0..<World.tlsNames).map({ "tls-\($0).soak.test" }) {
            arguments += ["--resolve", "\(name)=127.0.0.1"]
        }
        // Short timeouts, so that slowloris heads and stalled origins end within the run.
        arguments += ["--head-timeout", "2", "--idle-timeout", "5", "--connect-timeout", "3", "--handshake-timeout", "5",
                      "--grace-period", "5"]
        if hasDNSServer { arguments += ["--dns-server", "127.0.0.1:\(world.resolver.port)", "--dns-timeout", "3"] }
        self.arguments = arguments
    }

    func start() throws {
        // The limit is the daemon's own; the shell execs it, so the pid is the daemon's.
        let shell = ["-c", "ulimit -n \(descriptorLimit) && exec \"$0\" \"$@\"", binary] + arguments
        child = try Child("/bin/sh", shell, stdout: logPath, stderr: stderrPath)
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            if readText(stderrPath).contains("listening on ") { return }
            guard child.isRunning else { throw SoakError("atsgate exited at start: \(readText(stderrPath))") }
            usleep(50_000)
        }
        throw SoakError("atsgate did not say it was listening within 30 s: \(readText(stderrPath))")
    }

    var pid: pid_t { child.pid }
    var isRunning: Bool { child.isRunning }
    var stderr: String { readText(stderrPath) }

    /// Reloads (SIGHUP) and waits up to 10 s for the daemon to say it did; true when it did.
    func reload() -> Bool {
        let before = stderr.components(separatedBy: "reloaded: ").count
        child.signal(SIGHUP)
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if stderr.components(separatedBy: "reloaded: ").count > before { return true }
            usleep(50_000)
        }
        return false
    }

    /// A client connection for ledger entry `id`; when none can be made the request was never
    /// sent, and the entry is withdrawn (no record expected) and closed as failed.
    func connect(for id: Int, _ ledger: Ledger) -> Wire? {
        if let wire = try? Wire(port: port) { return wire }
        ledger.withdraw(id)
        ledger.close(id, answered: false, expected: false, detail: "cannot connect to the proxy")
        return nil
    }

    /// One line of /metrics' text (the sum of a metric's series whose line starts with `prefix`).
    func metric(_ prefix: String) -> Double? {
        guard let wire = try? Wire(port: adminPort, timeout: 2) else { return nil }
        wire.send("GET /metrics HTTP/1.1\r\nHost: soak\r\nConnection: close\r\n\r\n")
        guard let response = wire.readResponse(timeout: 5), response.status == 200 else { return nil }
        var total: Double?
        for line in String(decoding: response.body, as: UTF8.self).split(separator: "\n") where line.hasPrefix(prefix) {
            if let value = line.split(separator: " ").last.flatMap({ Double($0) }) { total = (total ?? 0) + value }
        }
        return total
    }

    /// SIGTERM, and waits for the exit (the log is flushed by then).
    func stop() -> Int32 {
        child.stop(grace: 15)
        return child.process.terminationStatus
    }
}
