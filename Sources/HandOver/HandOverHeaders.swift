import DecisionLog

// The headers of the hand-over's messages, as JSON (snake_case keys). Each says in its comment
// which kind carries it (HandOverKind).

/// `hello`: who the new process is.
package struct HelloHeader: Codable, Sendable, Equatable {
    package var `protocol`: Int
    package var version: String
    package var pid: Int32
    /// Its run (the decision log's `run` field), when it has one.
    package var run: String?

    package init(protocol: Int = HandOverProtocol.version, version: String, pid: Int32, run: String? = nil) {
        self.protocol = `protocol`
        self.version = version
        self.pid = pid
        self.run = run
    }
}

/// `failed`: why the new process cannot take over, in one line.
package struct FailedHeader: Codable, Sendable, Equatable {
    package var reason: String

    package init(reason: String) { self.reason = reason }
}

/// `listeners`: every listening socket (the descriptors in the order of `listeners`), and what the
/// new process carries on from the old one.
package struct ListenersHeader: Codable, Sendable, Equatable {
    package struct Listener: Codable, Sendable, Equatable {
        /// What is served there, by the names socket activation uses (FileDescriptorName=):
        /// `proxy`, `proxy-tls`, `admin`, and whatever roles later listeners add. A role the new
        /// binary does not know fails the upgrade.
        package var role: String
        /// Where it listens, for messages.
        package var address: String
        /// Index into the message's descriptors.
        package var fd: Int

        package init(role: String, address: String, fd: Int) {
            self.role = role
            self.address = address
            self.fd = fd
        }
    }

    package var listeners: [Listener]
    /// `atsgate_upgrades_total` so far, so that the counter does not start again at each upgrade.
    package var upgradesSucceeded: Int
    package var upgradesFailed: Int
    package var version: String
    package var pid: Int32
    package var run: String?

    package init(listeners: [Listener], upgradesSucceeded: Int, upgradesFailed: Int, version: String, pid: Int32,
                 run: String? = nil) {
        self.listeners = listeners
        self.upgradesSucceeded = upgradesSucceeded
        self.upgradesFailed = upgradesFailed
        self.version = version
        self.pid = pid
        self.run = run
    }
}

/// `listening`: how many listeners the new process accepts on.
package struct ListeningHeader: Codable, Sendable, Equatable {
    package var count: Int

    package init(count: Int) { self.count = count }
}

/// One direction of a tunnel (EventLoops' `Pump.Snapshot`) in a `tunnel` header.
package struct PumpHeader: Codable, Sendable, Equatable {
    /// Offset and length, in the message's body, of the bytes still in user space.
    package var pending: [Int]
    /// Indexes of the pipe's read and write ends in the descriptors; nil when the direction holds
    /// no pipe (nothing in flight).
    package var pipe: [Int]?
    /// What the old process counted into the pipe: the new one checks it against FIONREAD.
    package var inPipe: Int
    package var bytes: Int
    package var sourceEnded: Bool
    package var finished: Bool

    package init(pending: [Int], pipe: [Int]?, inPipe: Int, bytes: Int, sourceEnded: Bool, finished: Bool) {
        self.pending = pending
        self.pipe = pipe
        self.inPipe = inPipe
        self.bytes = bytes
        self.sourceEnded = sourceEnded
        self.finished = finished
    }
}

/// What the new process needs of a moved record beside its frozen fields: the values metrics and
/// the live page read, and the byte counts it had before the relay began.
package struct RecordLabels: Codable, Sendable, Equatable {
    package var time: Double
    package var method: String
    package var app: String?
    package var device: String?
    package var enforced: Bool
    package var parent: String?
    package var upstreamIP: String?
    package var connectedAfter: Double?
    package var bytesUp: Int
    package var bytesDown: Int

    package init(time: Double, method: String, app: String?, device: String?, enforced: Bool, parent: String?,
                 upstreamIP: String?, connectedAfter: Double?, bytesUp: Int, bytesDown: Int) {
        self.time = time
        self.method = method
        self.app = app
        self.device = device
        self.enforced = enforced
        self.parent = parent
        self.upstreamIP = upstreamIP
        self.connectedAfter = connectedAfter
        self.bytesUp = bytesUp
        self.bytesDown = bytesDown
    }
}

/// `tunnel`: a plain client's tunnel in its relay phase (design §4.2). The descriptors are named by
/// `fds`: "client", "origin", then "up.pipe.read", "up.pipe.write", "down.pipe.read",
/// "down.pipe.write" for the directions that hold a pipe.
package struct TunnelHeader: Codable, Sendable, Equatable {
    package var id: Int
    package var client: String
    package var localPort: Int
    package var upstream: String
    /// CLOCK_MONOTONIC seconds, which is the same clock in both processes: the request's start (its
    /// duration) and the last byte moved (the idle timeout).
    package var started: Double
    package var lastActivity: Double
    package var up: PumpHeader
    package var down: PumpHeader
    package var record: DecisionRecord.Frozen
    package var labels: RecordLabels
    package var proxyUser: String?
    package var fds: [String]

    package init(id: Int, client: String, localPort: Int, upstream: String, started: Double, lastActivity: Double,
                 up: PumpHeader, down: PumpHeader, record: DecisionRecord.Frozen, labels: RecordLabels,
                 proxyUser: String?, fds: [String]) {
        self.id = id
        self.client = client
        self.localPort = localPort
        self.upstream = upstream
        self.started = started
        self.lastActivity = lastActivity
        self.up = up
        self.down = down
        self.record = record
        self.labels = labels
        self.proxyUser = proxyUser
        self.fds = fds
    }
}

/// `idle`: a plain keep-alive client between requests; the body is what it sent of its next head.
package struct IdleHeader: Codable, Sendable, Equatable {
    package var id: Int
    package var client: String
    package var localPort: Int
    package var proxyUser: String?
    /// Credentials already verified on this connection (its next requests skip the check).
    package var verifiedCredentials: [UInt8]?
    package var fds: [String]

    package init(id: Int, client: String, localPort: Int, proxyUser: String?, verifiedCredentials: [UInt8]?) {
        self.id = id
        self.client = client
        self.localPort = localPort
        self.proxyUser = proxyUser
        self.verifiedCredentials = verifiedCredentials
        fds = ["client"]
    }
}

/// `took`: items the new process holds now.
package struct TookHeader: Codable, Sendable, Equatable {
    package var ids: [Int]

    package init(ids: [Int]) { self.ids = ids }
}

/// `refused`: an item the new process will not take, and why.
package struct RefusedHeader: Codable, Sendable, Equatable {
    package var id: Int
    package var reason: String

    package init(id: Int, reason: String) {
        self.id = id
        self.reason = reason
    }
}

/// `exiting`: the old process's last words.
package struct ExitingHeader: Codable, Sendable, Equatable {
    package var run: String?
    /// Decision records it wrote.
    package var records: Int

    package init(run: String?, records: Int) {
        self.run = run
        self.records = records
    }
}

/// `main`, `reopen-log`: nothing to say but the kind.
package struct EmptyHeader: Codable, Sendable, Equatable {
    package init() {}
}
