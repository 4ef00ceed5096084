import Foundation

/// Integer with thousands separators: 27,865.
func group(_ value: Double) -> String {
    let digits = String(Int(value.rounded()))
    let negative = digits.hasPrefix("-")
    let body = Array(negative ? digits.dropFirst() : Substring(digits))
    var out = ""
    for (i, c) in body.enumerated() {
        if i > 0 && (body.count - i) % 3 == 0 { out += "," }
        out.append(c)
    }
    return (negative ? "-" : "") + out
}

/// The targets of BENCHMARKS.md that this table can check.
enum Target {
    static let tunnelsVsFloor = 0.95
    static let cpuPerTunnelVsFloor = 0.8
    static let forwardVsTrafficServer = 1.3
    static let bulkVsDirect = 0.9
    static let idleKiB = 8.0
    static let idleTunnels = 10_000
    /// TLS inspection with cached verdicts: at most this share of the tunnel rate with it off.
    static let inspectionCostPercent = 5.0
}

/// The Markdown the run prints, and its JSON.
struct Report {
    let bench: Bench
    let started: Date
    let seconds: Int
    private var results: Results { bench.results }

    /// The table's rows: metric, label, how it is measured.
    private var rows: [(metric: String, label: String, how: String)] {
        let origin = Bench.originPort, tls = Bench.tlsPort
        var rows: [(String, String, String)] = []
        if bench.tlsRows.plain {
            rows += [
                ("tps", "new tunnels/s", "8 client threads: connect, CONNECT, GET /small with Connection: close, close"),
                ("p99", "p99 per tunnel (ms)", "same run"),
                ("tps_cpu_us", "proxy CPU per tunnel (us)", "same run: the proxy's user + system time, its child processes included, over the tunnels completed"),
                ("tps_tls", "new tunnels/s, TLS to the proxy", "the same over the proxy's TLS listener in the same process (atsgate --listen-tls, squid https_port; the run's P-256 certificate): a full TLS 1.3 handshake with the proxy per tunnel, no resumption, then CONNECT and GET /small inside it"),
                ("p99_tls", "p99 per tunnel (ms), TLS to the proxy", "same run"),
                ("tps_tls_cpu_us", "proxy CPU per tunnel (us), TLS to the proxy", "same run"),
            ]
            if bench.countSystemCalls {
                rows.append(("syscalls", "system calls per tunnel", "a separate 2 s tunnels run under strace -c -f (its rate means nothing): the proxy's system calls over the tunnels completed"))
            }
            rows += [
                ("bulk1", "bulk MB/s, 1 stream", "CONNECT, GET /big, read to EOF with 256 KiB reads"),
                ("bulk4", "bulk MB/s, 4 streams", "same, 4 at once"),
                ("fwd", "forward req/s", "wrk -t2 -c32, absolute-form GET http://127.0.0.1:\(origin)/small, keep-alive"),
                ("fwd_cpu_us", "proxy CPU per forwarded request (us)", "same run: the proxy's CPU time over the requests answered"),
                ("rss", "KiB RSS per idle tunnel", "\(group(Double(bench.idleCount))) open CONNECT tunnels held"),
            ]
        }
        if bench.tlsRows.tls {
            rows += [
                ("tls13", "TLS tunnels/s (TLS 1.3)", "8 client threads: connect, CONNECT 127.0.0.1:\(tls), TLS 1.3 handshake (new session, P-256 certificate), GET /small with Connection: close, close. atsgate: full ATS, inspection on, certificate verdicts cached"),
                ("tls13_p99", "p99 per TLS tunnel (ms, TLS 1.3)", "same run"),
                ("tls13_cpu_us", "proxy CPU per TLS tunnel (us, TLS 1.3)", "same run: the proxy's user + system time, its child processes included, over the tunnels completed"),
                ("tls12", "TLS tunnels/s (TLS 1.2)", "the same with TLS 1.2"),
                ("tls12_p99", "p99 per TLS tunnel (ms, TLS 1.2)", "same run"),
                ("tls12_cpu_us", "proxy CPU per TLS tunnel (us, TLS 1.2)", "same, TLS 1.2"),
            ]
        }
        return rows
    }

    /// The table's columns: the ones run, and atsgate with inspection off for the TLS rows.
    private var tableColumns: [String] {
        bench.columns.map(\.rawValue) + (bench.selected(.atsgate) && bench.tlsRows.tls ? ["atsgate_off"] : [])
    }

    func format(_ metric: String, _ value: Double) -> String {
        if metric.hasSuffix("p99") || metric.hasSuffix("p50") || metric.hasPrefix("p99_") || metric.hasPrefix("p50_") {
            return String(format: value < 10 ? "%.2f" : "%.1f", value)
        }
        if metric == "rss" || metric == "syscalls" { return String(format: "%.1f", value) }
        return group(value)
    }

    func cell(_ column: String, _ metric: String) -> String {
        if results.note(column, "all") != nil { return "n/a" }
        if column == "direct" && (metric == "rss" || metric == "syscalls" || metric.hasSuffix("_cpu_us")) { return "-" }
        if column == "floor" && metric.hasPrefix("fwd") { return "-" }
        if column == "atsgate_off" && !metric.hasPrefix("tls") { return "-" }
        // Only atsgate and squid have a TLS listener.
        if metric.hasSuffix("_tls") || metric.hasPrefix("tps_tls"), column != "atsgate", column != "squid" { return "-" }
        let note = results.note(column, metric)
        guard let value = results[column, metric] else { return "n/a" + (note.map { " (\($0))" } ?? "") }
        if note == "*" { return format(metric, value) + "*" }
        return format(metric, value) + (note.map { " (\($0))" } ?? "")
    }

    private func ratio(_ a: Double?, _ b: Double?) -> String {
        guard let a, let b, b != 0 else { return "n/a" }
        return String(format: "%.2fx", a / b)
    }

    private func met(_ condition: Bool?) -> String { condition.map { $0 ? "yes" : "no" } ?? "n/a" }

    /// The best peer's value for a metric (highest, or lowest with `lowest`), and its column.
    private func bestPeer(_ metric: String, lowest: Bool = false) -> (value: Double, column: String)? {
        let measured = Column.peers.compactMap { peer in results[peer.rawValue, metric].map { ($0, peer.rawValue) } }
        return lowest ? measured.min { $0.0 < $1.0 } : measured.max { $0.0 < $1.0 }
    }

    private func peerCell(_ metric: String, _ best: (value: Double, column: String)?) -> String {
        best.map { "\(format(metric, $0.value)) (\(bench.header(of: $0.column)))" } ?? "no peer measured"
    }

    func text() -> String {
        var out: [String] = [""]
        let date = ISO8601DateFormatter.string(from: started, timeZone: TimeZone(identifier: "UTC")!,
                                               formatOptions: [.withFullDate, .withTime, .withColonSeparatorInTime])
        let rounds = results.rounds > 1 ? ", each figure the median of \(results.rounds) rounds (--repeat; spreads below)" : ""
        out.append("atsgate benchmark, started \(date.prefix(19))Z, \(ProcFS.cores) cores, \(bench.duration) s per measurement\(bench.quick ? " (--quick)" : "")\(rounds), \(seconds) s in all")
        out.append("")
        out.append("| workload | how |" + tableColumns.map { " \(bench.header(of: $0)) |" }.joined())
        out.append("| --- | --- |" + String(repeating: " --- |", count: tableColumns.count))
        for row in rows {
            out.append("| \(row.label) | \(row.how) |" + tableColumns.map { " \(cell($0, row.metric)) |" }.joined())
        }
        out += spreadLines()
        if bench.selected(.atsgate), let note = bench.atsgateNote { out += ["", "atsgate: \(note)"] }
        if bench.selected(.atsgate), let note = bench.atsgateTLSNote { out += ["", "atsgate's TLS rows: \(note) (an older build)."] }
        if bench.selected(.floor) && bench.tlsRows.plain {
            out += ["", "The floor proxy only tunnels: it has no forward rows (-)."]
        }
        let mixes = tableColumns.compactMap { column in
            results.syscallMix[column].map { mix in
                "\(bench.header(of: column)): " + mix.map { String(format: "%@ %.1f", $0.0, $0.1) }.joined(separator: ", ")
            }
        }
        if !mixes.isEmpty {
            out += ["", "System calls per tunnel, the most frequent (strace -c -f; epoll_wait and futex depend on how busy the proxy is): " + mixes.joined(separator: "; ") + "."]
        }
        if !results.ciphers.isEmpty {
            out += ["", "TLS rows: the ciphers negotiated with the origin (no proxy here terminates TLS) were \(results.ciphers["tls13"] ?? "n/a") (TLS 1.3) and \(results.ciphers["tls12"] ?? "n/a") (TLS 1.2)."]
        }
        out += otherLoadLines()
        if !results.log.isEmpty {
            out += ["", "Errors and notes:"] + results.log.map { "  " + $0 }
        }
        out += targetLines()
        out += loopScalingLines()
        out += inspectionLines()
        out += ["", "Versions:"] + results.versions.map { "  \($0.0): \($0.1)" }
        return out.joined(separator: "\n") + "\n"
    }

    /// `--repeat`: each figure of the table as min-max over the rounds, and that band's width
    /// against the median.
    private func spreadLines() -> [String] {
        guard results.rounds > 1 else { return [] }
        var out = ["", "Spread over the \(results.rounds) rounds: min-max of each figure above, and (max - min) / median.", ""]
        out.append("| workload |" + tableColumns.map { " \(bench.header(of: $0)) |" }.joined())
        out.append("| --- |" + String(repeating: " --- |", count: tableColumns.count))
        for row in rows {
            out.append("| \(row.label) |" + tableColumns.map { column in
                guard cell(column, row.metric) != "-", let spread = results.spread(column, row.metric) else { return " - |" }
                let width = spread.percent.map { String(format: " (%.0f%%)", $0) } ?? ""
                return " \(format(row.metric, spread.minimum))-\(format(row.metric, spread.maximum))\(width) |"
            }.joined())
        }
        return out
    }

    private func otherLoadLines() -> [String] {
        let measured = bench.columns.map(\.rawValue).filter { results.otherLoad[$0] != nil }
        guard !measured.isEmpty else { return [] }
        let shares = measured.map { "\($0) \(Int(results.otherLoad[$0]!.rounded()))%" }.joined(separator: ", ")
        var lines = ["", "CPU used by other processes while each column ran (share of all \(ProcFS.cores) cores): \(shares); load average at start: \(loadAverageAtStart)."]
        let who = measured.compactMap { column -> String? in
            guard let top = results.otherProcesses[column], !top.isEmpty else { return nil }
            return "\(column): " + top.map { String(format: "%@ %.1f s", $0.0, $0.1) }.joined(separator: ", ")
        }
        if !who.isEmpty { lines.append("Busiest other processes (CPU seconds each used itself while the column ran): " + who.joined(separator: "; ") + ".") }
        if measured.contains(where: { results.otherLoad[$0]! >= 10 }) {
            lines.append("Warning: other processes competed for the CPU; the columns are not comparable. Re-run on an idle machine.")
        }
        return lines
    }

    /// atsgate against each target of BENCHMARKS.md, with the peer each is measured against.
    private func targetLines() -> [String] {
        guard bench.selected(.atsgate) else { return [] }
        var out = ["", "atsgate against the targets (BENCHMARKS.md):", ""]
        if let note = bench.atsgateNote { return out + ["\(note): no ratios."] }
        if !bench.tlsRows.plain && bench.atsgateTLSNote != nil { return out + ["\(bench.atsgateTLSNote!): no ratios."] }
        out.append("| target | atsgate | measured against | atsgate / that | best peer | goal | met |")
        out.append("| --- | --- | --- | --- | --- | --- | --- |")
        func value(_ column: String, _ metric: String) -> Double? { results[column, metric] }
        func against(_ column: String, _ metric: String) -> String {
            value(column, metric).map { "\(format(metric, $0)) (\(bench.header(of: column)))" } ?? "n/a (\(bench.header(of: column)) not measured)"
        }
        if bench.tlsRows.plain {
            let a = { (m: String) in value("atsgate", m) }
            let tps = a("tps"), floorTPS = value("floor", "tps")
            out.append("| new tunnels/s | \(cell("atsgate", "tps")) | \(against("floor", "tps")) | \(ratio(tps, floorTPS)) | \(peerCell("tps", bestPeer("tps"))) | >= \(Target.tunnelsVsFloor)x the floor proxy | \(met(tps.flatMap { t in floorTPS.map { t >= Target.tunnelsVsFloor * $0 } })) |")
            let cpu = a("tps_cpu_us"), floorCPU = value("floor", "tps_cpu_us")
            out.append("| proxy CPU per tunnel (us) | \(cell("atsgate", "tps_cpu_us")) | \(against("floor", "tps_cpu_us")) | \(ratio(cpu, floorCPU)) | \(peerCell("tps_cpu_us", bestPeer("tps_cpu_us", lowest: true))) | <= \(Target.cpuPerTunnelVsFloor)x the floor proxy's | \(met(cpu.flatMap { c in floorCPU.map { c <= Target.cpuPerTunnelVsFloor * $0 } })) |")
            let overTLS = a("tps_tls")
            out.append("| new tunnels/s, TLS to the proxy | \(cell("atsgate", "tps_tls")) | \(against("atsgate", "tps")) (its plain listener) | \(ratio(overTLS, tps)) | \(peerCell("tps_tls", bestPeer("tps_tls"))) | (no target: the handshake's cost, beside squid's https_port) | - |")
            out.append("| proxy CPU per tunnel (us), TLS to the proxy | \(cell("atsgate", "tps_tls_cpu_us")) | \(against("atsgate", "tps_cpu_us")) (its plain listener) | \(ratio(a("tps_tls_cpu_us"), cpu)) | \(peerCell("tps_tls_cpu_us", bestPeer("tps_tls_cpu_us", lowest: true))) | (no target) | - |")
            out.append("| p99 per tunnel (ms) | \(cell("atsgate", "p99")) | \(against("floor", "p99")) | \(ratio(a("p99"), value("floor", "p99"))) | \(peerCell("p99", bestPeer("p99", lowest: true))) | (no target: follows the rate) | - |")
            for m in ["bulk1", "bulk4"] {
                let bulk = a(m), direct = value("direct", m)
                out.append("| \(m == "bulk1" ? "bulk MB/s, 1 stream" : "bulk MB/s, 4 streams") | \(cell("atsgate", m)) | \(against("direct", m)) | \(ratio(bulk, direct)) | \(peerCell(m, bestPeer(m))) | >= \(Target.bulkVsDirect)x direct | \(met(bulk.flatMap { b in direct.map { b >= Target.bulkVsDirect * $0 } })) |")
            }
            let fwd = a("fwd"), ats = value("trafficserver", "fwd")
            out.append("| forward req/s | \(cell("atsgate", "fwd")) | \(against("trafficserver", "fwd")) | \(ratio(fwd, ats)) | \(peerCell("fwd", bestPeer("fwd"))) | >= \(Target.forwardVsTrafficServer)x Traffic Server | \(met(fwd.flatMap { f in ats.map { f >= Target.forwardVsTrafficServer * $0 } })) |")
            out.append("| proxy CPU per forwarded request (us) | \(cell("atsgate", "fwd_cpu_us")) | \(against("trafficserver", "fwd_cpu_us")) | \(ratio(a("fwd_cpu_us"), value("trafficserver", "fwd_cpu_us"))) | \(peerCell("fwd_cpu_us", bestPeer("fwd_cpu_us", lowest: true))) | (no target) | - |")
            var rssMet = met(a("rss").map { $0 <= Target.idleKiB })
            if bench.idleCount < Target.idleTunnels && rssMet != "n/a" {
                rssMet += " (at \(group(Double(bench.idleCount))); the goal is \(group(Double(Target.idleTunnels))): --idle \(Target.idleTunnels))"
            }
            out.append("| KiB RSS per idle tunnel | \(cell("atsgate", "rss")) | - | - | \(peerCell("rss", bestPeer("rss", lowest: true))) | <= \(Int(Target.idleKiB)) KiB, \(group(Double(Target.idleTunnels))) tunnels held | \(rssMet) |")
        }
        if bench.tlsRows.tls && bench.atsgateTLSNote == nil {
            for m in ["tls13", "tls12"] {
                let cost = inspectionCost(m)
                out.append("| TLS tunnels/s (TLS \(m.dropFirst(3).first!).\(m.last!)), inspection cost | \(cell("atsgate", m)) | \(cell("atsgate_off", m)) (inspection off) | \(ratio(value("atsgate", m), value("atsgate_off", m))) | \(peerCell(m, bestPeer(m))) | inspection costs <= \(Int(Target.inspectionCostPercent))% of the rate with it off: \(cost.map { String(format: "%.1f", $0) } ?? "n/a")% | \(met(cost.map { $0 <= Target.inspectionCostPercent })) |")
            }
        }
        return out
    }

    /// 1 - on/off of the TLS tunnel rate, percent (negative when on measured faster: noise).
    private func inspectionCost(_ metric: String) -> Double? {
        guard let on = results["atsgate", metric], let off = results["atsgate_off", metric], off > 0 else { return nil }
        return 100 * (1 - on / off)
    }

    private func inspectionLines() -> [String] {
        guard bench.selected(.atsgate), bench.atsgateNote == nil, bench.tlsRows.tls else { return [] }
        if let note = bench.atsgateTLSNote { return ["", "TLS inspection in atsgate: not measured (\(note))."] }
        let tls = Bench.tlsPort
        var out = ["", "TLS inspection in atsgate: CONNECT 127.0.0.1:\(tls) under full ATS (--local-network 192.0.2.0/24, so 127.0.0.1 is not a local address; the run's CA with --ca-file; --certificate-check before), 8 client threads as in the TLS rows. Three atsgate processes, started together, each warmed up with one thread for 0.3 s per version, measured in turn (TLS 1.3: off, on, cold; TLS 1.2: on, off, cold). Consecutive runs of one configuration differ by up to about 10% on this shared machine: compare the CPU per tunnel too, and re-run before reading a few percent into the cost.", ""]
        out.append("| atsgate run | TLS | tunnels/s | p50 per tunnel (ms) | p99 per tunnel (ms) | atsgate CPU per tunnel (us) | verdict cache hit / miss | tunnels/s vs inspection off | other processes' CPU |")
        out.append("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        let runs = [("atsgate_off", "inspection off"), ("atsgate", "inspection on, verdicts cached (--verdict-ttl 300)"),
                    ("atsgate_cold", "inspection on, cold verdict every tunnel (--verdict-ttl 0.001)")]
        for m in ["tls13", "tls12"] {
            for (column, label) in runs {
                let lookups = results[column, m + "_hit"].map { "\(group($0)) / \(group(results[column, m + "_miss"] ?? 0))" } ?? "n/a"
                let other = results[column, m + "_other"].map { "\(Int($0.rounded()))%" } ?? "n/a"
                out.append("| \(label) | \(version(m)) | \(cell(column, m)) | \(cell(column, m + "_p50")) | \(cell(column, m + "_p99")) | \(cell(column, m + "_cpu_us")) | \(lookups) | \(ratio(results[column, m], results["atsgate_off", m])) | \(other) |")
            }
        }
        out.append("")
        out.append("Inspection cost with cached verdicts (1 - on/off tunnel rate; target <= \(Int(Target.inspectionCostPercent))%): " + ["tls13", "tls12"].map { m in
            let cost = inspectionCost(m)
            return "TLS \(version(m)) " + (cost.map { String(format: "%.1f%%", $0) + ($0 <= Target.inspectionCostPercent ? " (met)" : " (not met)") } ?? "n/a")
        }.joined(separator: ", ") + ".")
        out.append("atsgate's own CPU per tunnel, inspection on (cached) against off: " + ["tls13", "tls12"].map { m in
            let difference = results["atsgate", m + "_cpu_us"].flatMap { a in results["atsgate_off", m + "_cpu_us"].map { String(format: "%+.0f us", a - $0) } } ?? "n/a"
            return "TLS \(version(m)) \(cell("atsgate", m + "_cpu_us")) us against \(cell("atsgate_off", m + "_cpu_us")) us (\(difference))"
        }.joined(separator: ", ") + "; the client's and the origin's handshakes take most of the two cores, so the rate shows only part of it.")
        out.append("A cold verdict (every tunnel misses the cache; tunnels that miss at the same moment for the same key share one verdict): " + ["tls13", "tls12"].map { m in
            let how = m == "tls13" ? "a probe handshake of atsgate's own to the origin" : "the chain from the wire verified again, no probe"
            let p50 = results["atsgate_cold", m + "_p50"].flatMap { a in results["atsgate", m + "_p50"].map { String(format: "%+.2f ms", a - $0) } } ?? "n/a"
            return "TLS \(version(m)) (\(how)): \(cell("atsgate_cold", m)) tunnels/s, \(ratio(results["atsgate_cold", m], results["atsgate", m])) of cached; p50 \(cell("atsgate_cold", m + "_p50")) ms against \(cell("atsgate", m + "_p50")) ms cached (\(p50)), p99 \(cell("atsgate_cold", m + "_p99")) ms against \(cell("atsgate", m + "_p99")) ms, atsgate CPU \(cell("atsgate_cold", m + "_cpu_us")) us per tunnel against \(cell("atsgate", m + "_cpu_us")) us"
        }.joined(separator: "; ") + ".")
        let completed13 = results["atsgate_check", "tls13_completed"], completed12 = results["atsgate_check", "tls12_completed"]
        let reasons = results.checkReasons.isEmpty ? "none logged" : results.checkReasons
        if completed13 == nil && completed12 == nil {
            out.append("Check without the run's CA: not run (see the errors).")
        } else if (completed13 ?? 0) == 0 && (completed12 ?? 0) == 0 {
            out.append("Check: the same atsgate without --ca-file refused all \(group(results["atsgate_check", "tls13_refused"] ?? 0)) TLS 1.3 and \(group(results["atsgate_check", "tls12_refused"] ?? 0)) TLS 1.2 tunnels of a 0.5 s run each (decision log reasons: \(reasons)), so the runs above judged the certificate.")
        } else {
            out.append("Warning: the same atsgate without --ca-file let \(group(completed13 ?? 0)) TLS 1.3 and \(group(completed12 ?? 0)) TLS 1.2 tunnels through (decision log reasons: \(reasons)): the certificate was not judged, and the inspection numbers above do not include a certificate check.")
        }
        return out
    }

    private func version(_ metric: String) -> String { metric == "tls13" ? "1.3" : "1.2" }

    private var loadAverageAtStart: String { bench.loadAverageAtStart }
}
