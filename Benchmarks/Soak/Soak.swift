// The endurance run (scripts/soak): the release daemon under mixed load with faults for N minutes,
// sampled every 10 s. It fails when a sampled series grows without bound over the second half, when
// a request is neither answered nor logged, or when the decision log's record count differs from
// the requests sent; it prints a table and writes an SVG chart. Not a test: a run on a loaded
// machine says little about latency, but leaks and lost records show on any machine.
import ArgumentParser
import Foundation
import Glibc
import Synchronization

@main
struct Soak: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "soak",
        abstract: "Runs atsgate under mixed load with faults and fails on growth or a lost request (see Benchmarks/README.md).")

    @Option(help: "How long the load runs, in minutes (fractions allowed).")
    var minutes = 30.0

    @Option(help: ArgumentHelp("Seconds between samples.", valueName: "seconds"))
    var interval = 10.0

    @Option(help: ArgumentHelp("The daemon to run (default: .build/release/atsgate).", valueName: "path"))
    var binary: String?

    @Option(help: ArgumentHelp("Where to write the SVG chart.", valueName: "file"))
    var svg = "soak.svg"

    @Option(name: .customLong("reload-every"), help: ArgumentHelp(
        "Seconds between SIGHUPs (0: none, to tell a reload's share of a growth from the load's).", valueName: "seconds"))
    var reloadEvery = 60.0

    @Option(help: "The daemon's open-file limit (ulimit -n): low, so that the burst exhausts it.")
    var descriptors = 256

    @Option(help: "Connections the descriptor burst opens at once (more than --descriptors).")
    var burst = 320

    @Flag(help: "Keep the run's directory (the decision log, the daemon's stderr, nginx's files).")
    var keep = false

    func validate() throws {
        guard minutes > 0, interval >= 1 else { throw ValidationError("--minutes must be positive and --interval at least 1 s") }
        guard reloadEvery == 0 || reloadEvery >= 5 else { throw ValidationError("--reload-every must be 0 or at least 5 s") }
        guard descriptors >= 64, burst > 0 else { throw ValidationError("--descriptors must be at least 64, --burst positive") }
    }

    func run() throws {
        raiseOwnDescriptorLimit()
        let binary = binary ?? Soak.repositoryRoot() + "/.build/release/atsgate"
        let world: World
        let daemon: Daemon
        do {
            world = try World()
            daemon = try Daemon(binary: binary, world: world, descriptorLimit: descriptors)
            try daemon.start()
        } catch {
            Child.stopAll()
            FileHandle.standardError.write(Data("soak: \(error)\n".utf8))
            throw ExitCode(2)
        }
        Soak.stopChildrenOnSignals()
        let passed = Run(options: self, world: world, daemon: daemon).go()
        Child.stopAll()
        world.stop()
        if keep { say("kept \(world.directory)") } else { try? FileManager.default.removeItem(atPath: world.directory) }
        if !passed { throw ExitCode(1) }
    }

    private func raiseOwnDescriptorLimit() {
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        limit.rlim_cur = limit.rlim_max
        setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }

    /// The directory above Benchmarks/, from this executable's place in .build.
    static func repositoryRoot() -> String {
        var url = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        for _ in 0..<6 {
            url.deleteLastPathComponent()
            if FileManager.default.fileExists(atPath: url.path + "/Benchmarks/Soak/Soak.swift") { return url.path }
        }
        return FileManager.default.currentDirectoryPath
    }

    /// Ctrl-C or a SIGTERM stops the daemon, nginx and curl too.
    static func stopChildrenOnSignals() {
        for number in [SIGINT, SIGTERM] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                Child.stopAll()
                Glibc.exit(130)
            }
            source.resume()
            signalSources.append(source)
        }
    }

    /// Kept for the life of the process; touched on the main thread only, at the start.
    nonisolated(unsafe) private static var signalSources: [DispatchSourceSignal] = []
}

/// One soak run: the workers, the schedule of samples, reloads and bursts, then the verdict.
final class Run: @unchecked Sendable {
    let options: Soak
    let world: World
    let daemon: Daemon
    let ledger = Ledger()
    let load: Load
    let faults: Faults
    let duration: Double
    private let running = Atomic<Bool>(true)
    private let workers = Atomic<Int>(0)
    private var samples: [Sample] = []
    private var reloads: [(time: Double, ok: Bool)] = []
    private var bursts: [(time: Double, connected: Int, answered: Int)] = []
    private let burstLock = NSLock()

    init(options: Soak, world: World, daemon: Daemon) {
        self.options = options
        self.world = world
        self.daemon = daemon
        load = Load(world: world, daemon: daemon, ledger: ledger)
        faults = Faults(world: world, daemon: daemon, ledger: ledger)
        duration = options.minutes * 60
    }

    /// Reloads every minute from 15 s on; bursts every 5 minutes from 2 min on, or once at 12 s in a
    /// run shorter than 4 minutes; each just after a sample, so samples see the daemon after it came
    /// back rather than in the middle of the burst. The first reload comes early because it is the
    /// one that grows the heap by a step (a second generation of policies and trust store beside the
    /// first, until the old one's connections end; later reloads reuse the memory): in a one-minute
    /// run's second half, that one step alone would look like a climb.
    private var reloadTimes: [Double] {
        options.reloadEvery > 0 ? stride(from: 15.0, to: duration, by: options.reloadEvery).map { $0 } : []
    }
    private var burstTimes: [Double] {
        duration < 240 ? [12] : stride(from: 122.0, to: duration - 20, by: 300).map { $0 }
    }

    func go() -> Bool {
        say("atsgate \(daemon.binary) on 127.0.0.1:\(daemon.port) (admin \(daemon.adminPort)), ulimit -n \(daemon.descriptorLimit), "
            + "\(Int(duration)) s of load, a sample every \(Int(options.interval)) s; slow DNS on 127.0.0.1:\(world.resolver.port) (UDP); "
            + "run directory \(world.directory)")
        for note in faults.skipped { say("fault skipped: \(note)") }
        let hitsBefore = daemon.metric("atsgate_probe_cache_total{result=\"hit\"") ?? 0
        let missesBefore = daemon.metric("atsgate_probe_cache_total{result=\"miss\"") ?? 0
        samples.append(Sampler.take(pid: daemon.pid, proxyPort: daemon.port, time: 0))
        startWorkers()
        var pendingReloads = reloadTimes
        var pendingBursts = burstTimes
        var nextSample = options.interval
        var generation = 0
        while ledger.elapsed < duration {
            usleep(50_000)
            guard daemon.isRunning else {
                say("atsgate exited during the run: \(daemon.stderr.suffix(500))")
                running.store(false, ordering: .relaxed)
                break
            }
            let now = ledger.elapsed
            if now >= nextSample {
                samples.append(Sampler.take(pid: daemon.pid, proxyPort: daemon.port, time: nextSample))
                let last = samples[samples.count - 1]
                say("\(Int(nextSample)) s: \(last.descriptors) fds, \(last.rssKiB / 1024) MiB, \(last.threads) threads, "
                    + "\(last.closeWait) CLOSE_WAIT, \(ledger.all.count) requests so far")
                nextSample += options.interval
            }
            if let time = pendingReloads.first, now >= time {
                pendingReloads.removeFirst()
                generation += 1
                try? world.writePolicies(generation: generation)
                let ok = daemon.reload()
                reloads.append((time, ok))
                say("\(Int(time)) s: SIGHUP, \(ok ? "reloaded" : "NO RELOAD SEEN")")
            }
            if let time = pendingBursts.first, now >= time {
                pendingBursts.removeFirst()
                Thread.detachNewThread { [self] in
                    let (connected, answered) = faults.burst(count: options.burst, hold: 3)
                    burstLock.withLock { bursts.append((time, connected, answered)) }
                    say("\(Int(time)) s: descriptor burst, \(connected) connections, \(answered) answered while held")
                }
            }
        }
        let daemonDied = !daemon.isRunning
        running.store(false, ordering: .relaxed)
        let deadline = Date().addingTimeInterval(40)
        while workers.load(ordering: .relaxed) > 0, Date() < deadline { usleep(50_000) }
        if workers.load(ordering: .relaxed) > 0 { say("warning: \(workers.load(ordering: .relaxed)) workers still busy after 40 s") }
        // At rest: no client is connected, so no socket to a client and none in CLOSE_WAIT may remain.
        var rest = Sampler.take(pid: daemon.pid, proxyPort: daemon.port, time: ledger.elapsed)
        let settle = Date().addingTimeInterval(20)
        while Date() < settle, rest.clientSockets + rest.closeWait > 0 || (daemon.metric("atsgate_connections_open") ?? 0) > 0 {
            usleep(250_000)
            rest = Sampler.take(pid: daemon.pid, proxyPort: daemon.port, time: ledger.elapsed)
        }
        let hits = (daemon.metric("atsgate_probe_cache_total{result=\"hit\"") ?? 0) - hitsBefore
        let misses = (daemon.metric("atsgate_probe_cache_total{result=\"miss\"") ?? 0) - missesBefore
        let status = daemonDied ? -1 : daemon.stop()
        Sampler.fill(&samples, from: ledger)
        let trends = Trend.all(samples, from: duration / 2)
        let accounting = Accounting(log: daemon.logPath, ledger: ledger)
        let report = Verdict(run: self, samples: samples, rest: rest, trends: trends, accounting: accounting,
                             reloads: reloads, bursts: burstLock.withLock { bursts }, verdicts: (hits, misses),
                             exitStatus: status, daemonDied: daemonDied)
        print(report.text(), terminator: "")
        let chart = Chart(samples: samples, trends: trends, reloads: reloads.map(\.time),
                          bursts: burstLock.withLock { bursts.map(\.time) }, duration: duration,
                          title: "atsgate soak, \(Int(duration)) s: " + (report.passed ? "PASS" : "FAIL - " + report.failures.joined(separator: "; ")))
        do {
            try chart.svg().write(toFile: options.svg, atomically: true, encoding: .utf8)
            say("wrote \(options.svg)")
        } catch {
            say("cannot write \(options.svg): \(error)")
        }
        if !report.passed { say("the daemon's stderr: \(daemon.stderr.suffix(1500))") }
        return report.passed
    }

    private func startWorkers() {
        func worker(_ body: @escaping @Sendable (inout SystemRandomNumberGenerator, Int) -> Void, pause: Double) {
            workers.add(1, ordering: .relaxed)
            Thread.detachNewThread { [self] in
                var random = SystemRandomNumberGenerator()
                var sequence = 0
                while running.load(ordering: .relaxed) {
                    body(&random, sequence)
                    sequence += 1
                    usleep(useconds_t(pause * 1_000_000))
                }
                workers.add(-1, ordering: .relaxed)
            }
        }
        // About 100 requests a second: enough to run through a pool's worth of connections many
        // times a minute, little enough to share two cores with the load's own clients and origins.
        for user in ["alice", "bob", "carol", "bob"] {
            worker({ [load] random, _ in load.forwardSession(user: user, random: &random) }, pause: 0.1)
        }
        for _ in 0..<2 { worker({ [load] _, _ in load.tunnel() }, pause: 0.1) }
        for version in ["1.2", "1.3"] {
            worker({ [load] random, sequence in load.tls(version: version, sequence: sequence, random: &random) }, pause: 0.2)
        }
        let rotation = faults.rotation
        worker({ [faults] _, sequence in faults.run(rotation[sequence % rotation.count], sequence: sequence) }, pause: 0.3)
    }
}
