import Foundation
import Glibc

/// `--loop-scaling`: does a second event loop on a second CPU double what atsgate can do? The
/// tunnels workload against `taskset -c A atsgate run --loops 1` and then `taskset -c A,B atsgate run
/// --loops 2` (A, B: the first two CPUs this process may use). The goal is >= 1.8x the tunnels/s.
///
/// The proxy must be the bottleneck for the ratio to mean anything: with four or more CPUs the load
/// generator and nginx are pinned to the others, so the proxy's CPUs are its own. On two CPUs they
/// share the proxy's and the machine, not the proxy, sets the rate; the block then says so, and the
/// CPU per tunnel (which should stay flat from 1 loop to 2) is the figure to read.
extension Bench {
    static let loopScalingGoal = 1.8

    /// The CPUs this process may run on, in order (Cpus_allowed_list of /proc/self/status, e.g. "0-3,8").
    static func allowedCPUs() -> [Int] {
        let status = readText("/proc/self/status")
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Cpus_allowed_list:") }) else { return [] }
        var cpus: [Int] = []
        for part in line.dropFirst("Cpus_allowed_list:".count).split(separator: ",") {
            let bounds = part.trimmingCharacters(in: .whitespaces).split(separator: "-").compactMap { Int($0) }
            if bounds.count == 1 { cpus.append(bounds[0]) }
            if bounds.count == 2, bounds[0] <= bounds[1] { cpus += Array(bounds[0]...bounds[1]) }
        }
        return cpus
    }

    /// The CPUs the client and the origin get during the loop-scaling runs (empty: they share).
    var loopScalingClientCPUs: [Int] {
        let cpus = Bench.allowedCPUs()
        return cpus.count >= 4 ? Array(cpus.dropFirst(2)) : []
    }

    func measureLoopScaling() {
        let cpus = Bench.allowedCPUs()
        guard cpus.count >= 2 else {
            for run in [AtsgateRun.oneLoop, .twoLoops] { results.setNote(run.column, "tps", "needs 2 CPUs") }
            results.log.append("loop scaling: this process may use \(cpus.count) CPU; 2 are needed")
            return
        }
        let clientCPUs = loopScalingClientCPUs
        let clientPin = clientCPUs.isEmpty ? [] : ["taskset", "-c", clientCPUs.map(String.init).joined(separator: ",")]
        if !clientCPUs.isEmpty { pinOrigin(to: clientCPUs) }
        defer { if !clientCPUs.isEmpty { pinOrigin(to: cpus) } }
        for run in [AtsgateRun.oneLoop, .twoLoops] {
            let port = takePort()
            say("measuring atsgate with \(run.loops!) event loop(s) pinned to CPU(s) \(cpus.prefix(run.loops!).map(String.init).joined(separator: ",")) on 127.0.0.1:\(port)")
            guard let proxy = startProxy(.atsgate, port: port, run: run) else {
                results.setNote(run.column, "tps", "atsgate did not start")
                continue
            }
            measureTunnels(run.column, address: proxy.address, proxy: proxy, launcher: clientPin)
            proxy.process.stop()
            sleepPause()
        }
    }

    /// nginx and its workers onto `cpus` (taskset -a -p: every thread of a running process).
    private func pinOrigin(to cpus: [Int]) {
        guard let originPID else { return }
        let list = cpus.map(String.init).joined(separator: ",")
        for pid in [originPID] + ProcFS.descendants(of: originPID) {
            _ = Command.run("taskset", ["-a", "-p", "-c", list, String(pid)], timeout: 10, scratch: tmp + "/taskset")
        }
    }
}

extension Report {
    /// The loop-scaling block under the targets.
    func loopScalingLines() -> [String] {
        guard bench.loopScaling, bench.tlsRows.plain, bench.selected(.atsgate) else { return [] }
        let results = bench.results
        let one = results["atsgate_1loop", "tps"], two = results["atsgate_2loops", "tps"]
        let clientCPUs = bench.loopScalingClientCPUs
        let placement = clientCPUs.isEmpty
            ? "the load generator and nginx share those CPUs (this machine has no others), so the machine rather than the proxy may set the rate: read the CPU per tunnel, which should stay flat"
            : "the load generator and nginx pinned to CPUs \(clientCPUs.map(String.init).joined(separator: ","))"
        var out = ["", "Event loops (--loop-scaling): the tunnels workload against atsgate --loops 1 pinned to 1 CPU, then --loops 2 on 2 CPUs (taskset); \(placement).", ""]
        out.append("| atsgate | tunnels/s | p99 per tunnel (ms) | proxy CPU per tunnel (us) |")
        out.append("| --- | --- | --- | --- |")
        for (column, label) in [("atsgate_1loop", "1 loop, 1 CPU"), ("atsgate_2loops", "2 loops, 2 CPUs")] {
            out.append("| \(label) | \(cell(column, "tps")) | \(cell(column, "p99")) | \(cell(column, "tps_cpu_us")) |")
        }
        let scaling = one.flatMap { a in two.map { $0 / a } }
        out.append("")
        out.append("Scaling, 2 loops against 1: " + (scaling.map { String(format: "%.2fx", $0) } ?? "n/a")
                   + " (goal >= \(Bench.loopScalingGoal)x: " + (scaling.map { $0 >= Bench.loopScalingGoal ? "met" : "not met" } ?? "n/a") + ").")
        return out
    }
}
