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
