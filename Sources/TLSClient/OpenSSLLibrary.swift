import COpenSSL

/// Facts about the OpenSSL library atsgate runs against (for `atsgate version` and bug reports).
public enum OpenSSLLibrary {
    /// The runtime library's version line, e.g. "OpenSSL 3.0.19 27 Jan 2026".
    public static var version: String {
        guard let text = OpenSSL_version(OPENSSL_VERSION) else { return "unknown" }
        return String(cString: text)
    }
}
