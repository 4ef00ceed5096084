import Foundation
import Glibc
import Systemd
import Testing

/// The environment an upgrade's new process starts with: the manager's variables it needs, without
/// the ones that name the old process.
@Suite struct SystemdEnvironmentTests {
    private let old = [
        "PATH=/usr/bin:/bin", "NOTIFY_SOCKET=/run/systemd/notify", "WATCHDOG_USEC=30000000", "WATCHDOG_PID=812",
        "LISTEN_PID=812", "LISTEN_FDS=2", "LISTEN_FDNAMES=proxy:admin", "JOURNAL_STREAM=8:12345",
        "ATSGATE_UPGRADE_FD=5",
    ]

    @Test func theSuccessorKeepsTheManagerAndLosesWhatNamedTheOldProcess() {
        let successor = SystemdEnvironment.forSuccessor(of: old, adding: ["ATSGATE_UPGRADE_FD": "3"])
        #expect(successor == [
            "PATH=/usr/bin:/bin", "NOTIFY_SOCKET=/run/systemd/notify", "WATCHDOG_USEC=30000000",
            "JOURNAL_STREAM=8:12345", "ATSGATE_UPGRADE_FD=3",
        ])
        #expect(SystemdEnvironment.current.contains { $0.hasPrefix("PATH=") })
    }

    /// libsystemd in another process decides: with the old process's WATCHDOG_PID the new one would
    /// believe no watchdog is expected of it and never ping; without it, it pings.
    @Test func libsystemdInTheSuccessorSeesTheWatchdog() throws {
        #expect(try watchdogSeen(by: old) == "0 0")
        #expect(try watchdogSeen(by: SystemdEnvironment.forSuccessor(of: old)) == "1 30000000")
    }

    /// What sd_watchdog_enabled(3) returns in a python3 process started with `environment`.
    private func watchdogSeen(by environment: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-I", "-c", """
            import ctypes
            usec = ctypes.c_uint64(0)
            result = ctypes.CDLL("libsystemd.so.0").sd_watchdog_enabled(0, ctypes.byref(usec))
            print(result, usec.value)
            """]
        process.environment = Dictionary(environment.map { entry in
            let parts = entry.split(separator: "=", maxSplits: 1)
            return (String(parts[0]), String(parts[1]))
        }) { $1 }
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
