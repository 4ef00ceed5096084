import TLSWire

/// How a refusal reaches a transparently intercepted client that does not speak HTTP to the proxy (it
/// believes it speaks to its origin): a TLS client hears `access_denied`, anything else only the close.
package enum RawAnswer {
    case alert(recordVersion: UInt16)
    case cut

    /// What `enforce` does instead of an HTTP answer.
    package var delivery: Delivery {
        switch self {
        case .alert(let version): .alert(.accessDenied, recordVersion: version)
        case .cut: .cut
        }
    }
}
