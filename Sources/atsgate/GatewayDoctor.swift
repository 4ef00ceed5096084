import Foundation
import Glibc

/// The checks of `atsgate doctor gateway`, each adding findings: what the kernel says (forwarding, the
/// nftables table, the interfaces, the listening sockets) compared with what deploy/gateway/README.md
/// sets up.
struct GatewayDoctor {
    struct Finding {
        enum Kind: String { case ok, fail = "FAIL", info }
        var kind: Kind
        var text: String
        var line: String { "\(kind.rawValue): \(text)" }
    }

    static let table = "inet atsgate_gateway"

    private(set) var findings: [Finding] = []
    /// From the loaded ruleset: the lab interface and the redirect ports.
    private var labInterface: String?
    private var transparentPort: Int?
    private var quicPort: Int?
    private let env: [String: String]
    private let envFile: String

    init(envFile: String) {
        self.envFile = envFile
        env = Self.readEnv(envFile)
    }

    private mutating func add(_ kind: Finding.Kind, _ text: String) { findings.append(Finding(kind: kind, text: text)) }

    // MARK: forwarding

    mutating func checkForwarding() {
        func state(_ path: String) -> String {
            switch (try? String(contentsOfFile: path, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) {
            case "0": "off"
            case nil: "unknown"
            default: "on"
            }
        }
        let v4 = state("/proc/sys/net/ipv4/ip_forward"), v6 = state("/proc/sys/net/ipv6/conf/all/forwarding")
        add(.info, "forwarding: IPv4 \(v4), IPv6 \(v6) (not needed: redirected connections end at atsgate on the gateway; "
            + "the ruleset's forward chain drops lab packets either way)")
    }

    // MARK: the ruleset

    mutating func checkRuleset() {
        let listed = Self.run(["nft", "list", "table", "inet", "atsgate_gateway"])
        guard listed.status == 0 else {
            let why = listed.output.contains("No such file") ? "not loaded" : "cannot be listed: \(Self.firstLine(listed.output))"
            return add(.fail, "ruleset: table \(Self.table) is \(why): systemctl start atsgate-gateway (deploy/gateway/README.md, section 3)")
        }
        let text = listed.output
        let chains = ["prerouting", "input", "forward"].filter { text.contains("chain \($0) {") }
        let tcp = text.firstMatch(of: /iifname "([^"]+)" meta l4proto tcp .*redirect to :(\d+)/)
        let udp = text.firstMatch(of: /iifname "([^"]+)" udp dport 443 .*redirect to :(\d+)/)
        let drop = text.firstMatch(of: /iifname "([^"]+)" counter packets (\d+) bytes \d+ drop/)
        labInterface = tcp.map { String($0.1) }
        transparentPort = tcp.flatMap { Int($0.2) }
        quicPort = udp.flatMap { Int($0.2) }
        guard chains.count == 3, let labInterface, let transparentPort, let quicPort else {
            let missing = ["prerouting", "input", "forward"].filter { !chains.contains($0) }
            return add(.fail, "ruleset: table \(Self.table) is loaded but not as shipped (missing: "
                       + (missing + (tcp == nil ? ["the TCP redirect"] : []) + (udp == nil ? ["the UDP/443 redirect"] : []))
                           .joined(separator: ", ") + "): load deploy/gateway/atsgate-gateway.nft again")
        }
        add(.ok, "ruleset: table \(Self.table) is loaded (chains prerouting, input, forward) for LAB_IF \(labInterface)")
        add(.ok, "redirects: TCP from \(labInterface) to port \(transparentPort), UDP/443 (QUIC) to port \(quicPort)")
        if let drop, drop.1 == labInterface {
            add(.ok, "forward: nothing from \(labInterface) is forwarded (\(drop.2) packets dropped so far)")
        } else {
            add(.fail, "forward: no drop of packets from \(labInterface) in the forward chain: load deploy/gateway/atsgate-gateway.nft again")
        }
        for (key, loaded) in [("LAB_IF", labInterface), ("TRANSPARENT_PORT", String(transparentPort)), ("QUIC_PORT", String(quicPort))] {
            if let wanted = env[key], wanted != loaded {
                add(.fail, "ruleset: loaded with \(key)=\(loaded), but \(envFile) says \(wanted): systemctl reload atsgate-gateway")
            }
        }
        checkInterface(labInterface)
    }

    private mutating func checkInterface(_ name: String) {
        guard let flags = try? String(contentsOfFile: "/sys/class/net/\(name)/operstate", encoding: .utf8) else {
            return add(.fail, "interface: \(name) does not exist (LAB_IF names the interface the lab devices are on)")
        }
        let addresses = Self.addresses(of: name)
        let state = flags.trimmingCharacters(in: .whitespacesAndNewlines)
        if state == "down" { return add(.fail, "interface: \(name) is down") }
        if addresses.isEmpty { return add(.fail, "interface: \(name) has no address: a redirect delivers to the interface's own address") }
        add(.ok, "interface: \(name) is \(state) with \(addresses.joined(separator: ", "))")
    }

    // MARK: listeners

    /// What listens on the redirect ports, named by process: /proc/net and the processes' descriptors.
    mutating func checkListeners() {
        guard let transparentPort, let quicPort else { return }
        let sockets = SocketTable.read()
        for (port, udp, flag) in [(transparentPort, false, "--listen-transparent"), (quicPort, true, "--listen-quic")] {
            let kind = udp ? "UDP" : "TCP"
            let owners = sockets.owners(port: port, udp: udp)
            if owners.isEmpty {
                add(.fail, "listener: nothing listens on \(kind) port \(port): atsgate \(flag) (or its socket unit) is not running, "
                    + "so lab devices are refused")
            } else if let atsgate = owners.first(where: { $0.name == "atsgate" }) {
                add(.ok, "listener: atsgate (pid \(atsgate.pid)) listens on \(kind) port \(port)")
            } else {
                let names = owners.map { $0.pid > 0 ? "\($0.name) (pid \($0.pid))" : "a socket of no process seen here" }
                add(.fail, "listener: \(kind) port \(port) is held by \(names.joined(separator: ", ")), not atsgate")
            }
        }
    }

    // MARK: atsgate's own evidence

    mutating func readCounts(admin: HealthProbe.Target) {
        var request = HealthProbe(target: admin, path: "/metrics", timeout: .seconds(5))
        request.readBody = true
        let status: HealthProbe.Status
        do {
            status = try request.get()
        } catch {
            return add(.fail, "admin: \(admin.authority): \(error)")
        }
        guard status.code == 200 else { return add(.fail, "admin: \(admin.authority)/metrics answered \(status.text)") }
        let body = status.body
        func total(_ path: String) -> Int {
            body.split(separator: "\n").filter { $0.hasPrefix("atsgate_transparent_connections_total{path=\"\(path)\"") }
                .compactMap { $0.split(separator: " ").last.flatMap { Int($0) } }.reduce(0, +)
        }
        add(.info, "atsgate has recorded \(total("transparent")) transparent connections and \(total("quic")) QUIC attempts "
            + "since it started (evidence that lab traffic reaches it)")
    }

    // MARK: the probe

    /// `atsgate doctor probe` in the namespace `netns`.
    mutating func probe(from netns: String, target: String) {
        let me = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        let run = Self.run(["ip", "netns", "exec", netns, me, "doctor", "probe", target])
        let line = Self.firstLine(run.output)
        if line.hasPrefix("ok: ") {
            add(.ok, "probe from \(netns): " + line.dropFirst(4))
        } else {
            add(.fail, "probe from \(netns): " + (line.hasPrefix("FAIL: ") ? String(line.dropFirst(6)) : line))
        }
    }

    /// One HTTP request to `target` naming atsgate in Via: atsgate answers it itself (508
    /// loop-detected, no origin contacted); anything else is not atsgate.
    static func probe(_ target: HealthProbe.Target, timeout: Double) -> Finding {
        var request = HealthProbe(target: target, path: "/atsgate-doctor-probe", timeout: .milliseconds(Int64(timeout * 1000)))
        request.fields = ["Via: 1.1 atsgate"]
        request.userAgent = "atsgate-doctor"
        do {
            let status = try request.get()
            // atsgate's answer to a request that came through it already: 508 with its Proxy-Status
            // (RFC 9209) naming the loop. An origin, or another proxy, answers otherwise.
            let proxyStatus = status.fields.first { $0.lowercased().hasPrefix("proxy-status:") }
            guard status.code == 508, let proxyStatus, proxyStatus.contains("error=proxy_loop_detected") else {
                return Finding(kind: .fail, text: "\(target.authority) answered \(status.text)\(proxyStatus.map { " (\($0))" } ?? ""), "
                               + "not atsgate's 508 loop-detected: this path goes around atsgate")
            }
            let name = proxyStatus.drop { $0 != ":" }.dropFirst().prefix { $0 != ";" }.trimmingCharacters(in: .whitespaces)
            return Finding(kind: .ok, text: "a connection to \(target.authority) reached atsgate, not the origin (\(name) "
                           + "answered 508, loop-detected)")
        } catch {
            let why = error.description.contains("Connection refused")
                ? "refused: the gateway took the connection, but nothing listens on the transparent port"
                : error.description.contains("no answer") ? "\(error.description): not redirected to atsgate (dropped or routed elsewhere)"
                : error.description
            return Finding(kind: .fail, text: "a connection to \(target.authority) was \(why)")
        }
    }

    // MARK: helpers

    static func run(_ command: [String]) -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = command
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        process.standardInput = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return (127, "\(command[0]) cannot be run") }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    private static func firstLine(_ text: String) -> String {
        String(text.split(separator: "\n").first ?? "no output")
    }

    /// `KEY=value` lines of an EnvironmentFile (comments and blank lines skipped).
    static func readEnv(_ path: String) -> [String: String] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return [:] }
        var values: [String: String] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            let parts = line.split(separator: "=", maxSplits: 1)
            guard parts.count == 2 else { continue }
            values[parts[0].trimmingCharacters(in: .whitespaces)] = parts[1].trimmingCharacters(in: .whitespaces)
                .trimmingCharacters(in: CharacterSet(charactersIn: "\"'"))
        }
        return values
    }

    /// The interface's addresses, from `ip -o addr` (global ones first, as a redirect uses).
    private static func addresses(of interface: String) -> [String] {
        run(["ip", "-o", "addr", "show", "dev", interface]).output.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ")
            guard let index = fields.firstIndex(where: { $0 == "inet" || $0 == "inet6" }), index + 1 < fields.count else { return nil }
            return String(fields[index + 1])
        }
    }
}

/// The sockets of /proc/net/{tcp,tcp6,udp,udp6} that listen (TCP) or are bound (UDP), by port, with
/// the processes that hold them (found by inode in /proc/PID/fd).
struct SocketTable {
    struct Owner { var pid: Int32; var name: String }

    private var inodes: [(port: Int, udp: Bool, inode: String)] = []
    private var owners: [String: [Owner]] = [:]

    static func read() -> SocketTable {
        var table = SocketTable()
        for (file, udp) in [("tcp", false), ("tcp6", false), ("udp", true), ("udp6", true)] {
            guard let text = try? String(contentsOfFile: "/proc/net/\(file)", encoding: .utf8) else { continue }
            for line in text.split(separator: "\n").dropFirst() {
                let fields = line.split(separator: " ")
                guard fields.count > 9, let colon = fields[1].lastIndex(of: ":"),
                      let port = Int(fields[1][fields[1].index(after: colon)...], radix: 16) else { continue }
                // TCP's state 0A is LISTEN; UDP's 07 is a bound socket.
                guard fields[3] == (udp ? "07" : "0A") else { continue }
                table.inodes.append((port, udp, String(fields[9])))
            }
        }
        let wanted = Set(table.inodes.map(\.inode))
        for pid in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] where pid.allSatisfy(\.isNumber) {
            guard let fds = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd") else { continue }
            let name = ((try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8)) ?? "?")
                .trimmingCharacters(in: .whitespacesAndNewlines)
            for fd in fds {
                guard let link = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(fd)"),
                      link.hasPrefix("socket:["), case let inode = String(link.dropFirst(8).dropLast()), wanted.contains(inode)
                else { continue }
                table.owners[inode, default: []].append(Owner(pid: Int32(pid) ?? 0, name: name))
            }
        }
        return table
    }

    /// Who holds a socket on `port`; a socket no process here holds (systemd's, say) is pid 0.
    func owners(port: Int, udp: Bool) -> [Owner] {
        inodes.filter { $0.port == port && $0.udp == udp }.flatMap { owners[$0.inode] ?? [Owner(pid: 0, name: "")] }
    }
}
