/// Hello extension type codes TLSWire reads (IANA "TLS ExtensionType Values").
public enum TLSExtensionType {
    public static let serverName: UInt16 = 0
    public static let supportedGroups: UInt16 = 10
    public static let applicationLayerProtocolNegotiation: UInt16 = 16
    /// RFC 6962: SCTs in a TLS 1.2 ServerHello (R16).
    public static let signedCertificateTimestamp: UInt16 = 18
    /// RFC 7627: the server agreed to the extended master secret (R18).
    public static let extendedMasterSecret: UInt16 = 23
    /// RFC 8446: in a TLS 1.3 ServerHello, the server resumes a session (no Certificate follows).
    public static let preSharedKey: UInt16 = 41
    public static let supportedVersions: UInt16 = 43
    public static let keyShare: UInt16 = 51
}
