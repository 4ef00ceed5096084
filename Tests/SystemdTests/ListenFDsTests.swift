import Foundation
import Glibc
import Systemd
import Testing

/// Socket activation as systemd does it: listening sockets at descriptors 3, 4 ... and LISTEN_* set.
/// In the test process those descriptors belong to Dispatch (epoll, eventfd), so each case runs
/// `ListenFDsChild` in a child process started the way the manager starts a service.
@Suite struct ListenFDsTests {
    @Test func proxyAndAdminFromTwoSocketUnits() throws {
        let proxy = try loopbackSocket(listening: true), admin = try loopbackSocket(listening: true)
        defer { close(proxy); close(admin) }
        let report = try runActivatedChild(sockets: [proxy, admin], names: "proxy:admin")
        #expect(report == ["3 proxy proxy cloexec", "4 admin admin cloexec", "LISTEN_* unset"])
    }

    @Test func proxyTLSAndAdminFromThreeSocketUnits() throws {
        let proxy = try loopbackSocket(listening: true), secure = try loopbackSocket(listening: true)
        let admin = try loopbackSocket(listening: true)
        defer { close(proxy); close(secure); close(admin) }
        let report = try runActivatedChild(sockets: [proxy, secure, admin], names: "proxy:proxy-tls:admin")
        #expect(report == ["3 proxy proxy cloexec", "4 proxy-tls proxy-tls cloexec", "5 admin admin cloexec",
                           "LISTEN_* unset"])
    }

    @Test func withoutNamesTheSocketIsTheProxy() throws {
        let listener = try loopbackSocket(listening: true)
        defer { close(listener) }
        #expect(try runActivatedChild(sockets: [listener], names: nil) == ["3 - proxy cloexec", "LISTEN_* unset"])
    }

    @Test func anUnknownNameIsAnErrorNamingIt() throws {
        let listener = try loopbackSocket(listening: true)
        defer { close(listener) }
        #expect(try runActivatedChild(sockets: [listener], names: "metrics") == [
            "error: inherited fd 3 (metrics): FileDescriptorName 'metrics' has no role: name the socket 'proxy', 'proxy-tls', "
                + "'admin', 'transparent', 'tproxy' or 'quic'",
        ])
    }

    @Test func aSocketThatDoesNotListenIsAnError() throws {
        let listener = try loopbackSocket(listening: true), bound = try loopbackSocket(listening: false)
        defer { close(listener); close(bound) }
        #expect(try runActivatedChild(sockets: [listener, bound], names: "proxy:admin") == [
            "error: inherited fd 4 (admin) is not a listening stream socket: use ListenStream= with Accept=no",
        ])
    }

    @Test func theTransparentGatesListenersTheirQUICSocketADatagramOne() throws {
        let proxy = try loopbackSocket(listening: true), transparent = try loopbackSocket(listening: true)
        let tproxy = try loopbackSocket(listening: true), quic = try loopbackSocket(type: SOCK_DGRAM)
        defer { [proxy, transparent, tproxy, quic].forEach { close($0) } }
        let report = try runActivatedChild(sockets: [proxy, transparent, tproxy, quic], names: "proxy:transparent:tproxy:quic")
        #expect(report == ["3 proxy proxy cloexec", "4 transparent transparent cloexec", "5 tproxy tproxy cloexec",
                           "6 quic quic cloexec", "LISTEN_* unset"])
    }

    @Test func aQUICSocketMustBeADatagramOneAndATransparentOneAListeningStream() throws {
        let stream = try loopbackSocket(listening: true), datagram = try loopbackSocket(type: SOCK_DGRAM)
        defer { close(stream); close(datagram) }
        #expect(try runActivatedChild(sockets: [stream], names: "quic") == [
            "error: inherited fd 3 (quic) is not a datagram socket: use ListenDatagram=",
        ])
        #expect(try runActivatedChild(sockets: [datagram], names: "transparent") == [
            "error: inherited fd 3 (transparent) is not a listening stream socket: use ListenStream= with Accept=no",
        ])
    }

    @Test func roleNames() throws {
        #expect(try InheritedSocket.Role(fileDescriptorName: "transparent") == .transparent)
        #expect(try InheritedSocket.Role(fileDescriptorName: "tproxy") == .tproxy)
        #expect(try InheritedSocket.Role(fileDescriptorName: "quic") == .quic)
        #expect(InheritedSocket.Role.quic.isDatagram && !InheritedSocket.Role.transparent.isDatagram)
        #expect(try InheritedSocket.Role(fileDescriptorName: nil) == .proxy)
        #expect(try InheritedSocket.Role(fileDescriptorName: "proxy") == .proxy)
        #expect(try InheritedSocket.Role(fileDescriptorName: "admin") == .admin)
        #expect(try InheritedSocket.Role(fileDescriptorName: "proxy-tls") == .proxyTLS)
        #expect(throws: SystemdError.self) { try InheritedSocket.Role(fileDescriptorName: "atsgate.socket") }
    }
}

extension ProcessState {
    /// The cases that need no descriptors, only the environment.
    @Suite struct ListenFDsEnvironmentTests {
        @Test func variablesForAnotherProcessAreIgnored() throws {
            let variables = managerVariablesUnset.merging(["LISTEN_FDS": "1", "LISTEN_PID": "1", "LISTEN_FDNAMES": "proxy"]) { $1 }
            let sockets = try withEnvironment(variables) { try ListenFDs.inherited() }
            #expect(sockets == [])
        }

        @Test func notActivatedMeansNoSockets() throws {
            let sockets = try withEnvironment(managerVariablesUnset) { try ListenFDs.inherited() }
            #expect(sockets == [])
        }

        @Test func malformedVariablesAreAnError() {
            let variables = managerVariablesUnset.merging(["LISTEN_FDS": "two", "LISTEN_PID": String(getpid())]) { $1 }
            let error = withEnvironment(variables) { #expect(throws: SystemdError.self) { try ListenFDs.inherited() } }
            #expect(error?.description.hasPrefix("sd_listen_fds_with_names (LISTEN_FDS/LISTEN_FDNAMES): ") == true)
        }
    }
}

private let reportVariable = "ATSGATE_TEST_LISTEN_FDS_REPORT"

/// The child side: runs only in the process `runActivatedChild` starts, and writes what
/// `ListenFDs.inherited()` returned to the report file, one line per socket.
@Test(.enabled(if: ProcessInfo.processInfo.environment[reportVariable] != nil))
func listenFDsChild() throws {
    let path = try #require(ProcessInfo.processInfo.environment[reportVariable])
    var lines: [String]
    do {
        lines = try ListenFDs.inherited().map { socket in
            let cloexec = fcntl(socket.fd, F_GETFD) & FD_CLOEXEC != 0 ? "cloexec" : "inheritable"
            return "\(socket.fd) \(socket.name ?? "-") \(socket.role.rawValue) \(cloexec)"
        }
        let left = ["LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES"].filter { (name: String) in getenv(name) != nil }
        lines.append(left.isEmpty ? "LISTEN_* unset" : "still set: \(left.joined(separator: " "))")
    } catch {
        lines = ["error: \(error)"]
    }
    try lines.joined(separator: "\n").write(toFile: path, atomically: true, encoding: .utf8)
}

/// Starts this test binary's `listenFDsChild` with `sockets` at descriptors 3, 4 ... and LISTEN_FDS,
/// LISTEN_FDNAMES and LISTEN_PID set as systemd sets them (a shell sets LISTEN_PID to its own PID
/// and execs, which keeps the PID), and returns the child's report lines.
private func runActivatedChild(sockets: [Int32], names: String?) throws -> [String] {
    let report = FileManager.default.temporaryDirectory.appendingPathComponent("atsgate-listen-\(UUID().uuidString)").path
    defer { unlink(report) }
    var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("LISTEN_") }
    environment["LISTEN_FDS"] = String(sockets.count)
    environment["LISTEN_FDNAMES"] = names
    environment[reportVariable] = report
    // Like systemd, pass nothing but the sockets: other tests' pipes must not stay open in the child.
    let script = """
        export LISTEN_PID=$$
        for fd in /proc/self/fd/*; do n=${fd##*/}; [ "$n" -gt \(2 + sockets.count) ] && eval "exec $n>&-"; done 2>/dev/null
        exec "$@"
        """
    let arguments = ["/bin/bash", "-c", script, "bash", CommandLine.arguments[0],
                     "--testing-library", "swift-testing", "--filter", "listenFDsChild"]

    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    for (index, socket) in sockets.enumerated() {
        posix_spawn_file_actions_adddup2(&actions, socket, Int32(3 + index))
    }
    // The child's own test output is not the subject; keep it off the parent's, and its errors for ours.
    let errors = report + ".stderr"
    defer { unlink(errors) }
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 2, errors, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    let argv = arguments.map { strdup($0) } + [nil]
    let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer { (argv + envp).forEach { free($0) } }
    var pid = pid_t()
    let spawned = posix_spawn(&pid, "/bin/bash", &actions, nil, argv, envp)
    guard spawned == 0 else { throw SinkError("posix_spawn: \(String(cString: strerror(spawned)))") }

    var status: Int32 = 0
    let deadline = Date().addingTimeInterval(120)
    while waitpid(pid, &status, WNOHANG) == 0 {
        if Date() > deadline {
            kill(pid, SIGKILL)
            waitpid(pid, &status, 0)
            throw SinkError("the socket-activated child did not finish in time")
        }
        usleep(20_000)
    }
    guard let text = try? String(contentsOfFile: report, encoding: .utf8) else {
        let stderr = (try? String(contentsOfFile: errors, encoding: .utf8)) ?? ""
        throw SinkError("the socket-activated child wrote no report (wait status \(status)): \(stderr.suffix(2000))")
    }
    return text.split(separator: "\n").map(String.init)
}

/// A TCP socket (or `type`) bound to 127.0.0.1 on a free port, listening or not.
private func loopbackSocket(listening: Bool = false, type: __socket_type = SOCK_STREAM) throws -> Int32 {
    let fd = socket(AF_INET, Int32(type.rawValue | SOCK_CLOEXEC.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard bound == 0, !listening || listen(fd, 8) == 0 else {
        close(fd)
        throw SinkError("cannot bind a loopback socket")
    }
    return fd
}
