import ArgumentParser
import Foundation
import Glibc
import POSIX

/// `atsgate upgrade`: asks a running daemon to upgrade to the binary at the path it was started from
/// (SIGUSR2) and waits for the outcome, which the daemon tells on its status socket.
struct UpgradeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "upgrade",
        abstract: "Upgrade a running daemon to a new binary without dropping a connection.",
        discussion: """
            Sends SIGUSR2 to the daemon and waits: the daemon starts the binary at the path it was started \
            from (where a package upgrade has put the new one), hands it every listener, tunnel and idle \
            client, and exits once what stayed has finished. Exit status 0 when the new process took over \
            (its PID and version printed), 1 when the old one kept serving (its reason printed) or does not \
            answer on its status socket (an atsgate too old to upgrade this way is not signalled), 2 when \
            there is no such process. See docs/upgrades.md.
            """
    )

    @Option(name: .long, help: "The daemon's PID.")
    var pid: Int32?

    @Option(name: .long, help: ArgumentHelp("The daemon's --pid-file.", valueName: "file"))
    var pidFile: String?

    @Option(name: .long, help: ArgumentHelp("Seconds to wait for the outcome.", valueName: "seconds"))
    var timeout = 60.0

    func validate() throws {
        guard (pid == nil) != (pidFile == nil) else { throw ValidationError("give one of --pid PID and --pid-file FILE") }
        guard timeout > 0 else { throw ValidationError("--timeout must be positive") }
    }

    func run() throws {
        let target: Int32
        if let pid {
            target = pid
        } else if let pidFile {
            guard let named = PIDFile.read(pidFile) else {
                throw CommandFailure(message: "--pid-file \(pidFile): no PID in it (is the daemon running with --pid-file?)")
            }
            target = named
        } else {
            throw CommandFailure(message: "give one of --pid PID and --pid-file FILE")
        }
        guard target > 0, kill(target, 0) == 0 || errno == EPERM else {
            throw CommandFailure(message: "no process \(target)")
        }
        // Connected before the signal, so that the outcome cannot be missed.
        let status: Int32
        do {
            status = try DescriptorPassing.connect(to: UpgradeStatus.name(pid: target))
        } catch {
            // Every atsgate that upgrades on SIGUSR2 answers there; an older one would die of the signal.
            throw CommandFailure(message: "PID \(target) does not answer on \(UpgradeStatus.name(pid: target)) (\(error)): "
                                 + "not an atsgate that upgrades with SIGUSR2, or in another network namespace; not signalled",
                                 exitCode: 1)
        }
        defer { SystemCall.close(status) }
        let before = try readMessage(status, until: .now + .seconds(5))
        let version = before?["version"] as? String ?? "?"
        if before?["result"] as? String == "failure" {
            throw CommandFailure(message: "PID \(target) refused: \(before?["reason"] as? String ?? "no reason given")", exitCode: 1)
        }
        guard kill(target, SIGUSR2) == 0 else {
            throw CommandFailure(message: "cannot signal PID \(target): \(String(cString: strerror(errno)))")
        }
        let deadline = ContinuousClock.now + .milliseconds(Int64(timeout * 1000))
        guard let outcome = try readMessage(status, until: deadline) else {
            throw CommandFailure(message: "PID \(target) (\(version)) said nothing within \(Int(timeout)) s: the outcome is unknown",
                                 exitCode: 1)
        }
        if outcome["result"] as? String == "success" {
            let successor = (outcome["pid"] as? Int).map(String.init) ?? "?"
            print("PID \(target) (\(version)) handed over to PID \(successor) (\(outcome["version"] as? String ?? "?"))")
            return
        }
        throw CommandFailure(message: "PID \(target) (\(version)) keeps serving: \(outcome["reason"] as? String ?? "no reason given")",
                             exitCode: 1)
    }

    /// One JSON message from the status socket; nil at its end or when the deadline passes.
    private func readMessage(_ fd: Int32, until deadline: ContinuousClock.Instant) throws -> [String: Any]? {
        guard case .ready = Poll.wait(fd: fd, events: Int16(POLLIN), until: deadline) else { return nil }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let received = try buffer.withUnsafeMutableBytes { try DescriptorPassing.receive(fd, into: $0, maximumDescriptors: 0) }
        guard case .message(let count, _) = received else { return nil }
        return try? JSONSerialization.jsonObject(with: Data(buffer[..<count])) as? [String: Any]
    }
}
