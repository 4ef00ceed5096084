import ArgumentParser
import Foundation
import ProxyCore
import TLSClient

/// What a server's certificate chain is judged against (R15, R16), for `run` and `diagnose` alike:
/// the trust store of the judged OS, roots the operator installed, Certificate Transparency, and
/// whether a missing intermediate is fetched as the device fetches it.
struct TrustOptions: ParsableArguments {
    typealias Switch = InspectionOptions.Switch

    @Option(name: .long, help: ArgumentHelp("""
        The roots a chain must reach: apple (the snapshot of Apple's trust store atsgate ships: its roots, \
        their policy constraints, its CT log list), system (the host's CA bundle), or a directory in the \
        layout of Apple's security_certificates project (another OS release's store).
        """, valueName: "apple|system|dir"))
    var trustStore = "apple"

    @Option(name: .long, help: ArgumentHelp("""
        PEM file of roots installed by the user or an administrator (repeatable): trusted, without CT or the \
        398-day rule.
        """, valueName: "file"))
    var caFile: [String] = []

    @Option(name: .long, help: """
        Certificate Transparency (R16) for chains to the trust store: SCTs from distinct logs against Apple's \
        thresholds (2 for a lifetime up to 180 days, 3 above). Default: on, verified against the store's log \
        list, with apple and a directory that has one; off with system. on without a log list COUNTS THE SCTs, \
        IT DOES NOT VERIFY THEM.
        """)
    var certificateTransparency: Switch?

    @Option(name: .long, help: ArgumentHelp("""
        Apple's CT log list (JSON) to verify SCTs against, in place of the store's (implies \
        --certificate-transparency on).
        """, valueName: "file"))
    var ctLogList: String?

    @Option(name: .long, help: """
        Fetch an intermediate the server left out from the caIssuers http:// URL of the certificate that \
        lacks it, as the device does (3 s, cached; through the parent proxy when the tunnel uses one).
        """)
    var aiaFetch: Switch = .on

    func validate() throws {
        guard !trustStore.isEmpty else { throw ValidationError("--trust-store: expected apple, system or a directory") }
        if certificateTransparency == .off, ctLogList != nil {
            throw ValidationError("--ct-log-list verifies SCTs, which --certificate-transparency off does not check: drop one")
        }
    }

    /// The store with the operator's roots, and R16 as the flags and the store say. Errors name the
    /// flag, then the file (and the key within it) at fault.
    func load() throws -> (store: TrustStore, transparency: TransparencyCheck?) {
        let store: TrustStore
        do {
            store = try TrustStore(TrustStoreKind(trustStore), caFiles: caFile)
        } catch {
            throw CommandFailure(message: (error.isCAFile ? "--ca-file: " : "--trust-store \(trustStore): ") + error.description)
        }
        if let ctLogList {
            do {
                return (store, TransparencyCheck(logList: try CTLogList(file: ctLogList)))
            } catch {
                throw CommandFailure(message: "--ct-log-list: \(error.description)")
            }
        }
        switch certificateTransparency {
        case .off?: return (store, nil)
        case .on?: return (store, store.defaultTransparency ?? TransparencyCheck())
        case nil: return (store, store.defaultTransparency)
        }
    }

    func apply(to configuration: inout ProxyConfiguration) throws {
        (configuration.inspection.trustStore, configuration.inspection.transparency) = try load()
        configuration.inspection.aiaFetch = aiaFetch == .on
    }

    /// The store in one phrase, for the start line and diagnose: `apple (security_certificates-55349.0.11,
    /// 150 TLS roots, CT verified, AIA on)`.
    static func describe(_ store: TrustStore?, transparency: TransparencyCheck?, aia: Bool) -> String {
        guard let store else { return "system (host)" }
        var parts = [store.version]
        if store.kind != .system { parts.append("\(store.rootCount) TLS root\(store.rootCount == 1 ? "" : "s")") }
        if store.extraCertificateCount > 0 { parts.append("+\(store.extraCertificateCount) from --ca-file") }
        parts.append(transparency.map { $0.logList == nil ? "CT counted, not verified" : "CT verified" } ?? "CT off")
        parts.append("AIA \(aia ? "on" : "off")")
        return "\(store.name) (\(parts.joined(separator: ", ")))"
    }
}
