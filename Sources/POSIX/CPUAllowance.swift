import CAtsgateShims
import Glibc

/// How many CPUs this process may keep busy at once, and what decided it: the online CPUs, narrowed
/// by the CPU affinity mask (taskset, systemd's CPUAffinity=) and by a cgroup v2 CPU quota
/// (systemd's CPUQuota=, a container's CPU limit). The proxy runs one event loop per such CPU:
/// counting the online CPUs alone, a pod limited to 2 CPUs on a 64-core node started 64 loops, whose
/// threads the quota then throttled in turn.
public struct CPUAllowance: Equatable, Sendable {
    public var count: Int
    /// What decided `count`, in words for the operator's start-up line.
    public var source: String

    public init(count: Int, source: String) {
        self.count = count
        self.source = source
    }

    /// This process's allowance now. The cgroup is looked up in `membership` (/proc/self/cgroup)
    /// under `cgroupRoot` (where cgroup v2 is mounted); tests pass files of their own.
    public static func current(cgroupRoot: String = "/sys/fs/cgroup",
                               membership: String = "/proc/self/cgroup") -> CPUAllowance {
        let online = max(1, sysconf(Int32(_SC_NPROCESSORS_ONLN)))
        let affinity = atsgate_affinity_cpu_count()
        return combine(online: online, affinity: affinity > 0 ? Int(affinity) : nil,
                       quota: CPUQuota.read(cgroupRoot: cgroupRoot, membership: membership))
    }

    /// The least of the three limits; the one that decided is named (affinity before the quota when
    /// both allow as many).
    public static func combine(online: Int, affinity: Int?, quota: CPUQuota?) -> CPUAllowance {
        var allowance = CPUAllowance(count: max(1, online), source: "one per online CPU")
        if let affinity, affinity < allowance.count {
            allowance = CPUAllowance(count: max(1, affinity),
                                     source: "one per CPU of the affinity mask: \(affinity) of \(online) online")
        }
        if let quota, quota.cpus < allowance.count {
            let others = affinity.map { "\($0) in the affinity mask, " } ?? ""
            allowance = CPUAllowance(count: quota.cpus, source: "the cgroup's CPU quota: cpu.max '\(quota.limit)' "
                                     + "in \(quota.file), rounded up; \(others)\(online) online")
        }
        return allowance
    }
}

/// A cgroup v2 CPU quota: the tightest `cpu.max` on the way from the process's cgroup up to the
/// root (each level caps everything below it), as whole CPUs.
public struct CPUQuota: Equatable, Sendable {
    /// quota / period, rounded up, at least 1.
    public var cpus: Int
    /// The `cpu.max` file that set it, and its text ("150000 100000").
    public var file: String
    public var limit: String

    public init(cpus: Int, file: String, limit: String) {
        self.cpus = cpus
        self.file = file
        self.limit = limit
    }

    /// CPUs a `cpu.max` text allows: "QUOTA PERIOD" in microseconds, rounded up (1.5 CPUs of time
    /// keep 2 loops busy part of the time; 1 would leave half a CPU unused), at least 1; nil for
    /// "max PERIOD" (no limit) or text that is neither.
    public static func cpus(cpuMax text: String) -> Int? {
        let parts = text.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "\t" })
        guard parts.count == 2, let quota = Int(parts[0]), let period = Int(parts[1]), quota > 0, period > 0 else {
            return nil
        }
        return max(1, (quota + period - 1) / period)
    }

    /// The process's cgroup v2 path in the text of /proc/self/cgroup: the "0::PATH" line (cgroup v1
    /// hierarchies have lines of their own, and no cpu.max).
    public static func cgroupPath(membership text: String) -> String? {
        for line in text.split(separator: "\n") where line.hasPrefix("0::") {
            return String(line.dropFirst(3))
        }
        return nil
    }

    /// The tightest quota from the process's cgroup up to `cgroupRoot`; nil when none is set, or
    /// when the files are not there (no cgroup v2, or a hierarchy this process cannot see). In a
    /// container with its own cgroup namespace the path is "/" and the root's cpu.max is its limit.
    public static func read(cgroupRoot: String, membership: String) -> CPUQuota? {
        guard let text = readSmallFile(membership), let path = cgroupPath(membership: text) else { return nil }
        var components = path.split(separator: "/").map(String.init)
        var tightest: CPUQuota?
        while true {
            let directory = ([cgroupRoot] + components).joined(separator: "/")
            let file = directory + "/cpu.max"
            if let limit = readSmallFile(file), let cpus = cpus(cpuMax: limit), cpus < (tightest?.cpus ?? .max) {
                tightest = CPUQuota(cpus: cpus, file: file,
                                    limit: String(limit.split(separator: "\n").first ?? ""))
            }
            if components.isEmpty { return tightest }
            components.removeLast()
        }
    }

    /// A small text file (a cgroup or /proc entry), or nil when it cannot be read.
    private static func readSmallFile(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { Glibc.close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while bytes.count < 65536 {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { break }
            bytes += buffer[..<n]
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
