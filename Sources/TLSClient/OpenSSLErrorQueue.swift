import COpenSSL

/// The calling thread's OpenSSL error queue, read once and emptied.
///
/// OpenSSL reports failures on a per-thread queue that outlives the call that filled it; every entry
/// point of this target clears it before a call and drains it after a failure, so one connection's
/// error can never be reported by the next connection on the same thread.
struct OpenSSLErrorQueue {
    /// The packed error codes, oldest first.
    let codes: [UInt]

    /// Empties the queue, keeping what it held.
    static func drain() -> OpenSSLErrorQueue {
        var codes: [UInt] = []
        while case let code = ERR_get_error(), code != 0 { codes.append(code) }
        return OpenSSLErrorQueue(codes: codes)
    }

    static func clear() { ERR_clear_error() }

    /// The reason codes (SSL_R_*, X509_R_*), oldest first.
    var reasons: [Int32] { codes.map { ERR_GET_REASON($0) } }

    func contains(reason: Int32) -> Bool { reasons.contains(reason) }

    /// OpenSSL's own text for each entry, e.g. "tlsv1 alert protocol version"; empty when none.
    var text: String {
        codes.map { code in
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            // "error:0A00042E:SSL routines::tlsv1 alert protocol version": keep what a person reads.
            let full = String(nulTerminated: buffer)
            return full.split(separator: ":", omittingEmptySubsequences: false).last.map(String.init) ?? full
        }.joined(separator: "; ")
    }
}
