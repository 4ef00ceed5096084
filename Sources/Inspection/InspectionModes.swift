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

/// What a transparent connection whose first bytes are neither TLS nor HTTP/1.x does
/// (`--transparent-other`).
public enum TransparentOtherAction: String, Sendable, CaseIterable {
    /// Relay it to its original destination as it is; the record says `other-protocol` (action allow).
    case allow
    /// Close it; the record says `other-protocol` (action block).
    case block
}

/// Whether a transparent TLS connection's server name must resolve to the address it was going to
/// (`--sni-check`, reason `sni-mismatch-address`), as Squid's host verification checks forged names.
public enum SNIAddressCheck: String, Sendable, CaseIterable {
    case off
    /// Record the mismatch (action allow) and let the connection go on.
    case report
    /// Refuse the connection (a TLS access_denied alert).
    case block
}
