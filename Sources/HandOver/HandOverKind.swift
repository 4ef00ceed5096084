/// What one message of an upgrade's hand-over is (HandOverFrame's `kind`), with the direction it
/// travels: "old" is the process that serves and upgrades, "new" the binary it started. The
/// meaning of each kind and its header is the protocol (`HandOverProtocol.version`); the envelope's
/// own version is HandOverFrame's.
package enum HandOverKind: UInt8, Sendable, CustomStringConvertible {
    /// new → old: it started, parsed its configuration and opened its log (`HelloHeader`).
    case hello = 1
    /// new → old: it cannot take over (`FailedHeader`), and exits 1.
    case failed = 2
    /// old → new: every listening socket, by role (`ListenersHeader`).
    case listeners = 3
    /// new → old: it accepts on them now (`ListeningHeader`); the old stops accepting.
    case listening = 4
    /// old → new: a tunnel in its relay phase (`TunnelHeader`): client, origin, and the pipes that
    /// hold bytes in flight; the body holds the bytes still in user space.
    case tunnel = 5
    /// old → new: a keep-alive client between requests (`IdleHeader`); the body is what it has sent
    /// of its next request head.
    case idle = 6
    /// new → old: it holds these items now (`TookHeader`), and relays them only after saying so.
    case took = 7
    /// new → old: it will not take this item (`RefusedHeader`); the old keeps it.
    case refused = 8
    /// old → new: you are the service's main process now (systemd knows).
    case main = 9
    /// either way: SIGUSR1 reached the other process; reopen the log file too.
    case reopenLog = 10
    /// old → new: it has written its last record (`ExitingHeader`) and closes its end.
    case exiting = 11
    /// new → old: it serves as the main process: its signal handlers are in place, its pid file
    /// written, systemd told READY (`atsgate upgrade` hears of the success only then).
    case serving = 12

    package var description: String {
        switch self {
        case .hello: "hello"
        case .failed: "failed"
        case .listeners: "listeners"
        case .listening: "listening"
        case .tunnel: "tunnel"
        case .idle: "idle"
        case .took: "took"
        case .refused: "refused"
        case .main: "main"
        case .reopenLog: "reopen-log"
        case .exiting: "exiting"
        case .serving: "serving"
        }
    }
}

/// The meaning of the kinds and their headers. A new binary that speaks another says so in `hello`,
/// and the old one refuses the upgrade (named) instead of guessing.
package enum HandOverProtocol {
    package static let version = 1
    /// The environment variable that tells a new process which descriptor is the hand-over socket.
    package static let environmentVariable = "ATSGATE_UPGRADE_FD"
}
