import COpenSSL

/// One client's TLS with the proxy (the TLS listener), over two memory BIOs: the caller does the
/// socket I/O, hands the ciphertext it read to `receive`, and sends what `takeOutput` gives. So the
/// handshake (the signature and key exchange: the costly part) can run on a pool thread while the
/// event loop keeps the socket, and records are sealed and opened on the loop once it is done.
///
/// Owns its `SSL*` and both BIOs (freed in deinit). Used by one thread at a time: the pool during a
/// handshake step, the loop otherwise (the hand-over is a Dispatch submission, which orders memory).
public final class TLSServerSession: @unchecked Sendable {
    private let ssl: OpaquePointer
    /// Keeps the certificate and key alive for this session, whatever reloads happen meanwhile.
    public let context: TLSServerContext
    /// Ciphertext from the client, not yet consumed by OpenSSL; and what OpenSSL wrote for it.
    private var input: OpaquePointer
    private var output: OpaquePointer
    /// The most each BIO held at once since it was made: a memory BIO never gives back what it grew
    /// to, so one that grew past `compactAbove` is replaced once empty (an idle tunnel keeps no
    /// 64 KiB buffers).
    private var inputHighWater = 0
    private var outputHighWater = 0
    private static let compactAbove = 16 * 1024

    public init(context: TLSServerContext) throws(TLSSetupError) {
        self.context = context
        OpenSSLErrorQueue.clear()
        guard let ssl = SSL_new(context.pointer) else { throw TLSSetupError("SSL_new: \(OpenSSLErrorQueue.drain().text)") }
        guard let input = BIO_new(BIO_s_mem()), let output = BIO_new(BIO_s_mem()) else {
            SSL_free(ssl)
            throw TLSSetupError("BIO_new: out of memory")
        }
        self.ssl = ssl
        self.input = input
        self.output = output
        // An empty memory BIO reads as "retry" (WANT_READ), never as the end of the stream.
        SSL_set_bio(ssl, input, output) // the SSL owns both from here
        SSL_set_accept_state(ssl)
    }

    deinit { SSL_free(ssl) }

    /// Hands over ciphertext the client sent (a memory BIO takes all of it).
    public func receive(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        inputHighWater = max(inputHighWater, Int(BIO_ctrl_pending(input)) + bytes.count)
        _ = BIO_write(input, base, Int32(bytes.count))
    }

    /// One step of the server handshake over what was received; `.wantRead` asks for more of the
    /// client's bytes (`takeOutput` first: the step may have written a flight).
    public func handshake() -> TLSIOResult {
        OpenSSLErrorQueue.clear()
        let result = SSL_do_handshake(ssl)
        if result == 1 { return .done }
        return TLSIOResult.of(ssl, result: result, during: "handshake", peer: "client").0
    }

    /// Opens received records into `buffer`: `.bytes(n)`, `.wantRead` when no whole record is left,
    /// `.closed` at the client's close_notify.
    public func read(into buffer: UnsafeMutableRawBufferPointer) -> TLSIOResult {
        guard buffer.count > 0 else { return .bytes(0) }
        OpenSSLErrorQueue.clear()
        var count = 0
        let result = SSL_read_ex(ssl, buffer.baseAddress, buffer.count, &count)
        if result == 1 { return .bytes(count) }
        return TLSIOResult.of(ssl, result: result, during: "read", peer: "client").0
    }

    /// Seals all of `buffer` into records (taken by `takeOutput`).
    public func write(_ buffer: UnsafeRawBufferPointer) -> TLSIOResult {
        guard buffer.count > 0 else { return .bytes(0) }
        OpenSSLErrorQueue.clear()
        var count = 0
        let result = SSL_write_ex(ssl, buffer.baseAddress, buffer.count, &count)
        if result == 1 {
            outputHighWater = max(outputHighWater, Int(BIO_ctrl_pending(output)))
            return .bytes(count)
        }
        return TLSIOResult.of(ssl, result: result, during: "write", peer: "client").0
    }

    /// Writes close_notify once (for `takeOutput`); the caller closes the socket after sending it.
    public func shutdown() {
        guard SSL_is_init_finished(ssl) == 1 else { return }
        OpenSSLErrorQueue.clear()
        if SSL_get_shutdown(ssl) & SSL_SENT_SHUTDOWN == 0 { _ = SSL_shutdown(ssl) }
        OpenSSLErrorQueue.clear()
    }

    /// Whether OpenSSL has written bytes for the client that `takeOutput` has not taken yet.
    public var hasOutput: Bool { BIO_ctrl_pending(output) > 0 }

    /// Moves what OpenSSL has written for the client (handshake flights, records, alerts) to the end
    /// of `bytes`.
    public func takeOutput(appendingTo bytes: inout [UInt8]) {
        let pending = Int(BIO_ctrl_pending(output))
        guard pending > 0 else { return }
        outputHighWater = max(outputHighWater, pending)
        let start = bytes.count
        bytes.append(contentsOf: repeatElement(0, count: pending))
        let read = bytes.withUnsafeMutableBytes { buffer in
            BIO_read(output, buffer.baseAddress! + start, Int32(pending))
        }
        bytes.removeLast(pending - Int(max(0, read)))
    }

    /// Replaces a BIO that grew large and is empty now by a fresh one (see `inputHighWater`).
    public func compact() {
        if inputHighWater > Self.compactAbove, BIO_ctrl_pending(input) == 0, let fresh = BIO_new(BIO_s_mem()) {
            SSL_set0_rbio(ssl, fresh) // frees the old one
            input = fresh
            inputHighWater = 0
        }
        if outputHighWater > Self.compactAbove, BIO_ctrl_pending(output) == 0, let fresh = BIO_new(BIO_s_mem()) {
            SSL_set0_wbio(ssl, fresh)
            output = fresh
            outputHighWater = 0
        }
    }

    /// "TLSv1.3" and so on, once the handshake is done.
    public var negotiatedVersion: String? {
        guard SSL_is_init_finished(ssl) == 1, let text = SSL_get_version(ssl) else { return nil }
        return String(cString: text)
    }
}
