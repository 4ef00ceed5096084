import Foundation
import Glibc
import POSIX
import Testing
import TestSupport

/// Starting the new binary of an upgrade: what it inherits (the hand-over socket as descriptor 3,
/// nothing else; default signals), how its early end is seen, and which file a path names after a
/// package manager renamed a new one over it.
@Suite struct ChildProcessTests {
    private let loopback = SocketAddress(ip: .v4(0x7F00_0001), port: 0)

    /// A real process across fork and exec (python3) gets the socket as descriptor 3, named by
    /// ATSGATE_UPGRADE_FD, and no other descriptor of this one; it receives a listener, a connected
    /// socket and a pipe over it and proves each works: it accepts on the listener, answers on the
    /// connection, and writes into the pipe.
    @Test func aChildReceivesDescriptorsOverItsInheritedSocketAndUsesThem() throws {
        let (parent, child) = try DescriptorPassing.socketPair()
        defer { SystemCall.close(parent) }
        // Not close-on-exec: only the spawn's own closing keeps it out of the child.
        let pipe = try SystemCall.pipe()
        defer { SystemCall.close(pipe.read) }
        let stray = dup(pipe.write)
        let ignoredBefore = signal(SIGUSR2, SIG_IGN)
        let process: ChildProcess
        do {
            defer { signal(SIGUSR2, ignoredBefore) }
            process = try ChildProcess.spawn(executable: "/usr/bin/python3", arguments: ["python3", "-I", "-c", Self.receiver],
                                             environment: ["ATSGATE_UPGRADE_FD=3", "PATH=/usr/bin:/bin"],
                                             inheriting: [child])
        }
        SystemCall.close(child)
        SystemCall.close(stray)
        defer { try? process.signal(SIGKILL); _ = try? process.wait(timeout: 5) }

        // What the child found at start, before anything was sent.
        let report = try receiveText(parent)
        let state = try JSONSerialization.jsonObject(with: Data(report.utf8)) as? [String: Any]
        #expect(state?["open"] as? [Int] == [0, 1, 2, 3], "only stdio and the hand-over socket: \(report)")
        #expect(state?["usr2"] as? String == "default", "a signal this process ignores is at its default there")
        #expect(state?["blocked"] as? String == "0000000000000000")

        let listener = try Socket.listen(on: loopback)
        let address = try #require(Socket.localAddress(listener))
        let (client, server) = try tcpPair()
        defer { SystemCall.close(client) }
        _ = try Array("take these".utf8).withUnsafeBytes {
            try DescriptorPassing.send(parent, $0, descriptors: [listener, server, pipe.write])
        }
        for fd in [listener, server, pipe.write] { SystemCall.close(fd) }

        let newcomer = try Socket.connect(to: address, timeout: 5)
        defer { SystemCall.close(newcomer) }
        #expect(try readLine(newcomer) == "accepted by \(process.pid)")
        try writeText(client, "ping\n")
        #expect(try readLine(client) == "PING")
        #expect(try readLine(pipe.read) == "through the pipe")
        #expect(try process.wait(timeout: 10) == .exited(0))
        // The child held the only write end: its exit ends the pipe.
        var byte: UInt8 = 0
        #expect(Glibc.read(pipe.read, &byte, 1) == 0)
    }

    @Test func anEarlyExitIsSeenWithItsStatusAndAHungChildIsKilled() throws {
        let exits = try ChildProcess.spawn(executable: "/bin/sh", arguments: ["sh", "-c", "exit 3"], environment: [])
        #expect(try exits.wait(timeout: 10) == .exited(3))
        #expect(try exits.exitStatus() == .exited(3), "reaped once, the same answer after")
        #expect(try exits.exitStatus()?.description == "exited with status 3")

        let hangs = try ChildProcess.spawn(executable: "/bin/sleep", arguments: ["sleep", "30"], environment: [])
        #expect(try hangs.exitStatus() == nil)
        #expect(try hangs.wait(timeout: 0.1) == nil)
        try hangs.signal(SIGKILL)
        #expect(try hangs.wait(timeout: 10) == .signaled(SIGKILL))
        try hangs.signal(SIGKILL) // reaped: nothing is sent, nothing fails
        #expect(hangs.pidFD >= 0, "this kernel has pidfd_open")
    }

    /// What an upgrade meets when the new binary is not one: the exec fails in posix_spawn, with the
    /// path and the reason, and no child is left behind.
    @Test func aMissingOrTruncatedExecutableFailsToSpawnWithItsReason() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let missing = #expect(throws: SystemError.self) {
            _ = try ChildProcess.spawn(executable: directory + "/absent", arguments: ["absent"], environment: [])
        }
        #expect(missing?.code == ENOENT)
        #expect(missing?.description.hasPrefix("posix_spawn \(directory)/absent: ") == true)

        let truncated = directory + "/truncated"
        let binary = try Data(contentsOf: URL(fileURLWithPath: "/bin/true"))
        try binary.prefix(64).write(to: URL(fileURLWithPath: truncated))
        chmod(truncated, 0o755)
        let error = #expect(throws: SystemError.self) {
            _ = try ChildProcess.spawn(executable: truncated, arguments: ["truncated"], environment: [])
        }
        #expect(error?.code == ENOEXEC, "\(String(describing: error))")

        let notExecutable = directory + "/plain"
        try Data("#!/bin/sh\nexit 0\n".utf8).write(to: URL(fileURLWithPath: notExecutable))
        #expect(throws: SystemError.self) {
            _ = try ChildProcess.spawn(executable: notExecutable, arguments: ["plain"], environment: [])
        }
    }

    /// dpkg installs a new binary by writing it beside the old one and renaming it over the path. The
    /// running process keeps the old file (its /proc/PID/exe says "(deleted)"), and the path now
    /// starts the new one: that path, recorded at start, is what an upgrade executes.
    @Test func aFileRenamedOverThePathIsWhatThePathStartsAndTheOldProcessKeepsItsOwn() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/atsgate"
        try FileManager.default.copyItem(atPath: "/bin/sleep", toPath: path)
        let running = try ChildProcess.spawn(executable: path, arguments: [path, "30"], environment: [])
        defer { try? running.signal(SIGKILL); _ = try? running.wait(timeout: 5) }
        var original = stat()
        #expect(stat(path, &original) == 0)
        let recorded = ExecutableFile(path: path, device: UInt64(original.st_dev), inode: UInt64(original.st_ino))
        #expect(recorded.change() == .unchanged)

        let staged = path + ".dpkg-new"
        try Data("#!/bin/sh\nexit 42\n".utf8).write(to: URL(fileURLWithPath: staged))
        chmod(staged, 0o755)
        #expect(rename(staged, path) == 0)

        #expect(ExecutableFile.readLink("/proc/\(running.pid)/exe") == path + " (deleted)")
        var image = stat()
        #expect(stat("/proc/\(running.pid)/exe", &image) == 0)
        #expect(UInt64(image.st_ino) == recorded.inode, "the old process still runs the old file")
        #expect(recorded.change() == .replaced)
        let successor = try ChildProcess.spawn(executable: recorded.path, arguments: [recorded.path], environment: [])
        #expect(try successor.wait(timeout: 10) == .exited(42), "the path starts the new file")

        unlink(path)
        #expect(recorded.change() == .missing(ENOENT))
    }

    @Test func thisProcessKnowsTheFileItWasStartedFrom() throws {
        let argv0 = try #require(CommandLine.arguments.first)
        let current = try ExecutableFile.current(argv0: argv0)
        #expect(current.path.hasPrefix("/"))
        #expect(current.change() == .unchanged)
        let image = try #require(ExecutableFile.readLink("/proc/self/exe"))
        // A name that is not the running file falls back to /proc/self/exe.
        let fallback = try ExecutableFile.current(argv0: "no-such-program-\(getpid())")
        #expect(fallback.path == image)
        #expect(fallback.inode == current.inode && fallback.device == current.device)
        // A relative name is made absolute against the working directory.
        let relative = FileManager.default.currentDirectoryPath.split(separator: "/").map { _ in ".." }.joined(separator: "/")
            + image
        #expect(try ExecutableFile.current(argv0: relative).path == FileManager.default.currentDirectoryPath + "/" + relative)
    }

    // MARK: helpers

    /// The child's side: report what it inherited, then use what it receives.
    private static let receiver = #"""
        import json, os, signal, socket
        fd = int(os.environ["ATSGATE_UPGRADE_FD"])
        def is_open(n):
            try:
                os.fstat(n)
                return True
            except OSError:
                return False
        opened = [n for n in range(256) if is_open(n)]
        usr2 = "default" if signal.getsignal(signal.SIGUSR2) == signal.SIG_DFL else "not default"
        blocked = [l.split()[1] for l in open("/proc/self/status") if l.startswith("SigBlk:")][0]
        channel = socket.socket(fileno=fd)
        channel.send(json.dumps({"open": opened, "usr2": usr2, "blocked": blocked}).encode())
        message, fds, flags, _ = socket.recv_fds(channel, 4096, 8)
        assert message == b"take these" and len(fds) == 3, (message, fds)
        listener = socket.socket(fileno=fds[0])
        listener.setblocking(True)
        newcomer, _ = listener.accept()
        newcomer.sendall(b"accepted by %d\n" % os.getpid())
        connection = socket.socket(fileno=fds[1])
        connection.setblocking(True)
        line = b""
        while not line.endswith(b"\n"):
            line += connection.recv(100)
        connection.sendall(line.upper())
        os.write(fds[2], b"through the pipe\n")
        """#

    private func receiveText(_ socket: Int32) throws -> String {
        guard Poll.wait(fd: socket, events: Int16(POLLIN), timeout: 10) == .ready else { throw HarnessError("no report from the child") }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let received = try buffer.withUnsafeMutableBytes { try DescriptorPassing.receive(socket, into: $0) }
        guard case .message(let count, _) = received else { throw HarnessError("no message: \(received)") }
        return String(decoding: buffer[..<count], as: UTF8.self)
    }

    private func tcpPair() throws -> (Int32, Int32) {
        let listener = try Socket.listen(on: loopback)
        defer { SystemCall.close(listener) }
        let client = try Socket.connect(to: try #require(Socket.localAddress(listener)), timeout: 2)
        guard Poll.wait(fd: listener, events: Int16(POLLIN), timeout: 2) == .ready,
              let accepted = try SystemCall.accept(listener) else { throw HarnessError("no connection to accept") }
        return (client, accepted.fd)
    }

    private func writeText(_ fd: Int32, _ text: String) throws {
        _ = try Array(text.utf8).withUnsafeBytes { try SystemCall.write(fd, $0) }
    }

    /// One line (without its newline), read a byte at a time so nothing after it is consumed.
    private func readLine(_ fd: Int32) throws -> String {
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while true {
            guard Poll.wait(fd: fd, events: Int16(POLLIN), timeout: 10) == .ready else { throw HarnessError("no line after \(line)") }
            let n = Glibc.read(fd, &byte, 1)
            if n < 0, errno == EAGAIN || errno == EINTR { continue }
            guard n == 1 else { throw HarnessError("end of stream after \(line)") }
            if byte == UInt8(ascii: "\n") { return String(decoding: line, as: UTF8.self) }
            line.append(byte)
        }
    }

    private func temporaryDirectory() throws -> String {
        var template = Array("/tmp/atsgate-spawn-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw HarnessError("mkdtemp failed") }
        return String(cString: made)
    }
}
