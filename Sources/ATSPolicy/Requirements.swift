/// Which cipher suites a TLS 1.2-or-lower handshake may negotiate (R14). Every TLS 1.3 suite is fine.
public enum CipherPolicy: String, Sendable {
    /// ECDHE suites only.
    case forwardSecrecy = "forward-secrecy"
    /// ECDHE suites plus TLS_RSA_WITH_AES_*.
    case forwardSecrecyOrRSA = "forward-secrecy-or-rsa"
    /// No restriction.
    case any
}

/// What a destination must satisfy on the wire (R10, R13).
public struct Requirements: Sendable, Hashable {
    public var cleartextAllowed: Bool
    /// nil when no minimum applies (ATS off or exempt).
    public var minimumTLSVersion: TLSVersion?
    public var forwardSecrecy: Bool
    public var certificateChecks: Bool

    public init(cleartextAllowed: Bool, minimumTLSVersion: TLSVersion?, forwardSecrecy: Bool,
                certificateChecks: Bool) {
        self.cleartextAllowed = cleartextAllowed
        self.minimumTLSVersion = minimumTLSVersion
        self.forwardSecrecy = forwardSecrecy
        self.certificateChecks = certificateChecks
    }

    /// ATS on (R13).
    public static let full = Requirements(cleartextAllowed: false, minimumTLSVersion: .tls12,
                                          forwardSecrecy: true, certificateChecks: true)
    /// ATS off or exempt (R11, R13): only what the client itself checks.
    public static let none = Requirements(cleartextAllowed: true, minimumTLSVersion: nil,
                                          forwardSecrecy: false, certificateChecks: false)

    /// An exception entry alone decides (R10).
    public init(entry: ExceptionEntry) {
        self.init(cleartextAllowed: entry.allowsInsecureHTTPLoads,
                  minimumTLSVersion: entry.minimumTLSVersion,
                  forwardSecrecy: entry.requiresForwardSecrecy,
                  certificateChecks: !entry.allowsInsecureHTTPLoads)
    }

    /// The cipher restriction these requirements imply (R14).
    public var cipherPolicy: CipherPolicy {
        if forwardSecrecy { return .forwardSecrecy }
        return cleartextAllowed ? .any : .forwardSecrecyOrRSA
    }
}
