/// How a decision's traffic reached the proxy (the record's `path`): through the proxy setting the
/// client chose, or intercepted by the gateway without it.
package enum RecordPath: String, Sendable, CaseIterable {
    /// The client asked the proxy (a CONNECT, an absolute-form request, the PAC file).
    case proxy
    /// A TCP connection a firewall redirected (`--listen-transparent`) or handed over by TPROXY
    /// (`--listen-tproxy`).
    case transparent
    /// A QUIC Initial read on `--listen-quic`, recorded and dropped.
    case quic
}
