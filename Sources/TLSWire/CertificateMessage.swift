/// A parsed Certificate message: the DER certificates, leaf first (RFC 5246 section 7.4.2 for TLS 1.0-1.2;
/// RFC 8446 section 4.4.2 for TLS 1.3, where the proxy only sees it if it is ever sent in plaintext).
public struct CertificateMessage: Sendable, Equatable {
    /// Which grammar the message follows.
    public enum Format: Sendable {
        /// TLS 1.0-1.2: a 24-bit list of 24-bit-length certificates.
        case tls12
        /// TLS 1.3: a request context, then entries of certificate plus per-entry extensions.
        case tls13

        /// The grammar a handshake at `version` (a ServerHello's `negotiatedVersion`) uses.
        public init(negotiatedVersion version: UInt16) {
            self = version >= TLSProtocolVersion.tls13 ? .tls13 : .tls12
        }
    }

    public var format: Format
    /// DER certificates, leaf first; empty when the peer sent none.
    public var certificates: [[UInt8]]
    /// TLS 1.3's certificate_request_context; empty for TLS 1.2.
    public var requestContext: [UInt8]

    /// The leaf (end-entity) certificate.
    public var leaf: [UInt8]? { certificates.first }

    /// Parses a Certificate handshake message.
    public init(_ message: HandshakeMessage, format: Format = .tls12) throws(TLSWireError) {
        guard message.type == .certificate else {
            throw .unexpectedMessage(expected: .certificate, got: message.type)
        }
        try self.init(body: message.body, format: format)
    }

    /// Parses a Certificate body (the handshake message without its 4-byte header).
    public init(body: [UInt8], format: Format = .tls12) throws(TLSWireError) {
        var cursor = ByteCursor(body, message: "Certificate")
        self.format = format
        requestContext = format == .tls13
            ? try cursor.vector(lengthBytes: 1, "certificate_request_context").rest() : []
        var list = try cursor.vector(lengthBytes: 3, "certificate_list")
        try cursor.expectEnd("certificate_list")
        certificates = []
        while !list.isAtEnd {
            let der = try list.vector(lengthBytes: 3, "certificate \(certificates.count)", range: 1...0xFF_FFFF)
            certificates.append(der.rest())
            if format == .tls13 {
                _ = try list.vector(lengthBytes: 2, "certificate \(certificates.count - 1) extensions")
            }
        }
    }
}
