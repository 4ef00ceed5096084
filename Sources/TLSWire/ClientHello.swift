/// A parsed ClientHello (RFC 8446 section 4.1.2; RFC 5246 section 7.4.1.2 for TLS 1.0-1.2).
public struct ClientHello: Sendable, Equatable {
    public var legacyVersion: UInt16
    /// 32 bytes.
    public var random: [UInt8]
    public var sessionID: [UInt8]
    /// As offered, GREASE values included.
    public var cipherSuites: [UInt16]
    public var compressionMethods: [UInt8]
    /// Every extension type in the order sent, GREASE values included.
    public var extensionTypes: [UInt16]
    /// The server_name extension's host_name, exactly as sent (not lowercased), or nil without one.
    public var serverName: String?
    /// The supported_versions extension, empty without one.
    public var supportedVersions: [UInt16]
    /// The ALPN protocol names, empty without the extension.
    public var alpnProtocols: [String]
    /// The supported_groups extension in the client's order, GREASE included (the first
    /// `SupportedGroups.maximumKept`); empty without it, or when it could not be read.
    public var supportedGroups: [NamedGroup]
    /// The key_share extension's entries (the first `KeyShare.maximumKept`); empty without it, or when
    /// it could not be read.
    public var keyShares: [KeyShareEntry]
    /// The client offered a hybrid or pure ML-KEM group, in supported_groups or key_share.
    public var offersPostQuantum: Bool
    /// Why supported_groups or key_share could not be read. Unlike the other extensions these do not
    /// fail the hello: the server judges key shares, and the proxy judges the connection as it did
    /// before it read them.
    public var keyExchangeError: TLSWireError?

    /// Parses a ClientHello handshake message.
    public init(_ message: HandshakeMessage) throws(TLSWireError) {
        guard message.type == .clientHello else {
            throw .unexpectedMessage(expected: .clientHello, got: message.type)
        }
        try self.init(body: message.body)
    }

    /// Parses a ClientHello body (the handshake message without its 4-byte header).
    public init(body: [UInt8]) throws(TLSWireError) {
        var cursor = ByteCursor(body, message: "ClientHello")
        legacyVersion = try cursor.uint16("legacy_version")
        random = try cursor.bytes(32, "random")
        sessionID = try cursor.vector(lengthBytes: 1, "legacy_session_id", range: 0...32).rest()
        var suites = try cursor.vector(lengthBytes: 2, "cipher_suites", range: 2...0xFFFE)
        guard suites.remaining % 2 == 0 else {
            throw cursor.failure("cipher_suites length \(suites.remaining) is odd")
        }
        cipherSuites = []
        cipherSuites.reserveCapacity(suites.remaining / 2)
        while !suites.isAtEnd { cipherSuites.append(try suites.uint16("cipher suite")) }
        compressionMethods = try cursor.vector(lengthBytes: 1, "legacy_compression_methods", range: 1...255).rest()

        let extensions = try HelloExtensions(readingRestOf: &cursor)
        extensionTypes = extensions.types
        serverName = nil
        supportedVersions = []
        alpnProtocols = []
        supportedGroups = []
        keyShares = []
        offersPostQuantum = false
        keyExchangeError = nil
        if var data = extensions.data(TLSExtensionType.serverName) {
            serverName = try Self.hostName(&data)
        }
        if var data = extensions.data(TLSExtensionType.supportedVersions) {
            var list = try data.vector(lengthBytes: 1, "supported_versions", range: 2...254)
            try data.expectEnd("supported_versions")
            guard list.remaining % 2 == 0 else {
                throw cursor.failure("supported_versions length \(list.remaining) is odd")
            }
            while !list.isAtEnd { supportedVersions.append(try list.uint16("supported version")) }
        }
        if var data = extensions.data(TLSExtensionType.applicationLayerProtocolNegotiation) {
            alpnProtocols = try ALPN.protocolNames(&data)
        }
        if var data = extensions.data(TLSExtensionType.supportedGroups) {
            do {
                let read = try SupportedGroups.groups(&data)
                supportedGroups = read.groups
                offersPostQuantum = read.postQuantum
            } catch {
                keyExchangeError = error
            }
        }
        if var data = extensions.data(TLSExtensionType.keyShare) {
            do {
                let read = try KeyShare.clientShares(&data)
                keyShares = read.shares
                offersPostQuantum = offersPostQuantum || read.postQuantum
            } catch {
                keyExchangeError = keyExchangeError ?? error
            }
        }
    }

    /// The host_name entry of a server_name extension (RFC 6066 section 3). Names with a NUL, over 255
    /// bytes, not UTF-8, or a second host_name are errors: each could make the proxy and the server
    /// read different hosts from the same bytes.
    private static func hostName(_ data: inout ByteCursor) throws(TLSWireError) -> String? {
        var list = try data.vector(lengthBytes: 2, "server_name list", range: 1...0xFFFF)
        try data.expectEnd("server_name list")
        var hostName: String?
        while !list.isAtEnd {
            let nameType = try list.uint8("server_name name_type")
            let name = try list.vector(lengthBytes: 2, "server_name host_name", range: 1...0xFFFF)
            guard nameType == 0 else { continue }
            guard hostName == nil else { throw data.failure("server_name has two host_name entries") }
            guard name.remaining <= 255 else {
                throw data.failure("server_name host_name of \(name.remaining) bytes is longer than 255")
            }
            let bytes = name.rest()
            guard !bytes.contains(0) else { throw data.failure("server_name host_name contains a NUL byte") }
            guard let text = String(validating: bytes, as: UTF8.self) else {
                throw data.failure("server_name host_name is not UTF-8")
            }
            hostName = text
        }
        return hostName
    }
}
