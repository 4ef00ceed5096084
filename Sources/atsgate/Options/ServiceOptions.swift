import ArgumentParser

/// How the process lives as a service, beside the proxy's configuration: what the daemon does on
/// SIGTERM. These settings are the daemon's, not the configuration's, because a reload cannot change
/// them.
struct ServiceOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("Seconds open connections get to finish after SIGTERM.",
                                            valueName: "seconds"))
    var gracePeriod = 10.0

    func validate() throws {
        guard gracePeriod >= 0 else { throw ValidationError("--grace-period must not be negative") }
    }

    func apply(to daemon: inout Daemon) {
        daemon.gracePeriod = gracePeriod
    }
}
