/// When a server's certificate is judged (R15, R17).
public enum CertificateMode: String, Sendable, CaseIterable {
    /// Hold the server's first flight until the verdict (cached verdicts answer at once).
    case before
    /// Let the handshake go on and cut the tunnel if the verdict fails.
    case parallel
    /// Do not judge certificates (version and cipher are still checked).
    case off
}

/// What a ClientHello whose server name differs from the CONNECT host does.
public enum SNIMismatchAction: String, Sendable, CaseIterable {
    case block
    /// Log it and let the handshake go on.
    case log
}
