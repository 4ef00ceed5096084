/// A parsed ServerHello or HelloRetryRequest (RFC 8446 section 4.1.3; RFC 5246 section 7.4.1.3).
public struct ServerHello: Sendable, Equatable {
    /// SHA-256("HelloRetryRequest"): the random that marks a ServerHello as a HelloRetryRequest
    /// (RFC 8446 section 4.1.3).
    public static let helloRetryRequestRandom: [UInt8] = [
        0xCF, 0x21, 0xAD, 0x74, 0xE5, 0x9A, 0x61, 0x11, 0xBE, 0x1D, 0x8C, 0x02, 0x1E, 0x65, 0xB8, 0x91,
        0xC2, 0xA2, 0x11, 0x16, 0x7A, 0xBB, 0x8C, 0x5E, 0x07, 0x9E, 0x09, 0xE2, 0xC8, 0xA8, 0x33, 0x9C,
    ]

    /// 0x0303 in every TLS 1.3 ServerHello; the version itself for TLS 1.2 and below.
    public var legacyVersion: UInt16
    /// 32 bytes.
    public var random: [UInt8]
    public var sessionID: [UInt8]
    public var cipherSuite: UInt16
    public var compressionMethod: UInt8
    /// Every extension type in the order sent.
    public var extensionTypes: [UInt16]
    /// The supported_versions extension's selected_version (TLS 1.3), or nil without one.
    public var selectedVersion: UInt16?
    /// The ALPN protocol the server selected, or nil.
    public var alpnProtocol: String?
    /// The extended_master_secret extension was present (RFC 7627; R18 requires it on TLS 1.2).
    public var extendedMasterSecret: Bool { extensionTypes.contains(TLSExtensionType.extendedMasterSecret) }
    /// The serialized SCTs of the signed_certificate_timestamp extension (RFC 6962 section 3.3), each
    /// as TLSClient's `PresentedSCT` takes it; empty without the extension.
    public var signedCertificateTimestamps: [[UInt8]]
    /// A TLS 1.3 ServerHello's key share: the group the key exchange uses and the length of the
    /// server's key. Nil for a HelloRetryRequest, without the extension (TLS 1.2, a PSK-only
    /// resumption), or when it could not be read.
    public var serverShare: KeyShareEntry?
    /// The group the server chose: its share's group, or the group a HelloRetryRequest asks the client
    /// to send a share for. Nil without a readable key_share.
    public var selectedGroup: NamedGroup?
    /// Why key_share could not be read. It does not fail the hello: the client judges the server's
    /// share, and the proxy judges the connection as it did before it read it.
    public var keyExchangeError: TLSWireError?

    /// The version the server chose: selected_version when present (TLS 1.3), else legacy_version.
    public var negotiatedVersion: UInt16 { selectedVersion ?? legacyVersion }

    /// A TLS 1.3 server that accepted the client's pre-shared key: the session resumes, and the
    /// server sends no Certificate.
    public var acceptsPreSharedKey: Bool { extensionTypes.contains(TLSExtensionType.preSharedKey) }

    /// This ServerHello is a HelloRetryRequest: the handshake continues with a second ClientHello.
    public var isHelloRetryRequest: Bool { random == Self.helloRetryRequestRandom }

    /// Parses a ServerHello handshake message.
    public init(_ message: HandshakeMessage) throws(TLSWireError) {
        guard message.type == .serverHello else {
            throw .unexpectedMessage(expected: .serverHello, got: message.type)
        }
        try self.init(body: message.body)
    }

    /// Parses a ServerHello body (the handshake message without its 4-byte header).
    public init(body: [UInt8]) throws(TLSWireError) {
        var cursor = ByteCursor(body, message: "ServerHello")
        legacyVersion = try cursor.uint16("legacy_version")
        random = try cursor.bytes(32, "random")
        sessionID = try cursor.vector(lengthBytes: 1, "legacy_session_id", range: 0...32).rest()
        cipherSuite = try cursor.uint16("cipher_suite")
        compressionMethod = try cursor.uint8("legacy_compression_method")
        let extensions = try HelloExtensions(readingRestOf: &cursor)
        extensionTypes = extensions.types
        selectedVersion = nil
        alpnProtocol = nil
        signedCertificateTimestamps = []
        serverShare = nil
        selectedGroup = nil
        keyExchangeError = nil
        if var data = extensions.data(TLSExtensionType.supportedVersions) {
            selectedVersion = try data.uint16("supported_versions selected_version")
            try data.expectEnd("supported_versions")
        }
        if var data = extensions.data(TLSExtensionType.applicationLayerProtocolNegotiation) {
            let names = try ALPN.protocolNames(&data)
            guard names.count == 1 else {
                throw cursor.failure("ALPN selects \(names.count) protocols, not one")
            }
            alpnProtocol = names[0]
        }
        if var data = extensions.data(TLSExtensionType.signedCertificateTimestamp) {
            // SignedCertificateTimestampList: a 16-bit list of 16-bit-length SCTs, none empty.
            var list = try data.vector(lengthBytes: 2, "signed_certificate_timestamp list", range: 1...0xFFFF)
            try data.expectEnd("signed_certificate_timestamp")
            while !list.isAtEnd {
                signedCertificateTimestamps.append(try list.vector(lengthBytes: 2, "SCT", range: 1...0xFFFF).rest())
            }
        }
        if var data = extensions.data(TLSExtensionType.keyShare) {
            do {
                if random == Self.helloRetryRequestRandom {
                    selectedGroup = try KeyShare.selectedGroup(&data)
                } else {
                    let share = try KeyShare.serverShare(&data)
                    serverShare = share
                    selectedGroup = share.group
                }
            } catch {
                keyExchangeError = error
            }
        }
    }

    /// Whether a message body is a HelloRetryRequest, without parsing the rest of it.
    static func isHelloRetryRequest(body: [UInt8]) -> Bool {
        body.count >= 34 && body[2..<34].elementsEqual(helloRetryRequestRandom)
    }
}
