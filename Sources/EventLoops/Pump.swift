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
