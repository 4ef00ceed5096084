import Foundation

/// One look at the daemon, every interval: its descriptors, memory, threads and the sockets it
/// holds in CLOSE_WAIT (the peer closed, the daemon did not: the usual shape of a connection leak),
/// from /proc; and from the ledger, the requests of the interval, their latency and the ones that
/// did not end as expected.
struct Sample {
    var time: Double
    var descriptors: Int
    var rssKiB: Int
    var threads: Int
    var closeWait: Int
    /// Sockets the daemon holds with a client (local port = the proxy's port, not listening).
    var clientSockets: Int
    var requests: Int
    var p50: Double?
    var p99: Double?
    /// Load requests (not faults) that did not end as expected, in the interval.
    var errors: Int
    /// Faults run in the interval, and how many of them did not end as expected.
    var faults: Int
    var faultErrors: Int
}

enum Sampler {
    /// The daemon's side of a sample, now; the ledger's side is filled in at the end (`fill`), when
    /// every request of the interval has ended.
    static func take(pid: Int32, proxyPort: Int, time: Double) -> Sample {
        let fdDirectory = "/proc/\(pid)/fd"
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: fdDirectory)) ?? []
        var inodes = Set<String>()
        for fd in fds {
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: fdDirectory + "/" + fd),
                  target.hasPrefix("socket:[") else { continue }
            inodes.insert(String(target.dropFirst(8).dropLast()))
        }
        var closeWait = 0
        var clientSockets = 0
        for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
            for line in readText(table).split(separator: "\n").dropFirst() {
                let columns = line.split(separator: " ")
                guard columns.count > 9, inodes.contains(String(columns[9])) else { continue }
                let state = columns[3]
                if state == "08" { closeWait += 1 }
                let localPort = columns[1].split(separator: ":").last.flatMap { Int($0, radix: 16) }
                if localPort == proxyPort, state != "0A" { clientSockets += 1 }
            }
        }
        var rss = 0
        var threads = 0
        for line in readText("/proc/\(pid)/status").split(separator: "\n") {
            let parts = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            if parts.first == "VmRSS:", parts.count > 1 { rss = Int(parts[1]) ?? 0 }
            if parts.first == "Threads:", parts.count > 1 { threads = Int(parts[1]) ?? 0 }
        }
        return Sample(time: time, descriptors: fds.count, rssKiB: rss, threads: threads, closeWait: closeWait,
                      clientSockets: clientSockets, requests: 0, p50: nil, p99: nil, errors: 0, faults: 0, faultErrors: 0)
    }

    /// Each sample's requests: those sent since the sample before it, their latency percentiles (load
    /// only: faults take as long as their fault) and how many did not end as expected.
    static func fill(_ samples: inout [Sample], from ledger: Ledger) {
        var previous = 0.0
        for index in samples.indices {
            let entries = ledger.sent(from: previous, to: samples[index].time)
            previous = samples[index].time
            let load = entries.filter { $0.kind.isLoad }
            let latencies = load.compactMap(\.latency).sorted()
            let faults = entries.filter { !$0.kind.isLoad && $0.kind != .burst }
            samples[index].requests = entries.count
            samples[index].p50 = percentile(latencies, 0.50).map { $0 * 1000 }
            samples[index].p99 = percentile(latencies, 0.99).map { $0 * 1000 }
            samples[index].errors = load.filter { !$0.expected }.count
            samples[index].faults = faults.count
            samples[index].faultErrors = faults.filter { !$0.expected }.count
        }
    }

    /// The value at `fraction` of sorted `values` (nearest rank); nil when there are none.
    static func percentile(_ values: [Double], _ fraction: Double) -> Double? {
        guard !values.isEmpty else { return nil }
        let rank = Int((fraction * Double(values.count)).rounded(.up)) - 1
        return values[min(values.count - 1, max(0, rank))]
    }
}
