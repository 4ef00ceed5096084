import COpenSSL
import Glibc

/// What one non-blocking TLS step did.
public enum TLSIOResult: Equatable, Sendable {
    /// The handshake completed.
    case done
    /// `read` or `write` moved this many plaintext bytes.
    case bytes(Int)
    /// Call again when the socket is readable.
    case wantRead
    /// Call again when the socket is writable.
    case wantWrite
    /// The peer ended the TLS stream (close_notify, or a plain close).
    case closed
    /// The connection is unusable; the text says why.
    case failed(String)
}

extension TLSIOResult {
    /// What an `SSL_*` call on `ssl` that returned `result` (not success) came to, read from
    /// SSL_get_error and the thread's error queue (drained), with the failure's reason codes (nil
    /// when nothing failed). `peer` names the other side in messages ("server", "client").
    static func of(_ ssl: OpaquePointer, result: Int32, during step: String,
                   peer: String) -> (TLSIOResult, reasons: [Int32]?) {
        let savedErrno = errno
        let code = SSL_get_error(ssl, result)
        switch code {
        case SSL_ERROR_WANT_READ:
            return (.wantRead, nil)
        case SSL_ERROR_WANT_WRITE:
            return (.wantWrite, nil)
        case SSL_ERROR_ZERO_RETURN:
            return (.closed, nil)
        case SSL_ERROR_SYSCALL:
            let queue = OpenSSLErrorQueue.drain()
            if savedErrno == 0 {
                if step == "read" { return (.closed, queue.reasons) }
                return (.failed("connection closed by the \(peer) during the TLS \(step)"), queue.reasons)
            }
            let system = String(cString: strerror(savedErrno))
            return (.failed("TLS \(step): \(system)" + (queue.codes.isEmpty ? "" : " (\(queue.text))")), queue.reasons)
        default:
            let queue = OpenSSLErrorQueue.drain()
            return (.failed("TLS \(step) failed: \(queue.codes.isEmpty ? "SSL error \(code)" : queue.text)"), queue.reasons)
        }
    }
}
