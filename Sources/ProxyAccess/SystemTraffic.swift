import ATSPolicy

/// The device's own traffic, told apart from an app's loads: the one place that says which requests
/// are the operating system's, so that they are recorded as app `system` and never counted against
/// an app (its findings, fixes, suggested dictionary). ATS is an app's policy; the device's trust
/// evaluation fetches what it needs over cleartext whatever the app's dictionary says.
///
/// Today it knows certificate fetches (issue 31). The rule, kept to what a request shows reliably:
/// - trustd's own requests: a User-Agent whose product is `com.apple.trustd` (`com.apple.trustd/3.0`:
///   caIssuers downloads, OCSP and CRL requests alike), whatever the method or path;
/// - requests that carry no User-Agent at all (an app's URLSession loads always carry one) and are
///   an OCSP request (`POST` with `Content-Type: application/ocsp-request`) or a download of a
///   certificate or CRL (`GET` or `HEAD` of a path ending in .crt, .cer, .der, .p7c or .crl).
/// An app's own request, with its User-Agent, stays the app's even when it fetches a certificate.
public struct SystemTraffic: Sendable, Equatable {
    /// The `app` its records carry.
    public static let app = "system"

    public enum Kind: String, Sendable {
        /// trustd's User-Agent.
        case trustd
        /// An OCSP request without a User-Agent.
        case ocsp
        /// A certificate or CRL download without a User-Agent.
        case certificateDownload = "certificate-download"
        /// The captive-portal probe (its User-Agent `CaptiveNetworkSupport-... wispr`).
        case captiveProbe = "captive-probe"
        /// A destination of the system-destinations table (Apple's services, the operator's own).
        case destination
    }

    /// Whether it is one of the device's certificate fetches (reason `system-fetch`), which no ATS
    /// ever judges, or other system traffic (reason `system-traffic`), which `--system-traffic judge`
    /// hands back to the app's policy.
    public var isCertificateFetch: Bool {
        switch kind {
        case .trustd, .ocsp, .certificateDownload: true
        case .captiveProbe, .destination: false
        }
    }

    public var kind: Kind
    /// Why the request is the device's, for the record's message.
    public var message: String

    static let trustdProduct = "com.apple.trustd"
    static let ocspMediaType = "application/ocsp-request"
    static let certificateSuffixes = [".crt", ".cer", ".der", ".p7c", ".crl"]

    /// A cleartext request (`http://`), by its method, the path of its target, its User-Agent and its
    /// Content-Type; nil when it is an app's.
    public static func classify(method: String, path: String, userAgent: String?,
                                contentType: @autoclosure () -> String?) -> SystemTraffic? {
        if AppRouter.product(ofUserAgent: userAgent)?.lowercased() == trustdProduct {
            return SystemTraffic(kind: .trustd, message: "the device's own certificate fetch (trustd's User-Agent"
                                 + " \(userAgent ?? "")): not the app's load, so ATS does not judge it")
        }
        guard userAgent?.isEmpty ?? true else { return nil }
        if method == "POST",
           contentType()?.prefix(while: { $0 != ";" }).trimmingCharacters(in: .whitespaces).lowercased() == ocspMediaType {
            return SystemTraffic(kind: .ocsp, message: "an OCSP request without a User-Agent (\(ocspMediaType)): the"
                                 + " device's certificate status check, not an app's load, so ATS does not judge it")
        }
        let file = path.prefix { $0 != "?" && $0 != "#" }.lowercased()
        if method == "GET" || method == "HEAD", certificateSuffixes.contains(where: file.hasSuffix) {
            return SystemTraffic(kind: .certificateDownload, message: "a certificate or CRL download without a"
                                 + " User-Agent: the device's own fetch, not an app's load, so ATS does not judge it")
        }
        return nil
    }

    static let captiveProduct = "captivenetworksupport"

    /// A request whose User-Agent is the captive-portal probe's (`CaptiveNetworkSupport-407.0.1 wispr`),
    /// on any path: the device checking that the network reaches the Internet, not an app's load.
    public static func captiveProbe(userAgent: String?) -> SystemTraffic? {
        // Compared byte by byte, case folded: every request with a User-Agent asks, so no copy is made.
        guard let userAgent, userAgent.utf8.starts(with: captiveProduct.utf8, by: { $0 | 0x20 == $1 }) else { return nil }
        return SystemTraffic(kind: .captiveProbe, message: "the device's captive-portal probe (User-Agent \(userAgent)):"
                             + " not the app's load, so ATS does not judge it")
    }

    /// A connection or request to a destination of `table`: by the name the client gave (SNI, Host,
    /// CONNECT's authority), else by the address it goes to.
    public static func destination(host: Host?, address: IPAddress?, port: UInt16,
                                   in table: SystemDestinations) -> SystemTraffic? {
        guard let entry = table.match(host: host, address: address, port: port) else { return nil }
        return SystemTraffic(kind: .destination, message: "the device's own traffic (\(entry.service), \(entry)):"
                             + " not the app's, so ATS does not judge it")
    }

    /// Decides system traffic's destinations for the record: no app's ATS applies to them, as under
    /// NSAllowsArbitraryLoads (so the record says `ats: off`).
    public static func engine(options: EngineOptions) -> DecisionEngine {
        // Without the built-in exceptions, whose apple.com entry would make Apple's own hosts say
        // `ats: exception` where no ATS applies at all.
        var options = options
        options.builtinExceptions = false
        let source = PolicySource(origin: app, format: nil, root: .bare,
                                  dictionary: ["NSAllowsArbitraryLoads": .bool(true)])
        return DecisionEngine(policy: Policy(source), options: options)
    }
}

/// How the device's own traffic is told apart (`--system-traffic`, `--system-dest`): recorded as app
/// `system` (the default), or judged with the app's policy like everything else. The device's
/// certificate fetches are never the app's: ATS does not apply to trustd on a device either.
public struct SystemTrafficRules: Sendable {
    public enum Mode: String, Sendable, CaseIterable {
        /// Recorded as app `system`, allowed, never counted against an app.
        case record
        /// Judged with the app's policy (a lab that holds the OS's traffic to the app's ATS too).
        case judge
    }

    public var mode: Mode
    public var destinations: SystemDestinations

    public init(mode: Mode = .record, destinations: SystemDestinations = .apple) {
        self.mode = mode
        self.destinations = destinations
    }

    /// A cleartext request (absolute-form or transparent): a certificate fetch always, a captive
    /// probe or a table destination in record mode; nil when it is the app's.
    public func classify(method: String, path: String, userAgent: String?, contentType: @autoclosure () -> String?,
                         host: Host?, address: IPAddress?, port: UInt16) -> SystemTraffic? {
        if let fetch = SystemTraffic.classify(method: method, path: path, userAgent: userAgent, contentType: contentType()) {
            return fetch
        }
        guard mode == .record else { return nil }
        return SystemTraffic.captiveProbe(userAgent: userAgent)
            ?? SystemTraffic.destination(host: host, address: address, port: port, in: destinations)
    }

    /// A tunnel (CONNECT, or a transparent TLS connection by its SNI or its address).
    public func classify(tunnelTo host: Host?, address: IPAddress?, port: UInt16, userAgent: String?) -> SystemTraffic? {
        guard mode == .record else { return nil }
        return SystemTraffic.captiveProbe(userAgent: userAgent)
            ?? SystemTraffic.destination(host: host, address: address, port: port, in: destinations)
    }
}
