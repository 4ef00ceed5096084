import Foundation
import Testing
import TLSClient

@Suite struct TrustStoreTests {
    @Test func caFileCertificatesAreCounted() throws {
        let store = try TrustStore(caFiles: [try TestPKI.path("ca.pem"), try TestPKI.path("good-rsa-chain.pem")])
        #expect(store.extraCertificateCount == 3)
    }

    @Test func missingFileIsNamed() throws {
        let error = try #require(throws: TrustStoreError.self) { try TrustStore(caFiles: ["/nonexistent/ca.pem"]) }
        #expect(error.file == "/nonexistent/ca.pem")
        #expect(error.description == "CA file /nonexistent/ca.pem: no such file")
    }

    @Test func fileWithoutCertificateIsNamed() throws {
        // A private key is PEM, but not a certificate.
        let key = try TestPKI.path("ca.key")
        let error = try #require(throws: TrustStoreError.self) { try TrustStore(caFiles: [key]) }
        #expect(error.description == "CA file \(key): holds no PEM certificate (expected -----BEGIN CERTIFICATE-----)")
    }
}
