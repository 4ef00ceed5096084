import Foundation

/// A proxy the benchmark started on 127.0.0.1:port.
struct RunningProxy {
    let column: Column
    let run: AtsgateRun
    let port: Int
    /// atsgate's admin listener (TLS runs only), for the verdict cache's counters.
    let adminPort: Int?
    /// The proxy's TLS listener (atsgate's --listen-tls, squid's https_port), for the row of
    /// tunnels with TLS to the proxy; nil for the proxies that have none.
    let tlsPort: Int?
    var process: Spawned
    let logPath: String
    var address: String { "127.0.0.1:\(port)" }
    var tlsAddress: String? { tlsPort.map { "127.0.0.1:\($0)" } }
}

/// How each proxy is started. Configs come from Benchmarks/config (see Benchmarks/README.md).
extension Bench {
    func startProxy(_ column: Column, port: Int, run: AtsgateRun = .plain, adminPort: Int? = nil,
                    tlsPort: Int? = nil) -> RunningProxy? {
        let log = tmp + "/" + (column == .atsgate && run != .plain ? "atsgate-\(run.rawValue)" : column.rawValue) + ".log"
        // The plain rows' atsgate and squid get a TLS listener beside the plain one.
        let tlsPort = tlsPort ?? (run == .plain && (column == .squid || (column == .atsgate && atsgateHasListenTLS)) ? takePort() : nil)
        do {
            let process = try spawnProxy(column, port: port, run: run, adminPort: adminPort, tlsPort: tlsPort, log: log)
            guard Loopback.waitOpen(port, while: process), tlsPort.map({ Loopback.waitOpen($0, while: process) }) ?? true else {
                say("\(column.rawValue)\(run == .plain ? "" : " (\(run.rawValue))") did not start on 127.0.0.1:\(port):")
                FileHandle.standardError.write(Data(readText(log).split(separator: "\n").prefix(20).joined(separator: "\n").utf8))
                process.stop()
                return nil
            }
            return RunningProxy(column: column, run: run, port: port, adminPort: adminPort, tlsPort: tlsPort,
                                process: process, logPath: log)
        } catch {
            say("\(column.rawValue) did not start: \(error)")
            return nil
        }
    }

    /// The same proxy again on the same port (after it died).
    func restart(_ proxy: RunningProxy) -> RunningProxy? {
        startProxy(proxy.column, port: proxy.port, run: proxy.run, adminPort: proxy.adminPort, tlsPort: proxy.tlsPort)
    }

    private func spawnProxy(_ column: Column, port: Int, run: AtsgateRun, adminPort: Int?, tlsPort: Int?,
                            log: String) throws -> Spawned {
        switch column {
        case .direct:
            throw BenchmarkError("direct is no proxy")
        case .tinyproxy:
            try render("tinyproxy.conf", to: tmp + "/tinyproxy.conf", port: port)
            return try Command.start("tinyproxy", ["-d", "-c", tmp + "/tinyproxy.conf"], stdout: log, stderr: log)
        case .squid:
            // https_port: TLS to the proxy (Debian's squid is built with GnuTLS, which serves it).
            let https = tlsPort.map { "https_port 127.0.0.1:\($0) tls-cert=\(tlsDirectory)/server.pem tls-key=\(tlsDirectory)/server.key" }
            try render("squid.conf", to: tmp + "/squid.conf", port: port, extra: ["@HTTPS_PORT@": https ?? ""])
            return try Command.start("squid", ["-N", "-f", tmp + "/squid.conf"], stdout: log, stderr: log)
        case .privoxy:
            try render("privoxy.conf", to: tmp + "/privoxy.conf", port: port)
            try render("privoxy-benchmark.action", to: tmp + "/privoxy-benchmark.action")
            return try Command.start("privoxy", ["--no-daemon", tmp + "/privoxy.conf"], stdout: log, stderr: log)
        case .trafficserver:
            let dir = try trafficServerRunroot(port: port)
            return try Command.start(
                "traffic_server", ["--run-root=\(dir)/runroot.yaml"], stdout: log, stderr: log, directory: dir)
        case .floor:
            return try Command.start(floor, ["--listen", "127.0.0.1:\(port)"], stdout: log, stderr: log)
        case .atsgate:
            var arguments = ["run", "--listen", "127.0.0.1:\(port)", "--log-format", "json"]
            // The decision log is on; it goes to /dev/null, except the check's, which names the refusals.
            var decisions = "/dev/null"
            if run == .plain || run.loops != nil {
                arguments += ["--connect-port", String(Bench.originPort)]
                if let tlsPort {
                    arguments += ["--listen-tls", "127.0.0.1:\(tlsPort)", "--listen-cert", tlsDirectory + "/server.pem",
                                  "--listen-key", tlsDirectory + "/server.key"]
                }
            } else {
                arguments += ["--connect-port", String(Bench.tlsPort), "--local-network", "192.0.2.0/24",
                              "--certificate-check", "before"]
                if let adminPort { arguments += ["--admin", "127.0.0.1:\(adminPort)"] }
                let ca = ["--ca-file", tlsDirectory + "/ca.pem"]
                switch run {
                case .on: arguments += ["--tls-inspection", "on"] + ca
                case .off: arguments += ["--tls-inspection", "off"] + ca
                case .cold: arguments += ["--tls-inspection", "on"] + ca + ["--verdict-ttl", "0.001"]
                case .untrusted:
                    arguments += ["--tls-inspection", "on"]
                    decisions = tmp + "/atsgate-untrusted.decisions"
                case .plain, .oneLoop, .twoLoops: break
                }
            }
            if let loops = run.loops {
                // Pinned to the first CPUs it may use, one per loop (Benchmarks/ProxyBenchmark/LoopScaling.swift).
                let cpus = Bench.allowedCPUs().prefix(loops).map(String.init).joined(separator: ",")
                return try Command.start("taskset", ["-c", cpus, atsgate] + arguments + atsgateArguments + ["--loops", String(loops)],
                                         stdout: decisions, stderr: log)
            }
            return try Command.start(atsgate, arguments + atsgateArguments, stdout: decisions, stderr: log)
        }
    }

    /// Traffic Server's own runroot in the run's directory: Debian's config files with ours over
    /// them (Benchmarks/config/trafficserver), no cache disk, no remap rules.
    private func trafficServerRunroot(port: Int) throws -> String {
        let dir = tmp + "/trafficserver"
        let files = FileManager.default
        try? files.removeItem(atPath: dir)
        for sub in ["etc", "run", "log", "cache"] {
            try files.createDirectory(atPath: dir + "/" + sub, withIntermediateDirectories: true)
        }
        for name in (try? files.contentsOfDirectory(atPath: "/etc/trafficserver")) ?? [] {
            try? files.copyItem(atPath: "/etc/trafficserver/" + name, toPath: dir + "/etc/" + name)
        }
        for (template, target) in [("records.config", "etc/records.config"), ("ip_allow.yaml", "etc/ip_allow.yaml"),
                                   ("runroot.yaml", "runroot.yaml")] {
            try? files.removeItem(atPath: dir + "/" + target)
            try render("trafficserver/" + template, to: dir + "/" + target, port: port, directory: dir)
        }
        for empty in ["storage.config", "remap.config"] {
            try? files.removeItem(atPath: dir + "/etc/" + empty)
            try "".write(toFile: dir + "/etc/" + empty, atomically: false, encoding: .utf8)
        }
        return dir
    }

    /// One line naming the version, for "Versions:" and the JSON.
    func version(of column: Column) -> String {
        func first(_ command: String, _ arguments: [String]) -> String {
            guard let result = Command.run(command, arguments, timeout: 10, scratch: tmp + "/version") else { return "?" }
            let text = result.stdout.isEmpty ? result.stderr : result.stdout
            return text.split(separator: "\n").first.map(String.init) ?? "?"
        }
        switch column {
        case .direct: return "nginx " + (first("nginx", ["-v"]).components(separatedBy: "nginx/").last ?? "?")
        case .tinyproxy: return first("tinyproxy", ["-v"])
        case .squid: return first("squid", ["-v"]).replacingOccurrences(of: "Squid Cache: Version", with: "squid")
        case .privoxy: return "privoxy " + (first("privoxy", ["--version"]).split(separator: " ").dropFirst(2).first.map(String.init) ?? "?")
        case .trafficserver: // "Traffic Server 9.2.9 Apr  4 2026 ..."
            return first("traffic_server", ["--version"]).split(separator: " ").prefix(3).joined(separator: " ")
        case .floor: return "floor (Benchmarks/floor/floor.c, one epoll thread per core, splice)"
        case .atsgate:
            let line = first(atsgate, ["--version"])
            return line == "?" ? first(atsgate, ["version"]) : line
        }
    }

    /// The column's header: the proxy and its major.minor version.
    func header(of column: String) -> String {
        func majorMinor(_ line: String) -> String {
            let version = line.split(separator: " ").first { $0.first?.isNumber == true } ?? ""
            return version.split(separator: ".").prefix(2).joined(separator: ".")
        }
        let versionLine = results.versions.first { $0.0 == column }?.1 ?? ""
        switch column {
        case "direct": return "direct (no proxy)"
        case "tinyproxy": return "tinyproxy \(majorMinor(versionLine))"
        case "squid": return "squid \(majorMinor(versionLine))"
        case "privoxy": return "privoxy \(majorMinor(versionLine))"
        case "trafficserver": return "Traffic Server \(majorMinor(versionLine))"
        case "floor": return "floor proxy"
        case "atsgate_off": return "atsgate, TLS inspection off"
        default: return column
        }
    }
}
