import Foundation
import Glibc

/// What one run knows: its options, its temporary directory, the programs it runs, and the results.
final class Bench {
    static let originPort = 18080
    static let tlsPort = 18443
    static let firstProxyPort = 13128

    let columns: [Column]
    let tlsRows: TLSRows
    let duration: Int
    let quick: Bool
    let idleCount: Int
    /// `--syscalls`: strace each proxy through a short tunnels run.
    let countSystemCalls: Bool
    /// The pause between measurements, so one's closing connections do not weigh on the next.
    let pause: Double
    /// The repository (Benchmarks/config, Benchmarks/loadgen, Benchmarks/floor).
    let root: String
    let tmp: String
    let loadgen: String
    let floor: String
    let atsgate: String
    /// `--atsgate-arguments`: added to every atsgate command line.
    let atsgateArguments: [String]
    /// Why atsgate's column is n/a (its build failed, or `atsgate run` is not there), or nil.
    var atsgateNote: String?
    /// Which TLS flags `atsgate run` lacks, or nil when it has them all.
    var atsgateTLSNote: String?
    var atsgateHasAdmin = false
    /// `atsgate run --listen-tls` exists (the row of tunnels with TLS to the proxy).
    var atsgateHasListenTLS = false
    /// The current round's numbers; after the last round, all rounds folded together (`--repeat`).
    var results = Results()
    /// `--loop-scaling`: 1 loop on 1 CPU against 2 loops on 2 CPUs.
    let loopScaling: Bool
    /// The origin's nginx (its master; the workers are its children).
    var originPID: pid_t?
    /// /proc/loadavg's three averages when the run began.
    let loadAverageAtStart: String
    private var nextPort = Bench.firstProxyPort

    init(options: ProxyBenchmark) throws {
        columns = options.columns
        tlsRows = options.tlsOnly ? .only : (options.noTLS ? .off : .on)
        duration = options.duration ?? (options.quick ? 2 : 10)
        quick = options.quick
        idleCount = options.idle
        countSystemCalls = options.syscalls
        loopScaling = options.loopScaling
        pause = options.quick ? 0.5 : 1
        root = Bench.repositoryRoot()
        let template = "/tmp/atsgate-bench.XXXXXX"
        var bytes = Array(template.utf8CString)
        guard mkdtemp(&bytes) != nil else { throw BenchmarkError("mkdtemp failed") }
        tmp = String(decoding: bytes.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        chmod(tmp, 0o755)
        ProcessRegistry.shared.removeAtExit(tmp)
        loadgen = tmp + "/loadgen"
        floor = tmp + "/floor"
        let environment = ProcessInfo.processInfo.environment
        atsgate = environment["ATSGATE_BIN"] ?? root + "/.build/release/atsgate"
        atsgateArguments = options.atsgateArguments.split(separator: " ").map(String.init)
        if options.atsgateBuildFailed { atsgateNote = "atsgate build failed" }
        loadAverageAtStart = (ProcFS.read("/proc/loadavg") ?? "").split(separator: " ").prefix(3).joined(separator: " ")
    }

    /// The directory above Benchmarks/: from this executable's place in .build, or the working
    /// directory (scripts/benchmark runs it from the repository).
    private static func repositoryRoot() -> String {
        var url = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        for _ in 0..<6 {
            url.deleteLastPathComponent()
            if FileManager.default.fileExists(atPath: url.path + "/Benchmarks/loadgen/loadgen.c") { return url.path }
        }
        return FileManager.default.currentDirectoryPath
    }

    func selected(_ column: Column) -> Bool { columns.contains(column) }

    func takePort() -> Int {
        let port = Loopback.freePort(from: nextPort)
        nextPort = port + 1
        return port
    }

    func sleepPause() { usleep(useconds_t(pause * 1_000_000)) }

    /// A config file of Benchmarks/config with the run's values in: @DIR@, @ORIGIN_PORT@, @TLS_PORT@, @PORT@,
    /// and the `extra` placeholders.
    func render(_ template: String, to path: String, port: Int? = nil, directory: String? = nil,
                extra: [String: String] = [:]) throws {
        var text = try String(contentsOfFile: root + "/Benchmarks/config/" + template, encoding: .utf8)
            .replacingOccurrences(of: "@DIR@", with: directory ?? tmp)
            .replacingOccurrences(of: "@ORIGIN_PORT@", with: String(Bench.originPort))
            .replacingOccurrences(of: "@TLS_PORT@", with: String(Bench.tlsPort))
            .replacingOccurrences(of: "@PORT@", with: port.map(String.init) ?? "")
        for (placeholder, value) in extra { text = text.replacingOccurrences(of: placeholder, with: value) }
        try text.write(toFile: path, atomically: false, encoding: .utf8)
    }

    /// Compiles the load generator and the floor proxy with gcc into the run's directory.
    func compileTools() throws {
        let builds: [(String, [String])] = [
            ("loadgen", ["-O2", "-pthread", "-o", loadgen, root + "/Benchmarks/loadgen/loadgen.c", "-lssl", "-lcrypto"]),
            ("floor", ["-O2", "-pthread", "-o", floor, root + "/Benchmarks/floor/floor.c"]),
        ]
        for (name, arguments) in builds {
            guard let result = Command.run("gcc", arguments, timeout: 120, scratch: tmp + "/gcc-" + name),
                  result.status == 0
            else {
                throw BenchmarkError("cannot compile Benchmarks/\(name)/\(name).c: \(readText(tmp + "/gcc-\(name).err"))")
            }
        }
    }

    /// Whether `atsgate run` is the daemon (before it existed, ArgumentParser answered `run --help`
    /// with the root help and exit 0), and which of its TLS flags are there.
    func checkAtsgate() {
        guard selected(.atsgate), atsgateNote == nil else { return }
        let help = FileManager.default.isExecutableFile(atPath: atsgate)
            ? Command.run(atsgate, ["run", "--help"], timeout: 30, scratch: tmp + "/run-help") : nil
        guard let help, help.status == 0, help.stdout.contains("--listen") else {
            atsgateNote = "atsgate run not available"
            say("atsgate run not available: its column is n/a")
            return
        }
        atsgateHasListenTLS = help.stdout.contains("--listen-tls")
        guard tlsRows.tls else { return }
        let missing = ["--tls-inspection", "--certificate-check", "--ca-file", "--verdict-ttl", "--local-network"]
            .filter { !help.stdout.contains($0) }
        if !missing.isEmpty {
            atsgateTLSNote = "atsgate run has no " + missing.joined(separator: ", ")
            say("\(atsgateTLSNote!): its TLS rows are n/a")
        }
        atsgateHasAdmin = help.stdout.contains("--admin")
    }

    /// Warns about daemons of the same names that this run did not start: they take CPU from it.
    func warnAboutStrangers() {
        let names: Set = ["nginx", "squid", "tinyproxy", "privoxy", "traffic_server", "[TS_MAIN]", "traffic_manager"]
        let found = Set(ProcFS.allStats().map { ProcFS.commandName($0.pid) }.filter { names.contains($0) })
        for name in found.sorted() {
            say("warning: a \(name) not started by this benchmark is running; it may take CPU from the run")
        }
    }

    /// A proxy holds two descriptors per tunnel (client and upstream).
    func warnAboutDescriptors() {
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        limit.rlim_cur = limit.rlim_max
        setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        let needed = idleCount * 2 + 64
        if tlsRows.plain, limit.rlim_cur != rlim_t.max, needed > Int(limit.rlim_cur) {
            say("warning: the open-file limit is \(limit.rlim_cur) (hard limit; raising it needs CAP_SYS_RESOURCE): a proxy needs about \(needed) descriptors to hold \(idleCount) tunnels, expect errors in the idle row")
        }
    }
}
