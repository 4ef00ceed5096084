import CSystemd
import Glibc

/// What libsystemd says about the environment atsgate was started in.
public enum SystemdEnvironment {
    /// The host was booted with systemd (sd_booted(3)).
    public static var isBooted: Bool { sd_booted() > 0 }

    /// The environment for a process this one starts to take over the service (an upgrade's new
    /// binary), from this process's `environment` ("NAME=value" entries):
    /// - WATCHDOG_PID goes: it names this process, and sd_watchdog_enabled(3) in the successor would
    ///   say no watchdog is expected of it; without it WATCHDOG_USEC applies to whoever reads it.
    /// - LISTEN_PID, LISTEN_FDS and LISTEN_FDNAMES go: socket activation's descriptors were this
    ///   process's (the successor receives its listeners from it).
    /// - NOTIFY_SOCKET, WATCHDOG_USEC and JOURNAL_STREAM stay, so it reaches the same manager and the
    ///   journal knows its stderr.
    /// `extra` entries are added (replacing a variable of the same name).
    public static func forSuccessor(of environment: [String], adding extra: [String: String] = [:]) -> [String] {
        let dropped: Set<Substring> = ["WATCHDOG_PID", "LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"]
        let kept = environment.filter { entry in
            let name = entry.prefix { $0 != "=" }
            return !dropped.contains(name) && extra[String(name)] == nil
        }
        return kept + extra.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
    }

    /// This process's environment as "NAME=value" entries.
    public static var current: [String] {
        var entries: [String] = []
        var pointer = environ
        while let entry = pointer.pointee {
            entries.append(String(cString: entry))
            pointer += 1
        }
        return entries
    }
}
