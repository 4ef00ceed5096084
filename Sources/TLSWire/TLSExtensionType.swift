/// Hello extension type codes TLSWire reads (IANA "TLS ExtensionType Values").
public enum TLSExtensionType {
    public static let serverName: UInt16 = 0
    public static let supportedGroups: UInt16 = 10
    public static let applicationLayerProtocolNegotiation: UInt16 = 16
    public static let supportedVersions: UInt16 = 43
    public static let keyShare: UInt16 = 51
}
