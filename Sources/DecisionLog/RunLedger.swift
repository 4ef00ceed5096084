import Glibc

/// The run ledger (docs/decision-log-ledger.md). Every record the daemon writes carries `run`, this
/// process's run id, and the log's writer adds records of its own (`ledger`: `run-start`,
/// `run-checkpoint`, `run-stop`), so that `atsgate report` can tell a log that holds its whole run
/// from one that a SIGKILL, the OOM killer or a failed node cut short: only a clean stop writes a
/// `run-stop`.
public enum LogRun {
    /// This process's run: 16 lower-case hex digits from the system's random source (getrandom),
    /// drawn once per process start; an upgrade's new process draws its own.
    public static let id: String = {
        var generator = SystemRandomNumberGenerator()
        let hex = String(generator.next() as UInt64, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }()
}

/// The other process of an upgrade (SIGUSR2), as the ledger names it: `predecessor_run`,
/// `predecessor_pid`, `predecessor_version` in the new process's `run-start`, `successor_*` in the
/// old process's `run-stop`.
public struct RunPeer: Sendable, Equatable {
    public var run: String
    public var pid: Int32
    public var version: String

    public init(run: String, pid: Int32, version: String) {
        self.run = run
        self.pid = pid
        self.version = version
    }

    /// This process, as the other side of an upgrade names it.
    public static func current(version: String) -> RunPeer {
        RunPeer(run: LogRun.id, pid: getpid(), version: version)
    }
}

/// What a run's `run-start` says.
public struct RunStart: Sendable {
    public var version: String
    /// The configuration generation logging starts with (1).
    public var generation: Int
    /// `--log-checkpoint`: seconds between `run-checkpoint` records; 0, none.
    public var checkpointSeconds: Int
    /// The process this one took over from, after an upgrade.
    public var predecessor: RunPeer?

    public init(version: String, generation: Int = 1, checkpointSeconds: Int, predecessor: RunPeer? = nil) {
        self.version = version
        self.generation = generation
        self.checkpointSeconds = checkpointSeconds
        self.predecessor = predecessor
    }
}

/// What the proxy says at each checkpoint: connections open now and its configuration generation.
public struct RunStatus: Sendable {
    public var open: Int
    public var generation: Int

    public init(open: Int, generation: Int) {
        self.open = open
        self.generation = generation
    }
}

/// An upgrade's hand-over, for the old process's `run-stop` (`stop: upgrade`): the new process and
/// how many connections it took (`handed_over`).
public struct RunHandOver: Sendable {
    public var successor: RunPeer
    public var handedOver: Int
    /// What `handedOver` was made of, and the listening sockets that went with it, for the
    /// record's message only (the fields stay those of docs/decision-log-ledger.md).
    public var tunnels: Int?
    public var idleClients: Int?
    public var listeners: Int?

    public init(successor: RunPeer, handedOver: Int, tunnels: Int? = nil, idleClients: Int? = nil, listeners: Int? = nil) {
        self.successor = successor
        self.handedOver = handedOver
        self.tunnels = tunnels
        self.idleClients = idleClients
        self.listeners = listeners
    }
}

/// How a run ended cleanly, for its `run-stop`: the connections cut at the stop (`open`; each was
/// logged), and the hand-over when an upgrade ended it (`stop: upgrade`, else `signal`).
public struct RunStop: Sendable {
    public var cut: Int
    public var handOver: RunHandOver?

    public init(cut: Int, handOver: RunHandOver? = nil) {
        self.cut = cut
        self.handOver = handOver
    }
}
