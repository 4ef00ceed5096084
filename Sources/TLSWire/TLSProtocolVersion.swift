/// Protocol version numbers as they appear in hellos and records, and their names. The names match
/// ATSPolicy's `TLSVersion` raw values (`TLSv1.2`), so a log line reads the same either way.
public enum TLSProtocolVersion {
    public static let sslv3: UInt16 = 0x0300
    public static let tls10: UInt16 = 0x0301
    public static let tls11: UInt16 = 0x0302
    public static let tls12: UInt16 = 0x0303
    public static let tls13: UInt16 = 0x0304

    /// `TLSv1.2` for 0x0303; a version this table does not know as `0x7F1C`.
    public static func name(for version: UInt16) -> String {
        switch version {
        case sslv3: "SSLv3"
        case tls10: "TLSv1.0"
        case tls11: "TLSv1.1"
        case tls12: "TLSv1.2"
        case tls13: "TLSv1.3"
        default: hex16(version)
        }
    }
}
