/// The leaf certificate as the log shows it. A class: every connection's record has room for
/// one, and most never hold one.
package final class LoggedCertificate: Sendable {
    package let subject: String
    package let issuer: String
    package let key: String
    package let signatureAlgorithm: String

    package init(subject: String, issuer: String, key: String, signatureAlgorithm: String) {
        self.subject = subject
        self.issuer = issuer
        self.key = key
        self.signatureAlgorithm = signatureAlgorithm
    }
}
