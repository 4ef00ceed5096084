import POSIX
/// Moves one direction of a connection: first any bytes held in user space (the inspected prefix,
/// a rewritten request head), then everything else through a pipe with splice(2), never copying.
/// End of input becomes a half-close of the output (shutdown SHUT_WR), unless the other direction has
/// ended too: then the owner closes both sockets, and the close sends the FIN.
package final class Pump {
    private let from: Channel
    private let to: Channel
    private let loop: EventLoop
    private var pending: [UInt8]
    private var pipe: (read: Int32, write: Int32)?
    private var inPipe = 0
    private var sourceEnded = false
    /// The source had nothing more the last time it was read (or has not been reported readable
    /// yet): the next read waits for the poller instead of paying for a splice that says EAGAIN.
    private var sourceDrained = true
    package private(set) var finished = false
    package private(set) var bytes = 0
    /// Called on progress (for idle timeouts), at the end, and on an error.
    package var onProgress: () -> Void = {}
    package var onFinish: () -> Void = {}
    package var onError: (SystemError) -> Void = { _ in }

    private static let chunk = 1 << 20
    /// A splice from the socket shorter than this took what there was (a full pipe holds 64 KiB).
    private static let shortRead = 16 * 1024

    package init(from: Channel, to: Channel, loop: EventLoop, pending: [UInt8] = []) {
        self.from = from
        self.to = to
        self.loop = loop
        self.pending = pending
        bytes = pending.count
    }

    /// A direction as an upgrade hands it to the new process (design §4.2): the bytes still held in
    /// user space, the pipe with the bytes in flight (passed as it is, never drained: the bytes stay
    /// in the kernel, in order), and the counts.
    package struct Snapshot: Equatable {
        package var pending: [UInt8]
        package var pipe: (read: Int32, write: Int32)?
        /// What this pump counted into the pipe and not out of it yet (FIONREAD checks it).
        package var inPipe: Int
        package var bytes: Int
        package var sourceEnded: Bool
        package var finished: Bool

        package init(pending: [UInt8], pipe: (read: Int32, write: Int32)?, inPipe: Int, bytes: Int,
                     sourceEnded: Bool, finished: Bool) {
            self.pending = pending
            self.pipe = pipe
            self.inPipe = inPipe
            self.bytes = bytes
            self.sourceEnded = sourceEnded
            self.finished = finished
        }

        package static func == (lhs: Snapshot, rhs: Snapshot) -> Bool {
            lhs.pending == rhs.pending && lhs.pipe?.read == rhs.pipe?.read && lhs.pipe?.write == rhs.pipe?.write
                && lhs.inPipe == rhs.inPipe && lhs.bytes == rhs.bytes && lhs.sourceEnded == rhs.sourceEnded
                && lhs.finished == rhs.finished
        }
    }

    /// Where the direction stands; the pipe stays this pump's until `relinquish`.
    package var snapshot: Snapshot {
        Snapshot(pending: pending, pipe: pipe, inPipe: inPipe, bytes: bytes, sourceEnded: sourceEnded, finished: finished)
    }

    /// A direction taken over from another process's `snapshot`, its pipe with it. Nothing moves
    /// until `run`.
    package init(resuming snapshot: Snapshot, from: Channel, to: Channel, loop: EventLoop) {
        self.from = from
        self.to = to
        self.loop = loop
        pending = snapshot.pending
        pipe = snapshot.pipe
        inPipe = snapshot.inPipe
        bytes = snapshot.bytes
        sourceEnded = snapshot.sourceEnded
        finished = snapshot.finished
        // Whatever the source holds is reported again by the level-triggered poller; one read to see.
        sourceDrained = false
    }

    /// The new process took the direction over: this process's copy of the pipe is closed, never
    /// kept as a spare (the other process writes into the same pipe now), and nothing moves here again.
    package func relinquish() {
        loop.assertOnLoop()
        if let pipe {
            SystemCall.close(pipe.read)
            SystemCall.close(pipe.write)
        }
        pipe = nil
        inPipe = 0
        finished = true
        onProgress = {}
        onFinish = {}
        onError = { _ in }
    }

    /// Connections are released on their loop's queue, so the pipe goes back to that loop's spares.
    deinit {
        if let pipe { loop.returnPipe(pipe, empty: inPipe == 0) }
    }

    /// Called when `from` is readable.
    package func readable() {
        sourceDrained = false
        run()
    }

    /// Runs until it would block; called on writability of `to` (and by `readable`).
    package func run() {
        loop.assertOnLoop()
        do {
            try step()
        } catch {
            finished = true
            from.wantRead(false)
            to.wantWrite(false)
            onError(error)
        }
    }

    private func step() throws(SystemError) {
        while !finished {
            if !pending.isEmpty {
                let result = pending.withUnsafeBytes { buffer in
                    Result { () throws(SystemError) in try SystemCall.write(to.fd, buffer) }
                }
                let outcome = try result.get()
                switch outcome {
                case .done(let n): pending.removeFirst(n); onProgress()
                case .wouldBlock, .endOfFile: return waitForWritable()
                }
                continue
            }
            if inPipe > 0, let pipe {
                switch try SystemCall.splice(from: pipe.read, to: to.fd, length: inPipe) {
                case .done(let n): inPipe -= n; onProgress()
                case .wouldBlock, .endOfFile: return waitForWritable()
                }
                continue
            }
            if sourceEnded {
                finished = true
                // The owner closes both channels when the other direction is done too (the close
                // sends the FIN); only if it does not (the other direction still flows) is this
                // direction's end a half-close and its interest turned off.
                onFinish()
                guard !to.closed else { return }
                Socket.shutdownWrite(to.fd)
                from.wantRead(false)
                to.wantWrite(false)
                return
            }
            if sourceDrained {
                // Nothing to move: an empty pipe goes back to the loop's spares, so an idle tunnel
                // holds two descriptors, not six.
                if let idle = pipe {
                    loop.returnPipe(idle, empty: true)
                    pipe = nil
                }
                return waitForReadable()
            }
            if pipe == nil {
                pipe = try loop.takePipe()
            }
            switch try SystemCall.splice(from: from.fd, to: pipe!.write, length: Pump.chunk) {
            case .done(let n):
                inPipe += n
                bytes += n
                // Unless the peer has closed: then the next read is its end, not EAGAIN.
                if n < Pump.shortRead, !from.peerClosed { sourceDrained = true }
            case .endOfFile: sourceEnded = true
            case .wouldBlock: sourceDrained = true
            }
        }
    }

    private func waitForWritable() {
        from.wantRead(false)
        to.wantWrite(true)
    }

    private func waitForReadable() {
        to.wantWrite(false)
        from.wantRead(true)
    }
}
