import Dispatch
import Foundation
import ProxyCore
import TLSClient

/// What the daemon does on each signal, in one place:
///
/// | signal  | meaning                                                                   |
/// | ------- | ------------------------------------------------------------------------- |
/// | SIGHUP  | reload config and policy off the event loops; a broken one is refused and the running state kept |
/// | SIGTERM | stop accepting, let open connections finish for the grace period, exit 0 |
/// | SIGINT  | the same with at most 1 second of grace                                   |
/// | second SIGTERM/SIGINT | hand the log what it has, give it 1 second, exit 0          |
/// | SIGUSR1 | reopen --log-file (logrotate moved it); records continue in the new file; during an upgrade the other process reopens too |
/// | SIGUSR2 | binary upgrade (nginx's signal): start the binary at the path this process was started from, hand it the listeners, plain tunnels and idle clients, drain the rest under the grace period, exit 0 (docs/upgrades.md) |
/// | second SIGUSR2 | refused while an upgrade is in progress (said, and counted as a failure) |
/// | SIGHUP during an upgrade | refused until it ends (said; READY=1 again) |
/// | SIGTERM during an upgrade | before the hand-over: the upgrade is given up, then the usual stop; after it (draining): said, the drain goes on; a second one exits at once |
/// | SIGPIPE | ignored (the relay handles EPIPE; a log reader gone counts as lost records) |
///
/// The service manager hears of each step (READY, RELOADING, STOPPING, STATUS, WATCHDOG, and MAINPID
/// when an upgrade hands the service to the new process, after which this one sends nothing).
final class ServiceLifecycle: @unchecked Sendable {
    private let server: ProxyServer
    private let gracePeriod: Double
    /// Builds the configuration a reload switches to (Daemon.reconfigure).
    private let reconfigure: @Sendable () throws -> ProxyConfiguration
    /// Reloads run one at a time, off the event loops and off the signal queue.
    private let reloadQueue = DispatchQueue(label: "atsgate.reload")
    private var sources: [DispatchSourceSignal] = []
    /// Said once the signal handlers are in place (the "listening" line).
    private let announce: @Sendable () -> Void
    /// Signal sources registered so far; touched on the main queue only.
    private var registered = 0
    private var stopping = false
    private var reloading = false
    private var lastReload = "none"
    /// SIGUSR2's work (Daemon+Upgrade.swift).
    private let upgrade: BinaryUpgrade
    /// Written once the process serves; removed at a clean stop (not by a process that upgraded).
    private let pidFile: String?
    /// The service went to an upgrade's new process: nothing more goes to systemd from here.
    private var handedOver = false
    /// Runs once the process serves (signal handlers in place, READY sent, the pid file written).
    var onServing: @Sendable () -> Void = {}

    init(server: ProxyServer, gracePeriod: Double, reconfigure: @escaping @Sendable () throws -> ProxyConfiguration,
         upgrade: BinaryUpgrade, pidFile: String?, announce: @escaping @Sendable () -> Void) {
        self.server = server
        self.gracePeriod = gracePeriod
        self.reconfigure = reconfigure
        self.upgrade = upgrade
        self.pidFile = pidFile
        self.announce = announce
    }

    /// Installs the signal handlers; once they are in place, announces and tells the service manager
    /// READY.
    func start() {
        let handlers: [(Int32, () -> Void)] = [
            (SIGHUP, { [self] in reload() }),
            (SIGTERM, { [self] in stop(grace: gracePeriod, signal: "SIGTERM") }),
            (SIGINT, { [self] in stop(grace: min(gracePeriod, 1), signal: "SIGINT") }),
            (SIGUSR1, { [self] in
                server.reopenLog()
                upgrade.forwardReopenLog()
            }),
            (SIGUSR2, { [self] in
                upgrade.begin(refusal: stopping ? "the daemon is stopping" : reloading ? "a reload is in progress" : nil)
            }),
        ]
        upgrade.handedOver = { [self] in
            // On the main queue: the timers that notify systemd stop before MAINPID names the new process.
            handedOver = true
            statusTimer?.cancel()
            watchdogTimer?.cancel()
        }
        for (signalNumber, handler) in handlers { on(signalNumber, handler, of: handlers.count) }
    }

    /// Runs on the main queue as each signal source is registered; the "listening" line and READY
    /// wait for all of them. libdispatch registers a source later, from its manager queue, and until
    /// then the signal is SIG_IGN: a SIGHUP or SIGTERM sent on seeing either was lost (found under
    /// AddressSanitizer, where a test's reload right after READY never happened). After
    /// dispatchMain the main queue is drained by Dispatch's worker threads, so what this reads was set
    /// in init or is passed in (ThreadSanitizer sees no order between it and `start`).
    private func sourceRegistered(of total: Int) {
        registered += 1
        guard registered == total else { return }
        announce()
        ServiceManager.ready(status: status())
        if let pidFile { PIDFile.write(pidFile) }
        upgrade.status = UpgradeStatus.start()
        startWatchdog()
        onServing()
        // The status line's counts move; refresh it now and then (cheap: one datagram).
        let timer = DispatchSource.makeTimerSource(queue: .main)
        timer.schedule(deadline: .now() + 5, repeating: 5)
        timer.setEventHandler { [self] in if !stopping, !handedOver { ServiceManager.status(status()) } }
        timer.resume()
        statusTimer = timer
    }

    private var statusTimer: DispatchSourceTimer?
    private var watchdogTimer: DispatchSourceTimer?

    private func on(_ signalNumber: Int32, _ handler: @escaping () -> Void, of total: Int) {
        signal(signalNumber, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .main)
        source.setEventHandler(handler: handler)
        source.setRegistrationHandler { [self] in sourceRegistered(of: total) }
        source.resume()
        sources.append(source)
    }

    private func status() -> String {
        "\(server.openConnections) connections open, \(server.decisionCount) decisions, "
            + "configuration \(server.generation), last reload: \(lastReload)"
    }

    // MARK: reload

    private func reload() {
        guard !stopping else { return }
        if upgrade.draining { return ServiceManager.say("reload ignored: this process has handed the service to its upgrade") }
        if upgrade.inProgress {
            ServiceManager.say("reload refused: an upgrade is in progress; send SIGHUP again once it is over")
            return ServiceManager.ready(status: status())
        }
        ServiceManager.reloading()
        reloading = true
        reloadQueue.async { [self] in
            let outcome = Result { try reconfigure() }
            DispatchQueue.main.async { [self] in
                reloading = false
                switch outcome {
                case .success(let configuration):
                    let warnings = server.reload(configuration)
                    lastReload = "ok at \(ServiceLifecycle.clockTime()) (configuration \(server.generation))"
                    ServiceManager.say("reloaded: new connections use configuration \(server.generation) "
                        + "(policy \(configuration.policyLabel))")
                    for warning in warnings { ServiceManager.say("reload: \(warning)") }
                    if let identity = configuration.listeners.tlsIdentity {
                        ServiceManager.say("reload: new TLS connections get the certificate of \(ServiceLifecycle.describe(identity))")
                    }
                    ServiceManager.ready(status: status())
                case .failure(let error):
                    server.reloadFailed()
                    let problem = (error as? CommandFailure)?.message ?? "\(error)"
                    lastReload = "failed at \(ServiceLifecycle.clockTime())"
                    ServiceManager.say("reload failed, keeping configuration \(server.generation): \(problem)")
                    ServiceManager.ready(status: "Reload failed: \(problem)")
                }
            }
        }
    }

    /// The TLS listeners' certificate for a log line: its subject and end of validity.
    static func describe(_ identity: TLSServerContext) -> String {
        var text = identity.subject.isEmpty ? identity.certificateFile : identity.subject
        if let notAfter = identity.notAfter {
            let formatter = DateFormatter()
            formatter.dateFormat = "yyyy-MM-dd"
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "UTC")
            text += notAfter < Date() ? " (EXPIRED on \(formatter.string(from: notAfter)))"
                                      : " (valid until \(formatter.string(from: notAfter)))"
        }
        return text
    }

    private static func clockTime() -> String {
        let formatter = DateFormatter()
        formatter.dateFormat = "yyyy-MM-dd'T'HH:mm:ssZ"
        formatter.locale = Locale(identifier: "en_US_POSIX")
        return formatter.string(from: Date())
    }

    // MARK: stop

    private func stop(grace: Double, signal name: String) {
        if upgrade.draining, !stopping {
            // Handed over: this process is already draining under the grace period.
            stopping = true
            return ServiceManager.say("\(name): already draining after the upgrade; a second \(name) exits at once")
        }
        upgrade.abandon(name)
        if stopping {
            // Asked twice: do not wait for connections any longer; the log gets one second. No
            // run-stop: the connections still open end unlogged, so the run is left incomplete.
            let unwritten = server.flushLog(within: 1)
            if unwritten > 0 { ServiceManager.say("\(unwritten) decision records were not written: the log did not drain") }
            Foundation.exit(0)
        }
        stopping = true
        let open = server.openConnections
        ServiceManager.stopping(status: "Stopping (\(name)): draining \(open) connections for up to \(grace) s")
        server.stop(grace: grace, listenersClosed: {
            ServiceManager.say("\(name): stopping; \(open) connections get up to \(grace) s to finish")
        }) { [server, pidFile] outcome in
            if outcome.cut > 0 {
                ServiceManager.say("stopped; \(outcome.cut) connections were cut at the end of the grace period")
            }
            if outcome.unwrittenRecords > 0 {
                ServiceManager.say("\(outcome.unwrittenRecords) decision records were not written: the log did not "
                                   + "drain within the grace period")
            }
            let dropped = server.logState.droppedTotal
            if dropped > 0 { ServiceManager.say("decision log: \(dropped) records were dropped since the start") }
            if let pidFile { PIDFile.remove(pidFile) }
            Foundation.exit(0)
        }
    }

    // MARK: watchdog

    /// WATCHDOG=1 at half the interval the service manager asked for, but only while every event loop
    /// keeps running: a stuck loop stops the pings and systemd restarts the service.
    private func startWatchdog() {
        guard let interval = ServiceManager.watchdogInterval else { return }
        let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "atsgate.watchdog"))
        let period = DispatchTimeInterval.microseconds(Int(interval / 2 * 1_000_000))
        timer.schedule(deadline: .now(), repeating: period)
        timer.setEventHandler { [server] in
            if server.health.healthy { ServiceManager.watchdog() }
        }
        timer.resume()
        watchdogTimer = timer
    }
}
