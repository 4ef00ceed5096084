import EventLoops
import POSIX

/// A tunnel's relay when the client speaks TLS to the proxy. splice(2) cannot carry bytes that must
/// be opened or sealed, so both directions go through user space: up, the client's records are opened
/// (ClientTLS.read) into `toOrigin` and written to the origin; down, the origin's bytes are read into
/// the loop's buffer and sealed straight from it (ClientTLS keeps what the client's socket has not
/// taken). A plain client's tunnel keeps the splice Pumps; nothing here runs for it.
///
/// Each direction ends as a Pump does: the end of its input becomes a half-close of its output (toward
/// the client: close_notify, then shutdown), and `onFinish` tells the owner, which closes both
/// sockets once both directions have ended. Each direction holds at most `limit` bytes before it
/// stops reading, so a slow reader slows its writer.
final class ClientTLSRelay {
    private let tls: ClientTLS
    private let client: Channel
    private let origin: Channel
    private let loop: EventLoop
    /// Opened client bytes the origin has not taken yet.
    private var toOrigin: [UInt8]
    private var clientEnded = false
    /// A direction failed: both stop, and the owner ends the tunnel.
    private var failed = false
    private var originEnded = false
    private(set) var upFinished = false
    private(set) var downFinished = false
    /// Plaintext moved each way (the record's bytes_up and bytes_down).
    private(set) var bytesUp: Int
    private(set) var bytesDown: Int
    var onProgress: () -> Void = {}
    var onFinish: () -> Void = {}
    var onError: () -> Void = {}

    static let limit = 256 * 1024

    /// `prefix` goes to the origin first and `downPrefix` to the client (what a watched handshake held).
    init(tls: ClientTLS, client: Channel, origin: Channel, loop: EventLoop, prefix: [UInt8], downPrefix: [UInt8]) {
        self.tls = tls
        self.client = client
        self.origin = origin
        self.loop = loop
        toOrigin = prefix
        bytesUp = prefix.count
        bytesDown = downPrefix.count
        if !downPrefix.isEmpty, !downPrefix.withUnsafeBytes({ tls.seal($0) }) { failed = true }
    }

    /// Moves what is already here and starts watching both sockets.
    func start() {
        if failed { return fail() }
        writeDown()
        writeUp()
    }

    /// The connection closed: no callback reaches it any more.
    func detach() {
        onProgress = {}
        onFinish = {}
        onError = {}
    }

    // MARK: up: client to origin

    func clientReadable() {
        guard !clientEnded, !failed else { return client.wantRead(false) }
        let before = toOrigin.count
        let outcome = tls.read(from: client, scratch: loop.scratch, into: &toOrigin, limit: Self.limit)
        bytesUp += toOrigin.count - before
        if toOrigin.count > before { onProgress() }
        switch outcome {
        case .failed: return fail()
        case .ended: clientEnded = true
        case .wouldBlock: break
        }
        writeUp()
    }

    /// Writes opened bytes to the origin; called on the origin's writability too.
    func writeUp() {
        guard !upFinished, !failed else { return }
        if !toOrigin.isEmpty {
            let before = toOrigin.count
            let outcome = origin.write(&toOrigin)
            if toOrigin.count < before { onProgress() }
            switch outcome {
            case .failed: return fail()
            case .wouldBlock:
                origin.wantWrite(true)
                client.wantRead(!clientEnded && toOrigin.count <= Self.limit)
                return
            case .done:
                origin.wantWrite(false)
            }
        }
        guard clientEnded else { return client.wantRead(true) }
        upFinished = true
        client.wantRead(false)
        onFinish()
        // The owner closed both sockets when the other direction had ended too.
        guard !origin.closed else { return }
        Socket.shutdownWrite(origin.fd)
    }

    // MARK: down: origin to client

    func originReadable() {
        guard !originEnded, !failed else { return origin.wantRead(false) }
        readLoop: while tls.unsentCount <= Self.limit {
            switch try? SystemCall.read(origin.fd, into: loop.scratch) {
            case .done(let count)?:
                guard tls.seal(UnsafeRawBufferPointer(rebasing: loop.scratch[..<count])) else { return fail() }
                bytesDown += count
                onProgress()
                if count < loop.scratch.count { break readLoop }
            case .wouldBlock?:
                break readLoop
            case .endOfFile?:
                originEnded = true
                break readLoop
            case nil:
                return fail()
            }
        }
        writeDown()
    }

    /// Writes sealed bytes to the client; called on the client's writability too.
    func writeDown() {
        guard !downFinished, !failed else { return }
        switch tls.flush(client) {
        case .failed: return fail()
        case .wouldBlock:
            client.wantWrite(true)
            origin.wantRead(!originEnded && tls.unsentCount <= Self.limit)
            return
        case .done:
            client.wantWrite(false)
        }
        guard originEnded else { return origin.wantRead(true) }
        downFinished = true
        origin.wantRead(false)
        onFinish()
        guard !client.closed else { return }
        tls.closeNotify(client)
        Socket.shutdownWrite(client.fd)
    }

    private func fail() {
        failed = true
        client.wantRead(false)
        client.wantWrite(false)
        origin.wantRead(false)
        origin.wantWrite(false)
        onError()
    }
}
