// The proxy benchmark of BENCHMARKS.md: direct (no proxy), tinyproxy, squid, privoxy, Apache Traffic
// Server, the floor proxy (Benchmarks/floor) and atsgate side by side on 127.0.0.1 against one nginx
// origin, then atsgate's ratios against the targets and what its TLS inspection costs. A benchmark,
// never a test: it prints numbers and never fails on them, and CI does not run it (it only builds).
// Run it with scripts/benchmark, which installs the peers and builds atsgate and this driver in
// release mode; Benchmarks/README.md says what each row means.
import ArgumentParser
import Foundation
import Glibc

@main
struct ProxyBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "benchmark",
        abstract: "Prints the proxy table of BENCHMARKS.md in one run (see Benchmarks/README.md).",
        discussion: """
            Progress and the raw loadgen lines go to stderr, prefixed with #; the table (Markdown) goes to \
            stdout. Environment: ATSGATE_BIN=PATH measures that binary as the atsgate column.
            """)

    @Flag(help: "Short measurements (2 s each), for a smoke run.")
    var quick = false

    @Option(help: ArgumentHelp(
        "Columns to measure, comma-separated (default: all).",
        discussion: "From: \(Column.allCases.map(\.rawValue).joined(separator: ","))", valueName: "list"))
    var only: String?

    @Flag(name: .customLong("no-tls"), help: "Skip the TLS rows and the TLS inspection block.")
    var noTLS = false

    @Flag(name: .customLong("tls-only"), help: "Only the TLS rows and the TLS inspection block.")
    var tlsOnly = false

    @Option(help: ArgumentHelp("Also write the numbers as JSON.", valueName: "file"))
    var json: String?

    @Option(help: "Idle tunnels to hold for the RSS row (try 10000).")
    var idle = 1500

    @Option(name: .customLong("atsgate-arguments"), help: ArgumentHelp(
        "Extra arguments for every atsgate the run starts, split at spaces (e.g. destination ACL rules).",
        valueName: "arguments"))
    var atsgateArguments = ""

    @Option(help: ArgumentHelp("Seconds per measurement (default 10, or 2 with --quick).", valueName: "seconds"))
    var duration: Int?

    @Flag(help: "Also count each proxy's system calls per tunnel (strace -c, a separate 2 s tunnels run).")
    var syscalls = false

    @Option(help: ArgumentHelp("""
        Runs everything N times, column after column each round, and prints each figure as the median \
        of the rounds with its spread (min-max) in a table of its own.
        """, valueName: "N"))
    var `repeat` = 1

    @Flag(name: .customLong("loop-scaling"), help: """
        Also atsgate's tunnels with 1 event loop pinned to 1 CPU against 2 loops on 2 CPUs (taskset, --loops).
        """)
    var loopScaling = false

    @Flag(name: .customLong("no-build"), help: "Use the existing .build/release/atsgate (scripts/benchmark reads this).")
    var noBuild = false

    /// scripts/benchmark says so when `swift build` failed: the atsgate column is then n/a.
    @Flag(name: .customLong("atsgate-build-failed"), help: .hidden)
    var atsgateBuildFailed = false

    var columns: [Column] {
        guard let only else { return Column.allCases }
        let wanted = Set(only.split(separator: ",").compactMap { Column(rawValue: String($0)) })
        return Column.allCases.filter { wanted.contains($0) }
    }

    func validate() throws {
        if noTLS && tlsOnly { throw ValidationError("--no-tls and --tls-only exclude each other") }
        if idle <= 0 { throw ValidationError("--idle needs a positive count") }
        if let duration, duration <= 0 { throw ValidationError("--duration needs whole seconds above 0") }
        if !(1...50).contains(`repeat`) { throw ValidationError("--repeat needs 1 to 50 rounds") }
        if loopScaling && !columns.contains(.atsgate) { throw ValidationError("--loop-scaling measures atsgate: add it to --only") }
        for name in (only ?? "").split(separator: ",") where Column(rawValue: String(name)) == nil {
            throw ValidationError("unknown column '\(name)' (known: \(Column.allCases.map(\.rawValue).joined(separator: " ")))")
        }
    }

    func run() throws {
        ProcessRegistry.shared.stopOnSignals()
        defer { ProcessRegistry.shared.stopAll() }
        do {
            let bench = try Bench(options: self)
            bench.warnAboutStrangers()
            bench.warnAboutDescriptors()
            try bench.compileTools()
            bench.checkAtsgate()
            try bench.startOrigin()
            let started = Date()
            var rounds: [Results] = []
            for round in 1...`repeat` {
                if `repeat` > 1 { say("round \(round) of \(`repeat`)") }
                bench.results = Results()
                bench.measureColumns()
                rounds.append(bench.results)
            }
            bench.results = Results.combined(rounds)
            var usage = rusage()
            getrusage(RUSAGE_SELF.rawValue, &usage)
            let own = Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
                + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
            say(String(format: "the driver itself used %.1f s of CPU", own))
            let report = Report(bench: bench, started: started, seconds: Int(Date().timeIntervalSince(started)))
            print(report.text(), terminator: "")
            if let json {
                try report.json().write(to: URL(fileURLWithPath: json))
                say("wrote \(json)")
            }
        } catch let error as BenchmarkError {
            FileHandle.standardError.write(Data("benchmark: \(error)\n".utf8))
            throw ExitCode(2)
        }
    }
}

extension Bench {
    var plainSteps: [Step] { [.tps, .tpsProxyTLS] + (countSystemCalls ? [.syscalls] : []) + [.bulk1, .bulk4, .fwd, .rss] }
    static let tlsSteps: [Step] = [.tls13, .tls12]

    /// Each column in turn, each proxy alone on the machine with the origin and the load generator.
    func measureColumns() {
        for column in columns {
            if column == .atsgate, let atsgateNote {
                results.setNote("atsgate", "all", atsgateNote)
                results.setNote("atsgate_off", "all", atsgateNote)
                continue
            }
            results.versions.append((column.rawValue, version(of: column)))
            let load = ProcFS.OtherLoad()
            let cpuBefore = ProcFS.cpuByProcess()
            switch column {
            case .direct: measureDirect()
            case .atsgate: measureAtsgate()
            default: measurePeer(column)
            }
            results.otherLoad[column.rawValue] = load.percent()
            results.otherProcesses[column.rawValue] = ProcFS.busiestOthers(since: cpuBefore)
            say("\(column.rawValue): other processes used \(Int(results.otherLoad[column.rawValue]!.rounded()))% of the machine's CPU meanwhile")
            sleepPause()
        }
    }

    private func measureDirect() {
        say("measuring direct (nginx on 127.0.0.1:\(Bench.originPort)\(tlsRows.tls ? " and 127.0.0.1:\(Bench.tlsPort)" : ""))")
        let origin = "127.0.0.1:\(Bench.originPort)"
        if tlsRows.plain {
            measureTunnels("direct", address: origin, proxy: nil); sleepPause()
            measureBulk("direct", address: origin, streams: 1, direct: true); sleepPause()
            measureBulk("direct", address: origin, streams: 4, direct: true); sleepPause()
            measureForward("direct", proxy: nil); sleepPause()
        }
        if tlsRows.tls {
            let tlsOrigin = "127.0.0.1:\(Bench.tlsPort)"
            warmTLS(tlsOrigin, direct: true)
            measureTLS("direct", address: tlsOrigin, version: "1.3", proxy: nil); sleepPause()
            measureTLS("direct", address: tlsOrigin, version: "1.2", proxy: nil); sleepPause()
        }
    }

    private func measurePeer(_ column: Column) {
        let port = takePort()
        say("measuring \(column.rawValue) on 127.0.0.1:\(port)")
        guard let started = startProxy(column, port: port) else {
            results.setNote(column.rawValue, "all", "\(column.rawValue) did not start")
            return
        }
        // nil once it died and could not be started again.
        var proxy: RunningProxy? = started
        if tlsRows.plain { proxy = runSteps(column.rawValue, proxy: started, plainSteps) }
        if tlsRows.tls {
            if let current = proxy {
                warmTLS(current.address)
                proxy = runSteps(column.rawValue, proxy: current, Bench.tlsSteps)
            } else {
                for step in Bench.tlsSteps { results.setNote(column.rawValue, step.rawValue, "proxy down") }
            }
        }
        proxy?.process.stop()
    }

    private func measureAtsgate() {
        if tlsRows.plain {
            let port = takePort()
            say("measuring atsgate on 127.0.0.1:\(port)")
            if let proxy = startProxy(.atsgate, port: port) {
                runSteps("atsgate", proxy: proxy, plainSteps)?.process.stop()
            } else {
                for step in plainSteps { results.setNote("atsgate", step.rawValue, "atsgate did not start") }
            }
            if loopScaling { measureLoopScaling() }
        }
        guard tlsRows.tls else { return }
        if atsgateTLSNote != nil {
            for step in Bench.tlsSteps {
                results.setNote("atsgate", step.rawValue, "no TLS flags")
                results.setNote("atsgate_off", step.rawValue, "no TLS flags")
            }
            return
        }
        // The three runs are up at once, each its own process (its own verdict cache) on its own
        // ports, and measured in turn for each version, off, on and cold next to each other in time:
        // the drift of a shared machine then weighs least on the on/off ratio.
        var running: [AtsgateRun: RunningProxy] = [:]
        var offPort: Int?
        for run in [AtsgateRun.off, .on, .cold] {
            let port = takePort()
            if run == .off { offPort = port }
            let admin = atsgateHasAdmin ? takePort() : nil
            say("starting atsgate, TLS inspection \(run.rawValue), on 127.0.0.1:\(port)\(admin.map { " (admin 127.0.0.1:\($0))" } ?? "")")
            if let proxy = startProxy(.atsgate, port: port, run: run, adminPort: admin) {
                running[run] = proxy
                warmTLS(proxy.address)
            } else {
                for step in Bench.tlsSteps { results.setNote(run.column, step.rawValue, "atsgate did not start") }
                results.log.append("atsgate (\(run.rawValue)) did not start")
            }
        }
        // Off first for TLS 1.3, on first for TLS 1.2: neither is always the one measured first.
        for step in Bench.tlsSteps {
            for run in step == .tls12 ? [AtsgateRun.on, .off, .cold] : [.off, .on, .cold] {
                guard let proxy = running[run] else { continue }
                running[run] = runSteps(run.column, proxy: proxy, [step])
            }
        }
        for proxy in running.values { proxy.process.stop() }
        if let offPort { checkUntrusted(port: offPort) }
    }
}
