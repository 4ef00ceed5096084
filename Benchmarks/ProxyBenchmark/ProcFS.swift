import Foundation
import Glibc

/// CPU time and memory of processes, read from /proc: what a proxy spends, and what everything else
/// on the machine took while it was measured.
enum ProcFS {
    static let clockTicksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))
    static let cores = Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))

    /// One process's line of /proc/PID/stat.
    struct Stat {
        let pid: pid_t
        let parent: pid_t
        /// utime + stime of the process and its threads.
        let ticks: Double
        /// cutime + cstime: its children that it has waited for.
        let reapedChildrenTicks: Double
    }

    /// Reads a /proc file whole (their size is 0 in stat, so Foundation's readers are not used).
    static func read(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            bytes.append(contentsOf: buffer[0..<n])
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    static func stat(_ pid: pid_t) -> Stat? {
        guard let text = read("/proc/\(pid)/stat"), let close = text.range(of: ") ", options: .backwards) else {
            return nil
        }
        // After the command name: state ppid ... utime(14) stime(15) cutime(16) cstime(17).
        let fields = text[close.upperBound...].split(separator: " ")
        guard fields.count > 14, let parent = pid_t(fields[1]) else { return nil }
        let number = { (i: Int) in Double(fields[i]) ?? 0 }
        return Stat(pid: pid, parent: parent, ticks: number(11) + number(12), reapedChildrenTicks: number(13) + number(14))
    }

    static func allStats() -> [Stat] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return names.compactMap { pid_t($0) }.compactMap { stat($0) }
    }

    static func children(of pid: pid_t) -> [pid_t] {
        allStats().filter { $0.parent == pid }.map(\.pid)
    }

    /// Every process below `pid` (children, their children...).
    static func descendants(of pid: pid_t) -> [pid_t] {
        let stats = allStats()
        let parents = Dictionary(stats.map { ($0.pid, $0.parent) }, uniquingKeysWith: { a, _ in a })
        return stats.map(\.pid).filter { $0 != pid && isDescendant($0, of: pid, parents: parents) }
    }

    private static func isDescendant(_ pid: pid_t, of root: pid_t, parents: [pid_t: pid_t]) -> Bool {
        var current = pid
        for _ in 0..<64 {
            if current == root { return true }
            guard let parent = parents[current], parent > 1 else { return false }
            current = parent
        }
        return false
    }

    /// CPU seconds of a process and all its descendants, live ones and reaped ones (tinyproxy serves
    /// from child processes, squid and privoxy have helpers, Traffic Server a crash-log helper).
    static func treeCPUSeconds(_ root: pid_t) -> Double {
        let stats = allStats()
        let parents = Dictionary(stats.map { ($0.pid, $0.parent) }, uniquingKeysWith: { a, _ in a })
        let ticks = stats.filter { isDescendant($0.pid, of: root, parents: parents) }
            .reduce(0) { $0 + $1.ticks + $1.reapedChildrenTicks }
        return ticks / clockTicksPerSecond
    }

    /// CPU seconds the other processes on the machine used: the machine's busy time (user, nice and
    /// system of every core, /proc/stat) less this benchmark's tree (itself, its live descendants, and
    /// those they waited for). Interrupt time is left out: most of it is the loopback traffic the
    /// benchmark makes. Summing the other processes instead would count a process's whole life at the
    /// moment its parent reaps it (a test suite that ends during a column).
    static func otherCPUSeconds() -> Double {
        guard let line = read("/proc/stat")?.split(separator: "\n").first else { return 0 }
        let fields = line.split(separator: " ").dropFirst().compactMap { Double($0) }
        guard fields.count >= 3 else { return 0 }
        return (fields[0] + fields[1] + fields[2]) / clockTicksPerSecond - treeCPUSeconds(getpid())
    }

    /// VmRSS of a process and its direct children, KiB.
    static func rssKiB(_ pid: pid_t) -> Int {
        ([pid] + children(of: pid)).reduce(0) { total, p in
            let line = read("/proc/\(p)/status")?.split(separator: "\n").first { $0.hasPrefix("VmRSS:") }
            let kib = line?.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.flatMap { Int($0) }
            return total + (kib ?? 0)
        }
    }

    /// The other processes' share of the machine (all cores) between two readings, percent.
    struct OtherLoad {
        private let cpu0 = ProcFS.otherCPUSeconds()
        private let wall0 = Date()
        func percent() -> Double {
            let wall = Date().timeIntervalSince(wall0)
            guard wall > 0 else { return 0 }
            return max(0, 100 * (ProcFS.otherCPUSeconds() - cpu0) / wall / Double(ProcFS.cores))
        }
    }

    /// Who else was busy: the processes outside this tree by the CPU they used themselves since
    /// `before` (live ones; a process that started and ended in between is not seen).
    static func busiestOthers(since before: [pid_t: Double], limit: Int = 4) -> [(String, Double)] {
        let me = getpid()
        let stats = allStats()
        let parents = Dictionary(stats.map { ($0.pid, $0.parent) }, uniquingKeysWith: { a, _ in a })
        var byName: [String: Double] = [:]
        for stat in stats where !isDescendant(stat.pid, of: me, parents: parents) {
            let used = stat.ticks / clockTicksPerSecond - (before[stat.pid] ?? 0)
            guard used > 0.05 else { continue }
            byName[commandName(stat.pid), default: 0] += used
        }
        return byName.sorted { $0.value > $1.value }.prefix(limit).map { ($0.key, $0.value) }
    }

    /// CPU seconds each process used itself so far, for `busiestOthers`.
    static func cpuByProcess() -> [pid_t: Double] {
        Dictionary(allStats().map { ($0.pid, $0.ticks / clockTicksPerSecond) }, uniquingKeysWith: { a, _ in a })
    }

    static func commandName(_ pid: pid_t) -> String {
        (read("/proc/\(pid)/comm") ?? "?").trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
