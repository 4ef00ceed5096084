import Foundation
import Glibc

/// One measurement against a proxy (or the origin directly).
enum Step: String {
    case tps, tpsProxyTLS = "tps_tls", syscalls, bulk1, bulk4, fwd, rss, tls13, tls12

    var label: String {
        switch self {
        case .tps: "new tunnels/s"
        case .tpsProxyTLS: "new tunnels/s, TLS to the proxy"
        case .syscalls: "system calls per tunnel"
        case .bulk1: "bulk MB/s, 1 stream"
        case .bulk4: "bulk MB/s, 4 streams"
        case .fwd: "forward req/s"
        case .rss: "KiB RSS per idle tunnel"
        case .tls13: "TLS tunnels/s (TLS 1.3)"
        case .tls12: "TLS tunnels/s (TLS 1.2)"
        }
    }
}

/// `key=value key=value ...`, loadgen's result line.
func keyValues(_ line: String) -> [String: String] {
    var pairs: [String: String] = [:]
    for word in line.split(separator: " ") {
        let parts = word.split(separator: "=", maxSplits: 1)
        if parts.count == 2 { pairs[String(parts[0])] = String(parts[1]) }
    }
    return pairs
}

extension Bench {
    private var originTarget: String { "127.0.0.1:\(Bench.originPort)" }
    private var tlsTarget: String { "127.0.0.1:\(Bench.tlsPort)" }

    /// Runs loadgen to its end (under `launcher`, e.g. taskset, when given); its result line (the last
    /// line of stdout), or nil with the error logged.
    private func loadgenRun(_ arguments: [String], column: String, metric: String, what: String,
                            launcher: [String] = []) -> (line: String, stderr: String)? {
        let command = launcher + [loadgen] + arguments
        let result = Command.run(command[0], Array(command.dropFirst()), timeout: Double(duration + 60), scratch: tmp + "/lg")
        let line = result?.stdout.split(separator: "\n").last.map(String.init) ?? ""
        if line.isEmpty {
            results.setNote(column, metric, "loadgen failed")
            results.log.append("\(column), \(what): loadgen failed: \(String((result?.stderr ?? "").prefix(300)))")
            return nil
        }
        return (line, result?.stderr ?? "")
    }

    /// Counts a measurement's errors and keeps the first messages of each kind for the notes.
    private func noteErrors(_ column: String, _ metric: String, count: Int?, stderr: String, line: String) {
        results.setErrorCount(column, metric, count)
        guard let count, count > 0 else { return }
        results.setNote(column, metric, "\(count) errors")
        results.log.append("\(column), \(metric): \(line)")
        results.log += stderr.split(separator: "\n").prefix(6).map { "    " + $0 }
    }

    private func cpuMicroseconds(from before: Double, to after: Double, per count: Int?) -> Double? {
        guard let count, count > 0 else { return nil }
        return (after - before) * 1e6 / Double(count)
    }

    /// 8 threads: connect, CONNECT, GET /small with Connection: close, read to EOF, close. With
    /// `proxyTLS`, the same over the proxy's TLS listener (a full handshake with the proxy first, then
    /// everything inside that TLS): metrics `tps_tls`, `p50_tls`, `p99_tls`, `tps_tls_cpu_us`.
    /// `launcher`: a command loadgen runs under (`taskset`, for the loop-scaling rows).
    func measureTunnels(_ column: String, address: String, proxy: RunningProxy?, proxyTLS: Bool = false,
                        launcher: [String] = []) {
        let suffix = proxyTLS ? "_tls" : ""
        let metric = "tps" + suffix
        let cpu0 = proxy.map { ProcFS.treeCPUSeconds($0.process.pid) }
        let arguments = ["tunnels", "--proxy", address, "--target", originTarget, "--threads", "8",
                         "--duration", String(duration)] + (proxy == nil ? ["--direct"] : []) + (proxyTLS ? ["--proxy-tls"] : [])
        guard let (line, stderr) = loadgenRun(arguments, column: column, metric: metric, what: "tunnels",
                                              launcher: launcher) else { return }
        let kv = keyValues(line)
        let completed = kv["completed"].flatMap { Int($0) }
        if let proxy, let cpu0 {
            results[column, metric + "_cpu_us"] = cpuMicroseconds(
                from: cpu0, to: ProcFS.treeCPUSeconds(proxy.process.pid), per: completed)
        }
        if completed == 0 {
            results.setNote(column, metric, "nothing completed")
        } else {
            results[column, metric] = kv["rate"].flatMap { Double($0) }
            results[column, "p50" + suffix] = kv["p50_ms"].flatMap { Double($0) }
            results[column, "p99" + suffix] = kv["p99_ms"].flatMap { Double($0) }
        }
        noteErrors(column, metric, count: kv["errors"].flatMap { Int($0) }, stderr: stderr, line: line)
        say("\(column) tunnels\(proxyTLS ? " over TLS to the proxy" : ""): \(line)")
    }

    /// The tunnels workload again for 2 s with `strace -c -f` attached to the proxy and its processes:
    /// how many system calls a tunnel costs it, and which. ptrace slows the proxy down many times, so
    /// this run's rate means nothing; the counts per tunnel do.
    func measureSystemCalls(_ column: String, proxy: RunningProxy) {
        let root = proxy.process.pid
        let pids = [root] + ProcFS.descendants(of: root)
        let summary = tmp + "/strace-\(column).txt"
        guard let tracer = try? Command.start(
            "strace", ["-f", "-c", "-q", "-o", summary] + pids.flatMap { ["-p", String($0)] },
            stderr: tmp + "/strace.err")
        else {
            results.setNote(column, "syscalls", "no strace")
            return
        }
        usleep(500_000) // attached to every thread
        let arguments = ["tunnels", "--proxy", proxy.address, "--target", originTarget, "--threads", "8", "--duration", "2"]
        let line = Command.run(loadgen, arguments, timeout: 60, scratch: tmp + "/lg-strace")?.stdout
            .split(separator: "\n").last.map(String.init) ?? ""
        kill(tracer.pid, SIGINT)
        tracer.process.waitUntilExit()
        let completed = keyValues(line)["completed"].flatMap { Int($0) } ?? 0
        // "% time  seconds  usecs/call  calls  [errors]  syscall", one line per system call.
        var calls: [(String, Int)] = []
        for row in readText(summary).split(separator: "\n") {
            let fields = row.split(separator: " ")
            guard fields.count >= 5, Double(fields[0]) != nil, let count = Int(fields[3]), fields.last != "total" else { continue }
            calls.append((String(fields.last!), count))
        }
        guard completed > 0, !calls.isEmpty else {
            results.setNote(column, "syscalls", "strace failed")
            results.log.append("\(column), system calls: strace gave nothing (\(String(readText(tmp + "/strace.err").prefix(200))))")
            return
        }
        let perTunnel = Double(calls.reduce(0) { $0 + $1.1 }) / Double(completed)
        results[column, "syscalls"] = perTunnel
        results.syscallMix[column] = calls.sorted { $0.1 > $1.1 }.prefix(8).map { ($0.0, Double($0.1) / Double(completed)) }
        say(String(format: "%@ system calls: %.1f per tunnel over %d tunnels under strace", column, perTunnel, completed))
    }

    /// CONNECT, GET /big (1 GiB), read to EOF, again until the time is up; `streams` at once.
    func measureBulk(_ column: String, address: String, streams: Int, direct: Bool = false) {
        let metric = "bulk\(streams)"
        let arguments = ["bulk", "--proxy", address, "--target", originTarget, "--streams", String(streams),
                         "--duration", String(duration)] + (direct ? ["--direct"] : [])
        guard let (line, stderr) = loadgenRun(arguments, column: column, metric: metric, what: "bulk") else { return }
        let kv = keyValues(line)
        if kv["bytes"] == "0" {
            results.setNote(column, metric, "no bytes")
        } else {
            results[column, metric] = kv["mbps"].flatMap { Double($0) }
        }
        noteErrors(column, metric, count: kv["errors"].flatMap { Int($0) }, stderr: stderr, line: line)
        say("\(column) bulk x\(streams): \(line)")
    }

    /// wrk -t2 -c32, keep-alive, the absolute-form target a forward proxy's client sends.
    func measureForward(_ column: String, proxy: RunningProxy?) {
        let seconds = "\(duration)s"
        let arguments = proxy.map { ["-t2", "-c32", "-d" + seconds, "-s", tmp + "/absolute.lua", "http://\($0.address)/"] }
            ?? ["-t2", "-c32", "-d" + seconds, "http://\(originTarget)/small"]
        let cpu0 = proxy.map { ProcFS.treeCPUSeconds($0.process.pid) }
        let result = Command.run("wrk", arguments, timeout: Double(duration + 60), scratch: tmp + "/wrk")
        let cpu1 = proxy.map { ProcFS.treeCPUSeconds($0.process.pid) }
        let out = (result?.stdout ?? "") + (result?.stderr ?? "")
        func match(_ pattern: String) -> String? {
            guard let regex = try? NSRegularExpression(pattern: pattern),
                  let found = regex.firstMatch(in: out, range: NSRange(out.startIndex..., in: out)),
                  let range = Range(found.range(at: 1), in: out) else { return nil }
            return String(out[range])
        }
        guard let rps = match("Requests/sec: *([0-9.]+)").flatMap({ Double($0) }) else {
            results.setNote(column, "fwd", "wrk failed")
            results.log.append("\(column), forward: wrk failed: \(String(out.prefix(300)))")
            return
        }
        let non2xx = match("Non-2xx or 3xx responses: *([0-9]+)").flatMap { Int($0) }
        let socketErrors = match("Socket errors: *([^\n]*)")
        let socketCounts = (socketErrors ?? "").split(whereSeparator: { !$0.isNumber }).compactMap { Int($0) }
        let errors = (non2xx ?? 0) + socketCounts.reduce(0, +)
        let requests = match("([0-9]+) requests in ").flatMap { Int($0) }
        results[column, "fwd"] = rps
        results.setErrorCount(column, "fwd", errors)
        if let cpu0, let cpu1 { results[column, "fwd_cpu_us"] = cpuMicroseconds(from: cpu0, to: cpu1, per: requests) }
        let reads = socketErrors.flatMap { text -> Int? in
            guard let r = text.range(of: "read ") else { return nil }
            return Int(text[r.upperBound...].prefix { $0.isNumber })
        } ?? 0
        if errors > 0, errors == reads, let requests,
           Double(reads) >= 0.9 * Double(requests), Double(reads) <= 1.05 * Double(requests) + 64 {
            // A proxy that closes the client connection after each response: wrk reconnects and counts
            // each close of a connection it meant to reuse as a read error.
            results.setNote(column, "fwd", "*")
            results.log.append("* \(column) closes the client connection after each response (no keep-alive): wrk counted \(reads) read errors for \(requests) responses, and no other error")
        } else if errors > 0 {
            results.setNote(column, "fwd", "\(errors) errors")
            results.log.append("\(column), forward: wrk reported" + (non2xx.map { " \($0) non-2xx responses" } ?? "")
                + (socketErrors.map { " socket errors: \($0)" } ?? ""))
        }
        say("\(column) forward: \(rps) req/s" + (non2xx.map { ", \($0) non-2xx" } ?? "")
            + (socketErrors.map { ", socket errors: \($0)" } ?? ""))
    }

    /// Opens `idleCount` CONNECT tunnels, holds them, and reads the proxy's VmRSS before and after.
    func measureIdle(_ column: String, proxy: RunningProxy) {
        let pid = proxy.process.pid
        let before = ProcFS.rssKiB(pid)
        let out = tmp + "/idle.out", err = tmp + "/idle.err"
        guard let holder = try? Command.start(
            loadgen, ["idle", "--proxy", proxy.address, "--target", originTarget, "--count", String(idleCount),
                      "--threads", "4", "--hold", "300"], stdout: out, stderr: err)
        else {
            results.setNote(column, "rss", "idle run failed")
            return
        }
        var ready: String?
        for _ in 0..<1500 { // loadgen gives up opening after 120 s
            ready = readText(out).split(separator: "\n").first { $0.hasPrefix("ready") }.map(String.init)
            if ready != nil || !holder.isRunning { break }
            usleep(100_000)
        }
        guard let ready else {
            holder.stop()
            results.setNote(column, "rss", "idle run failed")
            results.log.append("\(column), idle: loadgen did not get ready: \(String(readText(err).prefix(300)))")
            return
        }
        usleep(1_000_000) // the proxy's bookkeeping for the last tunnels
        let after = ProcFS.rssKiB(pid)
        kill(holder.pid, SIGUSR1)
        holder.process.waitUntilExit()
        let done = readText(out).split(separator: "\n").first { $0.hasPrefix("done") }.map(String.init) ?? ""
        let kv = keyValues(ready)
        let established = kv["established"].flatMap { Int($0) } ?? 0
        let errors = kv["errors"].flatMap { Int($0) }
        if established > 0 {
            results[column, "rss"] = Double(after - before) / Double(established)
        } else {
            results.setNote(column, "rss", "no tunnel established")
        }
        results[column, "rss_before"] = Double(before)
        results[column, "rss_after"] = Double(after)
        results[column, "idle_established"] = Double(established)
        noteErrors(column, "rss", count: errors, stderr: readText(err), line: ready)
        if established < idleCount {
            results.setNote(column, "rss", "\(group(Double(established))) of \(group(Double(idleCount))) held")
            if errors == 0 { results.log.append("\(column), idle: \(ready)") }
        }
        if let dropped = keyValues(done)["dropped_while_held"], dropped != "0" {
            results.log.append("\(column), idle: the proxy closed \(dropped) of \(established) tunnels while they were held")
        }
        say("\(column) idle: \(ready); VmRSS \(before) -> \(after) KiB; \(done)")
    }

    /// TLS inside the tunnel: CONNECT 127.0.0.1:18443, a full handshake at `version`, GET /small.
    /// With an admin listener, the verdict cache's hits and misses and the handshakes atsgate refused
    /// during the run come from /metrics before and after; with a proxy, its CPU per tunnel.
    func measureTLS(_ column: String, address: String, version: String, proxy: RunningProxy?) {
        let metric = "tls" + version.replacingOccurrences(of: ".", with: "")
        let load = proxy?.adminPort != nil ? ProcFS.OtherLoad() : nil
        let cpu0 = proxy.map { ProcFS.treeCPUSeconds($0.process.pid) }
        let before = proxy?.adminPort.flatMap(adminCounters)
        let arguments = ["tls", "--proxy", address, "--target", tlsTarget, "--tls-max", version, "--threads", "8",
                         "--duration", String(duration)] + (proxy == nil ? ["--direct"] : [])
        let run = loadgenRun(arguments, column: column, metric: metric, what: "TLS \(version) tunnels")
        let after = proxy?.adminPort.flatMap(adminCounters)
        let cpu1 = proxy.map { ProcFS.treeCPUSeconds($0.process.pid) }
        // atsgate's TLS runs are compared with each other one by one: each gets its own share of the
        // CPU that other processes took meanwhile.
        if let load { results[column, metric + "_other"] = load.percent() }
        guard let (line, stderr) = run else { return }
        let kv = keyValues(line)
        let completed = kv["completed"].flatMap { Int($0) } ?? 0
        if let cpu0, let cpu1 { results[column, metric + "_cpu_us"] = cpuMicroseconds(from: cpu0, to: cpu1, per: completed) }
        results[column, metric + "_completed"] = Double(completed)
        if completed == 0 {
            results.setNote(column, metric, "nothing completed")
        } else {
            results[column, metric] = kv["rate"].flatMap { Double($0) }
            results[column, metric + "_p50"] = kv["p50_ms"].flatMap { Double($0) }
            results[column, metric + "_p99"] = kv["p99_ms"].flatMap { Double($0) }
        }
        noteErrors(column, metric, count: kv["errors"].flatMap { Int($0) }, stderr: stderr, line: line)
        if let cipher = kv["cipher"], cipher != "none", results.ciphers[metric] == nil { results.ciphers[metric] = cipher }
        if let negotiated = kv["negotiated_" + metric], negotiated != String(completed) {
            results.log.append("\(column), TLS \(version) tunnels: only \(negotiated) of \(completed) handshakes negotiated TLS \(version)")
        }
        var cache = ""
        if let before, let after {
            results[column, metric + "_hit"] = Double(after.hits - before.hits)
            results[column, metric + "_miss"] = Double(after.misses - before.misses)
            let refused = after.failures - before.failures
            results[column, metric + "_refused"] = Double(refused)
            if refused != 0 {
                results.log.append("\(column), TLS \(version) tunnels: atsgate counted \(refused) refused or failed handshakes (atsgate_tls_handshake_failures_total)")
            }
            cache = "; verdict cache hit \(after.hits - before.hits) miss \(after.misses - before.misses)"
        }
        let cpu = results[column, metric + "_cpu_us"].map { "; proxy CPU \(Int($0)) us per tunnel" } ?? ""
        say("\(column) TLS \(version) tunnels: \(line)\(cpu)\(cache)")
    }

    /// One thread for a moment per version, results dropped: the first handshakes (and, with
    /// inspection, the first certificate verdicts) happen before the measurement.
    func warmTLS(_ address: String, direct: Bool = false) {
        for version in ["1.3", "1.2"] {
            _ = Command.run(loadgen, ["tls", "--proxy", address, "--target", tlsTarget, "--tls-max", version,
                                      "--threads", "1", "--duration", "0.3"] + (direct ? ["--direct"] : []),
                            timeout: 30, scratch: tmp + "/warm")
        }
    }

    /// atsgate's verdict cache hits and misses and refused handshakes, from /metrics.
    private func adminCounters(_ port: Int) -> (hits: Int, misses: Int, failures: Int)? {
        guard let text = Loopback.get(port, path: "/metrics"), text.contains("\natsgate_") else { return nil }
        var hits = 0.0, misses = 0.0, failures = 0.0
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: " ")
            guard parts.count >= 2, let value = Double(parts[1]) else { continue }
            let name = parts[0]
            if name.hasPrefix("atsgate_probe_cache_total{") && name.contains("result=\"hit\"") { hits += value }
            if name.hasPrefix("atsgate_probe_cache_total{") && name.contains("result=\"miss\"") { misses += value }
            if name == "atsgate_tls_handshake_failures_total" || name.hasPrefix("atsgate_tls_handshake_failures_total{") {
                failures += value
            }
        }
        return (Int(hits), Int(misses), Int(failures))
    }

    /// Runs the steps against a running proxy; one that dies is reported and started again for the
    /// next steps. Returns the proxy as it is at the end (a new process after a restart), or nil.
    func runSteps(_ column: String, proxy start: RunningProxy, _ steps: [Step]) -> RunningProxy? {
        var proxy: RunningProxy? = start
        for step in steps {
            guard let current = proxy else {
                results.setNote(column, step.rawValue, "proxy down")
                continue
            }
            switch step {
            case .tps: measureTunnels(column, address: current.address, proxy: current)
            case .tpsProxyTLS:
                if let tlsAddress = current.tlsAddress {
                    measureTunnels(column, address: tlsAddress, proxy: current, proxyTLS: true)
                }
            case .syscalls: measureSystemCalls(column, proxy: current)
            case .bulk1: measureBulk(column, address: current.address, streams: 1)
            case .bulk4: measureBulk(column, address: current.address, streams: 4)
            case .fwd:
                if current.column.forwards { measureForward(column, proxy: current) }
            case .rss: measureIdle(column, proxy: current)
            case .tls13: measureTLS(column, address: current.address, version: "1.3", proxy: current)
            case .tls12: measureTLS(column, address: current.address, version: "1.2", proxy: current)
            }
            if !current.process.isRunning {
                current.process.process.waitUntilExit()
                let how = current.process.exitDescription
                results.addNote(column, step.rawValue, "proxy died")
                results.log.append("\(column) exited \(how) during the \(step.label) measurement; the end of its stderr:")
                results.log += readText(current.logPath).split(separator: "\n").suffix(8).map { "    " + $0 }
                say("\(column) exited \(how) during the \(step.label) measurement; restarting it for the next ones")
                try? FileManager.default.copyItem(atPath: current.logPath, toPath: current.logPath + ".died")
                proxy = restart(current)
                if proxy == nil { results.log.append("\(column) could not be restarted") }
            }
            sleepPause()
        }
        return proxy
    }

    /// Without the run's CA the same atsgate must refuse every TLS tunnel (R15, certificate-untrusted):
    /// proof that the TLS runs judged the certificate.
    func checkUntrusted(port: Int) {
        guard let proxy = startProxy(.atsgate, port: port, run: .untrusted) else {
            results.log.append("atsgate, TLS check: atsgate did not start without --ca-file")
            return
        }
        for version in ["1.3", "1.2"] {
            let metric = "tls" + version.replacingOccurrences(of: ".", with: "")
            let line = Command.run(loadgen, ["tls", "--proxy", proxy.address, "--target", tlsTarget, "--tls-max", version,
                                              "--threads", "1", "--duration", "0.5"], timeout: 30, scratch: tmp + "/check")?
                .stdout.split(separator: "\n").last.map(String.init) ?? ""
            let kv = keyValues(line)
            results["atsgate_check", metric + "_completed"] = kv["completed"].flatMap { Double($0) }
            results["atsgate_check", metric + "_refused"] = kv["errors"].flatMap { Double($0) }
            say("atsgate without --ca-file, TLS \(version): \(line)")
        }
        proxy.process.stop()
        var counts: [String: Int] = [:]
        let decisions = readText(tmp + "/atsgate-untrusted.decisions")
        if let regex = try? NSRegularExpression(pattern: "\"reason\" *: *\"([^\"]*)\"") {
            for found in regex.matches(in: decisions, range: NSRange(decisions.startIndex..., in: decisions)) {
                if let range = Range(found.range(at: 1), in: decisions) { counts[String(decisions[range]), default: 0] += 1 }
            }
        }
        results.checkReasons = counts.sorted { $0.value > $1.value }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
    }
}
