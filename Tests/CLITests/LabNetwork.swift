import Foundation
import Glibc
import Testing
import TestSupport

/// A device lab's network, made of network namespaces so that nothing leaves the machine: an outer
/// namespace (`unshare -n`) is the proxy host, with only its own loopback; a veth pair joins it to a
/// second namespace, the lab's LAN, where devices have addresses from 198.18.0.0/15 (the range set
/// aside for benchmarks). The proxy listens on the veth's own address, 198.18.0.1.
///
/// Each namespace is held by a `sleep` (bounded: 600 s) started inside it; programs join one with
/// `nsenter -t PID -n`, which execs them, so a BackgroundProcess's PID is the program's own. Needs
/// root (CI runs as root).
final class LabNetwork {
    static let proxyAddress = "198.18.0.1"
    /// The device that uses the proxy, and a second device on the LAN that serves the lab's own origin.
    static let device = "198.18.0.2"
    static let lanServer = "198.18.0.3"
    /// A stand-in for the cloud's instance metadata service, on the proxy host.
    static let metadata = "169.254.169.254"

    private let hostHolder: BackgroundProcess
    private let lanHolder: BackgroundProcess
    let hostPID: Int32
    let lanPID: Int32

    init() throws {
        hostHolder = try BackgroundProcess("/usr/bin/unshare", ["-n", "sleep", "600"])
        hostPID = hostHolder.process.processIdentifier
        try LabNetwork.waitForOwnNamespace(hostPID, differentFrom: getpid())
        lanHolder = try BackgroundProcess("/usr/bin/nsenter", ["-t", "\(hostPID)", "-n", "unshare", "-n", "sleep", "600"])
        lanPID = lanHolder.process.processIdentifier
        try LabNetwork.waitForOwnNamespace(lanPID, differentFrom: hostPID)
        try run(in: hostPID, """
            ip link set lo up
            ip link add veth-proxy type veth peer name veth-lan netns \(lanPID)
            ip addr add \(LabNetwork.proxyAddress)/24 dev veth-proxy
            ip link set veth-proxy up
            ip addr add \(LabNetwork.metadata)/32 dev lo
            """)
        try run(in: lanPID, """
            ip link set lo up
            ip addr add \(LabNetwork.device)/24 dev veth-lan
            ip addr add \(LabNetwork.lanServer)/24 dev veth-lan
            ip link set veth-lan up
            """)
        // Both ends carry traffic once each reports LOWER_UP.
        let deadline = Date().addingTimeInterval(10)
        while (try? run(in: hostPID, "ip -o link show veth-proxy | grep -q LOWER_UP")) == nil
                || (try? run(in: lanPID, "ip -o link show veth-lan | grep -q LOWER_UP")) == nil {
            guard Date() < deadline else { throw HarnessError("the veth link between the namespaces did not come up") }
            usleep(50_000)
        }
    }

    deinit {
        lanHolder.stop(signal: SIGKILL)
        hostHolder.stop(signal: SIGKILL)
    }

    /// Runs a shell script in a namespace (one of the PIDs above); throws with its output on failure.
    @discardableResult
    func run(in pid: Int32, _ script: String) throws -> String {
        let result = try Subprocess.run("/usr/bin/nsenter", ["-t", "\(pid)", "-n", "/bin/sh", "-ec", script])
        guard result.status == 0 else { throw HarnessError("in namespace \(pid): \(script): \(result.stderr)\(result.stdout)") }
        return result.stdout
    }

    /// A long-running program inside a namespace.
    func start(in pid: Int32, _ executable: String, _ arguments: [String]) throws -> BackgroundProcess {
        try BackgroundProcess("/usr/bin/nsenter", ["-t", "\(pid)", "-n", executable] + arguments)
    }

    /// A program run to completion inside a namespace.
    func call(in pid: Int32, _ executable: String, _ arguments: [String]) throws -> AtsgateRun {
        try Subprocess.run("/usr/bin/nsenter", ["-t", "\(pid)", "-n", executable] + arguments)
    }

    private static func namespace(of pid: Int32) -> String? {
        try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/ns/net")
    }

    /// unshare(1) has made its namespace once its process's differs from its parent's.
    private static func waitForOwnNamespace(_ pid: Int32, differentFrom parent: Int32) throws {
        let deadline = Date().addingTimeInterval(10)
        let parentNamespace = namespace(of: parent)
        while namespace(of: pid) == nil || namespace(of: pid) == parentNamespace {
            guard Date() < deadline else {
                throw HarnessError("no network namespace of its own for \(pid): unshare -n needs root")
            }
            usleep(10_000)
        }
    }
}

/// The witness origin of Tests/Fixtures/witness_origin.py: every connection it accepts is a line.
final class WitnessOrigin {
    let process: BackgroundProcess

    init(_ network: LabNetwork, in pid: Int32, listen: [String]) throws {
        process = try network.start(in: pid, Origin.python, [Fixtures.path("witness_origin.py")] + listen)
        try process.wait { out, _ in out.contains("listening") }
    }

    /// The connections it accepted, as "LOCAL from PEER".
    var accepted: [String] {
        process.stdout.split(separator: "\n").filter { $0.hasPrefix("accepted ") }.map { String($0.dropFirst("accepted ".count)) }
    }
}

enum Fixtures {
    static func path(_ name: String) -> String {
        repository("Tests/Fixtures/\(name)")
    }

    /// A file of the repository (what deploy/ ships, say).
    static func repository(_ path: String) -> String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(path).path
    }
}
