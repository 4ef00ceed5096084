/// A certificate for a `com.apple.security.root` payload: the device adds it to its trust store (on
/// iOS, full trust for TLS is then switched on in Settings > General > About > Certificate Trust
/// Settings).
package struct RootCertificate: Sendable, Equatable {
    /// The certificate in DER, as PayloadContent carries it.
    package let der: [UInt8]
    /// PayloadCertificateFileName.
    package let fileName: String
    /// What a person recognises it by (its common name): the payload's display name.
    package let name: String

    package init(der: [UInt8], fileName: String, name: String) {
        self.der = der
        self.fileName = fileName
        self.name = name
    }
}
