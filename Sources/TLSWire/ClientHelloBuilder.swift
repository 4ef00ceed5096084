/// Writes a ClientHello the way a client sends it: records, handshake header, body (RFC 8446 section
/// 4.1.2). `diagnose` uses it to offer exactly the key shares it asks about, which no system TLS
/// library of ours can (OpenSSL 3.0 has no ML-KEM). ClientHello reads what it writes.
public struct ClientHelloBuilder: Sendable {
    /// Sent as server_name unless nil (an IP address has none, RFC 6066 section 3).
    public var serverName: String?
    public var cipherSuites: [UInt16]
    /// supported_versions, most preferred first; TLS 1.3 needs it.
    public var supportedVersions: [UInt16]
    public var supportedGroups: [NamedGroup]
    /// key_share entries: each group and its key.
    public var keyShares: [(group: NamedGroup, key: [UInt8])]
    /// signature_algorithms (RFC 8446 section 4.2.3): a TLS 1.3 server refuses a hello without it.
    public var signatureAlgorithms: [UInt16]
    public var alpnProtocols: [String] = []
    /// 32 bytes.
    public var random: [UInt8]
    /// 32 bytes in TLS 1.3's middlebox compatibility mode (RFC 8446 appendix D.4), as clients send.
    public var sessionID: [UInt8]

    public init(serverName: String?, cipherSuites: [UInt16], supportedVersions: [UInt16],
                supportedGroups: [NamedGroup], keyShares: [(group: NamedGroup, key: [UInt8])],
                signatureAlgorithms: [UInt16], random: [UInt8], sessionID: [UInt8]) {
        self.serverName = serverName
        self.cipherSuites = cipherSuites
        self.supportedVersions = supportedVersions
        self.supportedGroups = supportedGroups
        self.keyShares = keyShares
        self.signatureAlgorithms = signatureAlgorithms
        self.random = random
        self.sessionID = sessionID
    }

    /// The signature schemes a current client offers: ECDSA, RSA-PSS, RSA PKCS#1 with SHA-2, Ed25519.
    public static let commonSignatureAlgorithms: [UInt16] = [
        0x0403, 0x0804, 0x0401, 0x0503, 0x0805, 0x0501, 0x0806, 0x0601, 0x0807,
    ]

    /// The handshake message body.
    public var body: [UInt8] {
        var out: [UInt8] = [0x03, 0x03] + random
        out += [UInt8(sessionID.count)] + sessionID
        Self.append16(&out, cipherSuites.flatMap(Self.bytes16))
        out += [1, 0] // legacy_compression_methods: null only
        var extensions: [UInt8] = []
        if let serverName {
            let name = Array(serverName.utf8)
            var entry: [UInt8] = [0] // host_name
            Self.append16(&entry, name)
            var list: [UInt8] = []
            Self.append16(&list, entry)
            Self.appendExtension(&extensions, TLSExtensionType.serverName, list)
        }
        Self.appendExtension(&extensions, 23, []) // extended_master_secret, for TLS 1.2 servers
        Self.appendExtension(&extensions, 0xFF01, [0]) // renegotiation_info, empty (RFC 5746)
        var groups: [UInt8] = []
        Self.append16(&groups, supportedGroups.flatMap { Self.bytes16($0.rawValue) })
        Self.appendExtension(&extensions, TLSExtensionType.supportedGroups, groups)
        Self.appendExtension(&extensions, 11, [1, 0]) // ec_point_formats: uncompressed (RFC 8422)
        var algorithms: [UInt8] = []
        Self.append16(&algorithms, signatureAlgorithms.flatMap(Self.bytes16))
        Self.appendExtension(&extensions, 13, algorithms)
        if !alpnProtocols.isEmpty {
            var list: [UInt8] = []
            for name in alpnProtocols { list += [UInt8(name.utf8.count)] + Array(name.utf8) }
            var data: [UInt8] = []
            Self.append16(&data, list)
            Self.appendExtension(&extensions, TLSExtensionType.applicationLayerProtocolNegotiation, data)
        }
        let versions = supportedVersions.flatMap(Self.bytes16)
        Self.appendExtension(&extensions, TLSExtensionType.supportedVersions, [UInt8(versions.count)] + versions)
        var shares: [UInt8] = []
        for share in keyShares {
            shares += Self.bytes16(share.group.rawValue)
            Self.append16(&shares, share.key)
        }
        var keyShare: [UInt8] = []
        Self.append16(&keyShare, shares)
        Self.appendExtension(&extensions, TLSExtensionType.keyShare, keyShare)
        Self.append16(&out, extensions)
        return out
    }

    /// The whole ClientHello as it goes on the wire: handshake records of at most 2^14 bytes each.
    public var records: [UInt8] {
        let body = body
        let message = [HandshakeType.clientHello.rawValue, UInt8(body.count >> 16 & 0xFF),
                       UInt8(body.count >> 8 & 0xFF), UInt8(body.count & 0xFF)] + body
        var out: [UInt8] = []
        for start in stride(from: 0, to: message.count, by: 16_384) {
            let fragment = message[start..<min(start + 16_384, message.count)]
            // Record version 0x0301 for the first flight, as clients send (RFC 8446 section 5.1).
            out += [ContentType.handshake.rawValue, 0x03, 0x01] + Self.bytes16(UInt16(fragment.count)) + fragment
        }
        return out
    }

    private static func bytes16(_ value: UInt16) -> [UInt8] { [UInt8(value >> 8), UInt8(value & 0xFF)] }

    private static func append16(_ out: inout [UInt8], _ vector: [UInt8]) {
        out += bytes16(UInt16(vector.count)) + vector
    }

    private static func appendExtension(_ out: inout [UInt8], _ type: UInt16, _ data: [UInt8]) {
        out += bytes16(type)
        append16(&out, data)
    }
}
