import ArgumentParser

/// `atsgate health`: asks the daemon's admin listener whether it is healthy, for container health
/// checks and exec probes (slim images have no curl).
struct HealthCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "health",
        abstract: "Check a running daemon through its admin listener.",
        discussion: """
            Sends GET PATH to the admin address over plain HTTP/1.1. Exit status: 0 on a 2xx answer, \
            1 otherwise (refused, timed out, any other status) with one line on stderr, 2 on a usage \
            error. Prints nothing on success.
            """
    )

    @Option(name: .long, help: ArgumentHelp("The daemon's admin address (IP or name, then port; [IPv6]:port).",
                                            valueName: "host:port"))
    var admin = "127.0.0.1:9090"

    @Option(name: .long, help: "The path to ask for: /healthz (alive) or /readyz (serving).")
    var path = "/healthz"

    @Option(name: .long, help: ArgumentHelp("Seconds for the whole check.", valueName: "seconds"))
    var timeout = 5.0

    func validate() throws {
        guard HealthProbe.Target(parsing: admin) != nil else {
            throw ValidationError("--admin \(admin): expected HOST:PORT, e.g. 127.0.0.1:9090 or [::1]:9090")
        }
        guard path.hasPrefix("/"), !path.contains(where: { $0.isWhitespace || $0.isNewline }) else {
            throw ValidationError("--path \(path): expected an absolute path without spaces, e.g. /healthz")
        }
        guard timeout > 0, timeout.isFinite else { throw ValidationError("--timeout must be positive") }
    }

    func run() throws {
        let target = HealthProbe.Target(parsing: admin)!
        let url = "http://\(admin)\(path)"
        do {
            let status = try HealthProbe(target: target, path: path, timeout: .milliseconds(Int64(timeout * 1000))).get()
            guard (200...299).contains(status.code) else {
                throw CommandFailure(message: "health: \(url) answered \(status.text)", exitCode: 1)
            }
        } catch let failure as HealthProbe.Failure {
            throw CommandFailure(message: "health: \(url): \(failure.description)", exitCode: 1)
        }
    }
}
