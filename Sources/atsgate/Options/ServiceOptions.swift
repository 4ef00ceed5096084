import ArgumentParser

/// How the process lives as a service, beside the proxy's configuration: what the daemon does on
/// SIGTERM and on SIGUSR2 (a binary upgrade), and where it says its PID. These settings are the
/// daemon's, not the configuration's, because a reload cannot change them.
struct ServiceOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("""
        Seconds open connections get to finish after SIGTERM, and after an upgrade (SIGUSR2) what did \
        not move to the new process.
        """, valueName: "seconds"))
    var gracePeriod = 10.0

    @Option(name: .long, help: ArgumentHelp("""
        Write the PID of the process that serves to this file (replaced atomically; the new process \
        writes it after an upgrade; removed at a clean stop). `atsgate upgrade --pid-file` reads it.
        """, valueName: "file"))
    var pidFile: String?

    @Option(name: .long, help: ArgumentHelp("""
        Seconds a new binary gets, on SIGUSR2, to start (load its configuration and policies) and to \
        take the listeners and connections over; past them the old process keeps serving.
        """, valueName: "seconds"))
    var upgradeTimeout = 30.0

    func validate() throws {
        guard gracePeriod >= 0 else { throw ValidationError("--grace-period must not be negative") }
        guard upgradeTimeout > 0 else { throw ValidationError("--upgrade-timeout must be positive") }
        if let pidFile, pidFile.isEmpty { throw ValidationError("--pid-file needs a path") }
    }

    func apply(to daemon: inout Daemon) {
        daemon.gracePeriod = gracePeriod
        daemon.pidFile = pidFile
        daemon.upgradeTimeout = upgradeTimeout
    }
}
