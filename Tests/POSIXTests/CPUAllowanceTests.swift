import Foundation
import POSIX
import Testing

/// The loop count's arithmetic: cgroup v2 cpu.max files and /proc/self/cgroup written by the test,
/// and the affinity mask and online CPUs combined with them.
@Suite struct CPUAllowanceTests {
    @Test(arguments: [
        ("max 100000", nil), ("max 100000\n", nil), ("100000 100000", 1), ("150000 100000", 2),
        ("200000 100000\n", 2), ("50000 100000", 1), ("1 100000", 1), ("250000 50000", 5),
        ("", nil), ("100000", nil), ("-1 100000", nil), ("100000 0", nil), ("a b", nil),
    ] as [(String, Int?)])
    func cpuMaxIsQuotaOverPeriodRoundedUp(text: String, cpus: Int?) {
        #expect(CPUQuota.cpus(cpuMax: text) == cpus)
    }

    @Test func theCgroupV2PathIsTheZeroLine() {
        #expect(CPUQuota.cgroupPath(membership: "0::/system.slice/atsgate.service\n") == "/system.slice/atsgate.service")
        #expect(CPUQuota.cgroupPath(membership: "12:cpu,cpuacct:/docker/abc\n0::/docker/abc\n") == "/docker/abc")
        #expect(CPUQuota.cgroupPath(membership: "12:cpu,cpuacct:/docker/abc\n1:name=systemd:/x\n") == nil)
        #expect(CPUQuota.cgroupPath(membership: "0::/\n") == "/")
    }

    /// A cgroup tree the test writes: the tightest cpu.max from the leaf up to the root wins, and
    /// levels without one (or with "max") do not count.
    @Test func theTightestQuotaOnTheWayUpIsTheLimit() throws {
        let root = try makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let membership = root + "/cgroup"
        try write("0::/kubepods/pod1/container\n", to: membership)
        try write("max 100000\n", to: root + "/cpu.max")
        try write("400000 100000\n", to: root + "/kubepods/cpu.max")
        try write("150000 100000\n", to: root + "/kubepods/pod1/cpu.max")
        try write("max 100000\n", to: root + "/kubepods/pod1/container/cpu.max")
        let quota = try #require(CPUQuota.read(cgroupRoot: root, membership: membership))
        #expect(quota == CPUQuota(cpus: 2, file: root + "/kubepods/pod1/cpu.max", limit: "150000 100000"))

        // A tighter limit on the container itself.
        try write("50000 100000\n", to: root + "/kubepods/pod1/container/cpu.max")
        #expect(CPUQuota.read(cgroupRoot: root, membership: membership)?.cpus == 1)

        // No limit anywhere; then no cgroup v2 line at all; then no membership file.
        for file in ["/kubepods/cpu.max", "/kubepods/pod1/cpu.max", "/kubepods/pod1/container/cpu.max"] {
            try write("max 100000\n", to: root + file)
        }
        #expect(CPUQuota.read(cgroupRoot: root, membership: membership) == nil)
        try write("4:cpu:/kubepods\n", to: membership)
        #expect(CPUQuota.read(cgroupRoot: root, membership: membership) == nil)
        #expect(CPUQuota.read(cgroupRoot: root, membership: root + "/missing") == nil)
    }

    /// Inside a cgroup namespace the process sees "0::/" and the mount's own cpu.max is its limit.
    @Test func aContainerRootQuotaCounts() throws {
        let root = try makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        try write("0::/\n", to: root + "/cgroup")
        try write("300000 100000\n", to: root + "/cpu.max")
        #expect(CPUQuota.read(cgroupRoot: root, membership: root + "/cgroup")?.cpus == 3)
    }

    @Test func theLeastLimitDecidesAndIsNamed() {
        let quota = CPUQuota(cpus: 2, file: "/sys/fs/cgroup/x/cpu.max", limit: "150000 100000")
        let none = CPUAllowance.combine(online: 64, affinity: nil, quota: nil)
        #expect(none.count == 64)
        #expect(none.source == "one per online CPU")
        let all = CPUAllowance.combine(online: 64, affinity: 64, quota: nil)
        #expect(all.count == 64)
        let pinned = CPUAllowance.combine(online: 64, affinity: 1, quota: quota)
        #expect(pinned.count == 1)
        #expect(pinned.source.contains("affinity mask: 1 of 64 online"))
        let limited = CPUAllowance.combine(online: 64, affinity: 8, quota: quota)
        #expect(limited.count == 2)
        #expect(limited.source.contains("cpu.max '150000 100000' in /sys/fs/cgroup/x/cpu.max"), "\(limited.source)")
        // A quota as large as the mask leaves the mask as the reason.
        let even = CPUAllowance.combine(online: 64, affinity: 2, quota: quota)
        #expect(even.count == 2)
        #expect(even.source.contains("affinity"))
        #expect(CPUAllowance.combine(online: 0, affinity: nil, quota: nil).count == 1)
    }

    /// The live process: at least one CPU, never more than are online.
    @Test func thisProcessHasAnAllowance() {
        let allowance = CPUAllowance.current()
        #expect(allowance.count >= 1)
        #expect(allowance.count <= ProcessInfo.processInfo.processorCount)
    }

    private func makeDirectory() throws -> String {
        let path = NSTemporaryDirectory() + "cpu-allowance-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    private func write(_ text: String, to path: String) throws {
        let directory = (path as NSString).deletingLastPathComponent
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try text.write(toFile: path, atomically: true, encoding: .utf8)
    }
}
