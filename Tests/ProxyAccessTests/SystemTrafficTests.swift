import ATSPolicy
import Testing
import ProxyAccess

/// Which cleartext requests are the device's own (trustd's certificate fetches) and which stay the
/// app's, as a table: the rule of SystemTraffic, without sockets.
@Suite struct SystemTrafficTests {
    struct Row: Sendable, CustomStringConvertible {
        var method: String
        var path: String
        var userAgent: String?
        var contentType: String?
        var kind: SystemTraffic.Kind?
        var description: String { "\(method) \(path) UA=\(userAgent ?? "-") CT=\(contentType ?? "-")" }
    }

    static let rows: [Row] = [
        // trustd, whatever it asks for.
        Row(method: "GET", path: "/SectigoRSADomainValidationSecureServerCA.crt", userAgent: "com.apple.trustd/3.0",
            kind: .trustd),
        Row(method: "POST", path: "/", userAgent: "com.apple.trustd/2.0", contentType: "application/ocsp-request", kind: .trustd),
        Row(method: "GET", path: "/MFMwUTBPME0wSzAJBgUrDgMCGgUABBQ", userAgent: "com.apple.trustd/3.0", kind: .trustd),
        Row(method: "GET", path: "/r3.crl", userAgent: "COM.APPLE.TRUSTD/3.0", kind: .trustd),
        // No User-Agent: OCSP by its media type, certificates and CRLs by their path.
        Row(method: "POST", path: "/", contentType: "application/ocsp-request", kind: .ocsp),
        Row(method: "POST", path: "/ocsp", contentType: "Application/OCSP-Request; charset=binary", kind: .ocsp),
        Row(method: "GET", path: "/int.CER", kind: .certificateDownload),
        Row(method: "HEAD", path: "/root.der", kind: .certificateDownload),
        Row(method: "GET", path: "/bundle.p7c?v=2", kind: .certificateDownload),
        Row(method: "GET", path: "/crl/latest.crl", userAgent: "", kind: .certificateDownload),
        // An app's requests stay the app's, certificates or not.
        Row(method: "GET", path: "/int.crt", userAgent: "Lab/1.0 CFNetwork/1490.0.4 Darwin/23.2.0", kind: nil),
        Row(method: "POST", path: "/", userAgent: "curl/7.88.1", contentType: "application/ocsp-request", kind: nil),
        Row(method: "GET", path: "/com.apple.trustd.crt", userAgent: "Lab/1.0", kind: nil),
        // Without a User-Agent, only what a certificate fetch looks like.
        Row(method: "GET", path: "/index.html", kind: nil),
        Row(method: "POST", path: "/upload.crt", kind: nil),
        Row(method: "GET", path: "/", contentType: "application/ocsp-request", kind: nil),
        Row(method: "POST", path: "/", contentType: "application/ocsp-response", kind: nil),
        Row(method: "GET", path: "/x.crt.html", kind: nil),
    ]

    @Test(arguments: rows)
    func theDevicesOwnFetchesAreToldFromAnAppsLoads(row: Row) {
        let found = SystemTraffic.classify(method: row.method, path: row.path, userAgent: row.userAgent,
                                           contentType: row.contentType)
        #expect(found?.kind == row.kind)
        if let found { #expect(found.message.contains("not the app's load") || found.message.contains("not an app's load")) }
    }

    @Test func systemTrafficIsDecidedOutsideEveryAppsATS() throws {
        let engine = SystemTraffic.engine(options: EngineOptions())
        let decision = engine.decide(try Destination.parse(url: "http://crt.sectigo.com/int.crt"))
        #expect(decision.action == .allow)
        #expect(decision.ats == .off)
        #expect(SystemTraffic.app == "system")
    }
}
