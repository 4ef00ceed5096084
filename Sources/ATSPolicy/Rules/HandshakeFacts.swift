/// What a ServerHello settled, as TLSWire (the proxy) or OpenSSL (the probe, the upgrade) reports it.
public struct HandshakeFacts: Sendable, Equatable {
    /// The negotiated version on the wire (0x0303 for TLS 1.2; selected_version for TLS 1.3).
    public var version: UInt16
    /// The negotiated suite's IANA code point.
    public var cipherSuite: UInt16
    /// The ServerHello carried the extended_master_secret extension (RFC 7627). Meaningless for TLS 1.3,
    /// whose key schedule always binds the transcript.
    public var extendedMasterSecret: Bool
    /// The host the handshake was for, as messages name it.
    public var host: String
    /// How messages name the version and suite ("TLSv1.2", "TLS_RSA_WITH_AES_128_CBC_SHA"); TLSWire
    /// and OpenSSL each have a complete table, so the caller passes its names in.
    public var versionName: String
    public var suiteName: String

    public init(version: UInt16, cipherSuite: UInt16, extendedMasterSecret: Bool = false, host: String,
                versionName: String? = nil, suiteName: String? = nil) {
        self.version = version
        self.cipherSuite = cipherSuite
        self.extendedMasterSecret = extendedMasterSecret
        self.host = host
        self.versionName = versionName ?? TLSVersion(wireValue: version)?.rawValue ?? Self.hex(version)
        self.suiteName = suiteName ?? R14CipherSuites.entry(cipherSuite)?.ianaName ?? Self.hex(cipherSuite)
    }

    /// The version as ATS names it, when it is one of the four.
    public var tlsVersion: TLSVersion? { TLSVersion(wireValue: version) }

    static func hex(_ value: UInt16) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return "0x" + String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}

extension TLSVersion {
    /// The version with this wire value (0x0301-0x0304), or nil.
    public init?(wireValue: UInt16) {
        guard let version = TLSVersion.allCases.first(where: { $0.wireValue == wireValue }) else { return nil }
        self = version
    }
}
