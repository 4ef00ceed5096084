import Foundation
import Glibc

/// The transparent gate's lab (issue 30), made of network namespaces and veth pairs so that nothing
/// leaves the machine: a device with no proxy setting whose default route is the gateway, the gateway
/// (where atsgate runs, under the shipped ruleset deploy/gateway/atsgate-gateway.nft once a test loads
/// it), and an origin network behind the gateway. Addresses are 198.18.0.0/15 and, for IPv6, ULAs:
///
///     device  lab0 198.18.1.2  fd00:18:1::2 --- lab0 198.18.1.1  fd00:18:1::1  gateway
///                                               wan0 198.18.2.1  fd00:18:2::1
///     origin  wan0 198.18.2.2  fd00:18:2::2 ------'
///
/// The gateway forwards between its interfaces (IPv4 and IPv6 forwarding on), so without the ruleset
/// the device reaches the origin directly: a test can show that the ruleset, not the lab, stops it.
/// The namespaces are named (`ip netns`), so commands run in them with `ip netns exec` and sockets are
/// made in them by a thread that enters one (`inNamespace`). `close()` (and deinit) stops what was
/// started in them and deletes them; namespaces a crashed test run left behind are deleted by the next
/// lab. Needs root, iproute2 and nftables (scripts/install-deps installs them).
public final class GatewayLab: @unchecked Sendable {
    public enum Host: String, CaseIterable, Sendable {
        case device, gateway, origin
    }

    public static let deviceIPv4 = "198.18.1.2"
    public static let gatewayLabIPv4 = "198.18.1.1"
    public static let gatewayWANIPv4 = "198.18.2.1"
    public static let originIPv4 = "198.18.2.2"
    public static let deviceIPv6 = "fd00:18:1::2"
    public static let gatewayLabIPv6 = "fd00:18:1::1"
    public static let gatewayWANIPv6 = "fd00:18:2::1"
    public static let originIPv6 = "fd00:18:2::2"
    /// The gateway's interface to the lab: the ruleset's LAB_IF.
    public static let labInterface = "lab0"

    /// The shipped ruleset.
    public static let rulesetPath = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("deploy/gateway/atsgate-gateway.nft").path

    /// Each host's namespace.
    public let namespaces: [Host: LabNamespace]
    private let lock = NSLock()
    private var closed = false

    /// Builds the lab; throws (having removed what it made) when a step fails or takes longer than
    /// `timeout` seconds.
    public init(timeout: TimeInterval = 20) throws {
        try LabNamespace.checkTools(["ip"])
        LabNamespace.removeLeftovers()
        var made: [Host: LabNamespace] = [:]
        do {
            for host in Host.allCases { made[host] = try LabNamespace(role: host.rawValue) }
            namespaces = made
        } catch {
            made.values.forEach { $0.close() }
            throw error
        }
        do {
            try build(timeout: timeout)
        } catch {
            close()
            throw error
        }
    }

    deinit { close() }

    public subscript(host: Host) -> LabNamespace { namespaces[host]! }

    private func build(timeout: TimeInterval) throws {
        let device = self[.device].name, gateway = self[.gateway].name, origin = self[.origin].name
        // Both ends of each pair are made straight in their namespaces, so no name is taken in ours.
        try LabCommand.check(["ip", "link", "add", "lab0", "netns", device, "type", "veth", "peer", "name", "lab0", "netns", gateway])
        try LabCommand.check(["ip", "link", "add", "wan0", "netns", gateway, "type", "veth", "peer", "name", "wan0", "netns", origin])
        // nodad: an address still in duplicate-address detection could be neither used nor redirected to.
        try self[.device].run("""
            ip link set lo up
            ip addr add \(Self.deviceIPv4)/24 dev lab0
            ip -6 addr add \(Self.deviceIPv6)/64 dev lab0 nodad
            ip link set lab0 up
            ip route add default via \(Self.gatewayLabIPv4)
            ip -6 route add default via \(Self.gatewayLabIPv6)
            """)
        try self[.gateway].run("""
            ip link set lo up
            ip addr add \(Self.gatewayLabIPv4)/24 dev lab0
            ip -6 addr add \(Self.gatewayLabIPv6)/64 dev lab0 nodad
            ip addr add \(Self.gatewayWANIPv4)/24 dev wan0
            ip -6 addr add \(Self.gatewayWANIPv6)/64 dev wan0 nodad
            ip link set lab0 up
            ip link set wan0 up
            sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1
            """)
        try self[.origin].run("""
            ip link set lo up
            ip addr add \(Self.originIPv4)/24 dev wan0
            ip -6 addr add \(Self.originIPv6)/64 dev wan0 nodad
            ip link set wan0 up
            ip route add default via \(Self.gatewayWANIPv4)
            ip -6 route add default via \(Self.gatewayWANIPv6)
            """)
        // Each veth carries traffic once both of its ends report LOWER_UP.
        let deadline = Date().addingTimeInterval(timeout)
        for (host, interface) in [(Host.device, "lab0"), (.gateway, "lab0"), (.gateway, "wan0"), (.origin, "wan0")] {
            while (try? self[host].run("ip -o link show \(interface) | grep -q LOWER_UP")) == nil {
                guard Date() < deadline else { throw HarnessError("\(interface) in the \(host) namespace did not come up") }
                usleep(20_000)
            }
        }
    }

    /// Loads the shipped ruleset in the gateway with its three defines (`nft -D`); returns nft's
    /// output, throws with it when nft refuses.
    @discardableResult
    public func loadGatewayRuleset(transparentPort: Int, quicPort: Int, path: String = GatewayLab.rulesetPath) throws -> String {
        try LabNamespace.checkTools(["nft"])
        return try self[.gateway].check(["nft", "-D", "LAB_IF=\(Self.labInterface)", "-D", "TRANSPARENT_PORT=\(transparentPort)",
                                         "-D", "QUIC_PORT=\(quicPort)", "-f", path])
    }

    /// Stops every process started in the lab and deletes its namespaces (the veths go with them).
    public func close() {
        let first: Bool = lock.withLock {
            defer { closed = true }
            return !closed
        }
        guard first else { return }
        namespaces.values.forEach { $0.close() }
    }
}

/// One named network namespace (`ip netns add`): commands run in it with `ip netns exec`, programs
/// start in it in the background, and a thread can enter it to make sockets there.
public final class LabNamespace: @unchecked Sendable {
    public let name: String
    private let lock = NSLock()
    private var processes: [LabProcess] = []
    private var closed = false

    nonisolated(unsafe) private static var counter = 0
    private static let counterLock = NSLock()
    private static let prefix = "atsgate-lab-"

    /// A new namespace named after this process and `role`, with its loopback up.
    public init(role: String) throws {
        try Self.checkTools(["ip"])
        guard getuid() == 0 else { throw HarnessError("network namespaces need root (the tests run as root in CI)") }
        let number = Self.counterLock.withLock {
            Self.counter += 1
            return Self.counter
        }
        name = "\(Self.prefix)\(getpid())-\(number)-\(role)"
        try LabCommand.check(["ip", "netns", "add", name])
        do {
            try run("ip link set lo up")
        } catch {
            close()
            throw error
        }
    }

    deinit { close() }

    /// Runs a shell script (`sh -ec`) in the namespace; throws with its output when it fails.
    @discardableResult
    public func run(_ script: String, timeout: TimeInterval = 30) throws -> String {
        try check(["/bin/sh", "-ec", script], timeout: timeout)
    }

    /// Runs a program in the namespace; throws with its output when it exits non-zero.
    @discardableResult
    public func check(_ command: [String], timeout: TimeInterval = 30) throws -> String {
        let result = try call(command, timeout: timeout)
        guard result.status == 0 else {
            throw HarnessError("in \(name): \(command.joined(separator: " ")) exited \(result.status): \(result.stderr)\(result.stdout)")
        }
        return result.stdout
    }

    /// Runs a program in the namespace to its end, whatever its exit status.
    public func call(_ command: [String], timeout: TimeInterval = 30) throws -> LabCommand.Result {
        try LabCommand.run(["ip", "netns", "exec", name] + command, timeout: timeout)
    }

    /// Starts a program in the namespace; it is stopped by `close()` at the latest.
    public func start(_ command: [String]) throws -> LabProcess {
        let process = try LabProcess(["ip", "netns", "exec", name] + command)
        lock.withLock { processes.append(process) }
        return process
    }

    /// Runs `body` on a thread that has entered the namespace: sockets it makes belong to the
    /// namespace, and stay there when used from any thread afterwards.
    public func inNamespace<T>(_ body: @escaping () throws -> T) throws -> T {
        let fd = open("/run/netns/\(name)", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw HarnessError("cannot open /run/netns/\(name): \(String(cString: strerror(errno)))") }
        defer { Glibc.close(fd) }
        let box = ResultBox<T>(body)
        let done = DispatchSemaphore(value: 0)
        // A thread of its own, not a Dispatch worker, because the namespace sticks to the thread.
        let thread = Thread {
            if setNetworkNamespace(fd, 0x4000_0000) != 0 { // CLONE_NEWNET
                box.result = .failure(HarnessError("setns into \(self.name): \(String(cString: strerror(errno)))"))
            } else {
                box.result = Result { try box.body() }
            }
            done.signal()
        }
        thread.start()
        done.wait()
        return try box.result!.get()
    }

    /// Stops what was started here and deletes the namespace.
    public func close() {
        let running: [LabProcess]? = lock.withLock {
            guard !closed else { return nil }
            closed = true
            return processes
        }
        guard let running else { return }
        running.forEach { $0.stop() }
        _ = try? LabCommand.run(["ip", "netns", "del", name], timeout: 10)
    }

    /// Deletes namespaces that labs of test processes no longer alive left behind.
    static func removeLeftovers() {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: "/run/netns") else { return }
        for name in names where name.hasPrefix(prefix) {
            guard let pid = Int32(name.dropFirst(prefix.count).prefix { $0 != "-" }), pid != getpid(),
                  kill(pid, 0) != 0, errno == ESRCH else { continue }
            _ = try? LabCommand.run(["ip", "netns", "del", name], timeout: 10)
        }
    }

    static func checkTools(_ tools: [String]) throws {
        for tool in tools where LabCommand.find(tool) == nil {
            throw HarnessError("\(tool) is missing: run scripts/install-deps (iproute2, nftables)")
        }
    }
}

/// Carries a body to the thread that runs it and its result back; the semaphore orders the two.
private final class ResultBox<T>: @unchecked Sendable {
    let body: () throws -> T
    var result: Result<T, Error>?

    init(_ body: @escaping () throws -> T) { self.body = body }
}

/// setns(2), which Glibc's Swift module does not export: looked up once at run time.
private let setNetworkNamespace: @convention(c) (Int32, Int32) -> Int32 = {
    guard let symbol = dlsym(nil, "setns") else { fatalError("the C library has no setns") }
    return unsafeBitCast(symbol, to: (@convention(c) (Int32, Int32) -> Int32).self)
}()

/// Programs run to their end, bounded in time.
public enum LabCommand {
    public struct Result: Sendable {
        public var status: Int32
        public var stdout: String
        public var stderr: String
    }

    /// `command[0]` is looked up on the usual system paths.
    public static func run(_ command: [String], timeout: TimeInterval = 30) throws -> Result {
        let process = try LabProcess(command)
        guard process.waitForExit(timeout: timeout) else {
            process.stop()
            throw HarnessError("\(command.joined(separator: " ")) did not finish in \(Int(timeout)) s; stderr: \(process.stderr)")
        }
        process.waitForOutput()
        return Result(status: process.exitStatus, stdout: process.stdout, stderr: process.stderr)
    }

    @discardableResult
    public static func check(_ command: [String], timeout: TimeInterval = 30) throws -> String {
        let result = try run(command, timeout: timeout)
        guard result.status == 0 else {
            throw HarnessError("\(command.joined(separator: " ")) exited \(result.status): \(result.stderr)\(result.stdout)")
        }
        return result.stdout
    }

    static func find(_ tool: String) -> String? {
        if tool.hasPrefix("/") { return FileManager.default.isExecutableFile(atPath: tool) ? tool : nil }
        return ["/usr/sbin", "/usr/bin", "/sbin", "/bin", "/usr/local/bin"].map { "\($0)/\(tool)" }
            .first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}

/// A program started by the lab, its output collected as it comes.
public final class LabProcess: @unchecked Sendable {
    private let process = Process()
    private let lock = NSLock()
    private var out = ""
    private var err = ""
    private let outputDone = DispatchGroup()

    init(_ command: [String]) throws {
        guard let executable = LabCommand.find(command[0]) else { throw HarnessError("\(command[0]) is not installed") }
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = Array(command.dropFirst())
        process.standardInput = FileHandle.nullDevice
        let outPipe = Pipe(), errPipe = Pipe()
        process.standardOutput = outPipe
        process.standardError = errPipe
        for (pipe, isError) in [(outPipe, false), (errPipe, true)] {
            outputDone.enter()
            let done = outputDone
            PipeDrain.start(pipe.fileHandleForReading, onData: { [weak self] data in
                guard let self else { return }
                let text = String(decoding: data, as: UTF8.self)
                self.lock.withLock {
                    if isError { self.err += text } else { self.out += text }
                }
            }, onEnd: { done.leave() })
        }
        try process.run()
    }

    deinit { stop() }

    public var stdout: String { lock.withLock { out } }
    public var stderr: String { lock.withLock { err } }
    public var isRunning: Bool { process.isRunning }
    public var pid: Int32 { process.processIdentifier }
    public var exitStatus: Int32 { process.terminationStatus }

    /// Polls until `predicate` holds for (stdout, stderr); throws when the program exits first or
    /// `timeout` passes.
    public func wait(timeout: TimeInterval = 20, until predicate: (String, String) -> Bool) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if predicate(stdout, stderr) { return }
            if !process.isRunning {
                waitForOutput()
                if predicate(stdout, stderr) { return }
                throw HarnessError("\(process.arguments?.joined(separator: " ") ?? "") exited \(process.terminationStatus): \(stderr)")
            }
            usleep(20_000)
        }
        throw HarnessError("timed out waiting for \(process.arguments?.joined(separator: " ") ?? ""); stdout: \(stdout) stderr: \(stderr)")
    }

    func waitForExit(timeout: TimeInterval) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning {
            guard Date() < deadline else { return false }
            usleep(5_000)
        }
        return true
    }

    func waitForOutput() {
        _ = outputDone.wait(timeout: .now() + 5)
    }

    /// SIGTERM, then SIGKILL after 5 s; waits for the exit.
    public func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGTERM)
        if !waitForExit(timeout: 5) {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        waitForOutput()
    }
}
