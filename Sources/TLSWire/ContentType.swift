/// The type byte of a TLS record header (RFC 8446 section 5.1, RFC 6520 for heartbeat).
public enum ContentType: UInt8, Sendable, CaseIterable {
    case changeCipherSpec = 20
    case alert = 21
    case handshake = 22
    case applicationData = 23
    case heartbeat = 24

    /// The RFC's name: `change_cipher_spec`, `alert`, ...
    public var name: String {
        switch self {
        case .changeCipherSpec: "change_cipher_spec"
        case .alert: "alert"
        case .handshake: "handshake"
        case .applicationData: "application_data"
        case .heartbeat: "heartbeat"
        }
    }
}
