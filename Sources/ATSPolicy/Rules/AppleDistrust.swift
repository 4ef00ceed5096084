import Foundation

/// A CA that Apple distrusts for certificates issued from a date on, while certificates issued before
/// it keep working until they expire: matched by its root certificate or by the root's key, so that a
/// cross-signed copy of the same root is caught too.
public struct DistrustedCA: Sendable, Equatable {
    /// SHA-256 of the root certificate, upper-case hex, as Apple's announcement lists it.
    public var certificateSHA256: String
    /// SHA-256 of the root's SubjectPublicKeyInfo, upper-case hex, computed from that certificate as
    /// Apple's trust store ships it.
    public var spkiSHA256: String
    public var distrust: ChainCertificate.Distrust

    public init(certificateSHA256: String, spkiSHA256: String, distrust: ChainCertificate.Distrust) {
        self.certificateSHA256 = certificateSHA256
        self.spkiSHA256 = spkiSHA256
        self.distrust = distrust
    }
}

/// Apple's date-based distrusts, from its support articles (the data of `certificate-distrusted`).
///
/// Source: "Changes to certificate authorities and certificates", https://support.apple.com/121668:
/// "certificates issued after the effective date will fail to validate on the latest Apple systems;
/// certificates issued on or before it work until they expire". Both effective dates below are
/// 2024-11-15, so leaves whose notBefore is 2024-11-16T00:00:00Z or later are refused. The article
/// lists Camerfirma's roots for TLS, S/MIME and client authentication, Entrust's for TLS, S/MIME and
/// timestamping, and Entrust's AffirmTrust roots for TLS and timestamping. The copy of the article
/// read for this table ended after "AffirmTrust Networking"; AffirmTrust Premium and Premium ECC,
/// Entrust's two other AffirmTrust roots (both in Apple's store, both in Chrome's and Mozilla's
/// Entrust distrust), are listed on that basis: check them against the article when refreshing.
public enum AppleDistrust {
    static let article = "https://support.apple.com/121668"
    /// 2024-11-16T00:00:00Z: the day after the effective date 2024-11-15.
    static let after20241115 = Date(timeIntervalSince1970: 1_731_715_200)

    static func entry(_ name: String, _ certificate: String, _ spki: String) -> DistrustedCA {
        DistrustedCA(certificateSHA256: certificate, spkiSHA256: spki,
                     distrust: ChainCertificate.Distrust(name: name, from: after20241115, source: article))
    }

    public static let table: [DistrustedCA] = [
        // AC Camerfirma, S.A.
        entry("Chambers of Commerce Root - 2008",
              "063E4AFAC491DFD332F3089B8542E94617D893D7FE944E10A7937EE29D9693C0",
              "CED43902AB5FB57B442322DC0E172A4FB55F7178B808F94E780A6FD6CC6BD818"),
        entry("Global Chambersign Root - 2008",
              "136335439334A7698016A0D324DE72284E079D7B5220BB8FBD747816EEBEBACA",
              "927A1B8562280576D048C50321ADA43D8703D2D9521A18C28B8C46CC6AAE4EFD"),
        // Entrust
        entry("Entrust Root Certification Authority - G4",
              "DB3517D1F6732A2D5AB97C533EC70779EE3270A62FB4AC4238372460E6F01E88",
              "36D7C79F3D089A0FF79972D90923DEA5CA76B4CCBAF7C2751CB152E9494F52D0"),
        entry("Entrust Root Certification Authority",
              "73C176434F1BC6D5ADF45B0E76E727287C8DE57616C1E6E6141A2B2CBC7D8E4C",
              "6DBFAE00D37B9CD73F8FB47DE65917AF00E0DDDF42DBCEAC20C17C0275EE2095"),
        entry("Entrust.net Certification Authority (2048)",
              "6DC47172E01CBCB0BF62580D895FE2B8AC9AD4F873801E0C10B9C837D21EB177",
              "1EA3C5E43ED66C2DA2983A42A4A79B1E906786CE9F1B58621419A00463A87D38"),
        entry("Entrust Root Certification Authority - G2",
              "43DF5774B03E7FEF5FE40D931A7BEDF1BB2E6B42738C4E6D3841103D3AA7F339",
              "76EE8590374C715437BBCA6BBA6028EADDE2DC6DBBB8C3F610E851F11D1AB7F5"),
        entry("Entrust Root Certification Authority - EC1",
              "02ED0EB28C14DA45165C566791700D6451D7FB56F0B2AB1D3B8EB070E56EDFF5",
              "FEA2B7D645FBA73D753C1EC9A7870C40E1F7B0C561E927B985BF711866E36F22"),
        entry("AffirmTrust Commercial",
              "0376AB1D54C5F9803CE4B2E201A0EE7EEF7B57B636E8A93C9B8D4860C96F5FA7",
              "6C464B9A5B233A5E874DA765C26F045010D2DDCFF45794F0B4C7E4AAFA501495"),
        entry("AffirmTrust Networking",
              "0A81EC5A929777F145904AF38D5D509F66B5E2C58FCDB531058B0E17F3F0B41B",
              "94072AD3F58F70F93098E5A5F6C04C96C710BD849D83184919AE90EB890AE400"),
        entry("AffirmTrust Premium",
              "70A73F7F376B60074248904534B11482D5BF0E698ECC498DF52577EBF2E93B9A",
              "C7F43B4CF5B71568294F822B53762605F6DDD15CADECE739E9E2C3CBA61E9D67"),
        entry("AffirmTrust Premium ECC",
              "BD71FDF6DA97E4CF62D1647ADD2581B07D79ADF8397EB4ECBA9C5E8488821423",
              "3219B09114FF495A3EB6EB00C2EFEAB34002AE5F0A56C7679EA087A3FA037E4F"),
    ]
}
