import ATSPolicy
import COpenSSL

/// Reads OpenSSL's SCT objects into R16's facts.
enum SCTReader {
    /// The SCT's 32-byte log id, or nil when it has none (a malformed SCT counts for no log).
    static func logID(_ sct: OpaquePointer) -> [UInt8]? {
        var bytes: UnsafeMutablePointer<UInt8>?
        let length = SCT_get0_log_id(sct, &bytes)
        guard let bytes, length > 0 else { return nil }
        return Array(UnsafeBufferPointer(start: bytes, count: length))
    }

    static func source(_ sct: OpaquePointer) -> SCTFacts.Source {
        switch SCT_get_source(sct) {
        case SCT_SOURCE_TLS_EXTENSION: .tlsExtension
        case SCT_SOURCE_OCSP_STAPLED_RESPONSE: .ocsp
        default: .embedded
        }
    }
}
