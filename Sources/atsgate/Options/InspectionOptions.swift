import ArgumentParser
import Inspection
import ProxyCore
import TLSClient

/// What a CONNECT tunnel's TLS handshake is judged against (R14-R17): whether it is watched at all,
/// when certificates are judged and with which roots, Certificate Transparency, a ClientHello naming
/// another host, and how long verdicts are kept and handshakes may take.
struct InspectionOptions: ParsableArguments {
    enum Switch: String, ExpressibleByArgument { case on, off }

    @Option(name: .long, help: """
        Inspect CONNECT tunnels' TLS handshakes (on): version and cipher (R14), certificates (R15, R17), \
        SNI. off only tells TLS from cleartext.
        """)
    var tlsInspection: Switch = .on

    @Option(name: .long, help: """
        When server certificates are judged: before (the server's first flight waits for the verdict; \
        cached verdicts answer at once), parallel (the tunnel is cut if the verdict fails), or off.
        """)
    var certificateCheck: CertificateMode = .before

    @Option(name: .long, help: "A ClientHello naming another host than the CONNECT: block (default) or log.")
    var sniMismatch: SNIMismatchAction = .block

    @Option(name: .long, help: ArgumentHelp("Seconds a certificate verdict is reused.", valueName: "seconds"))
    var verdictTtl = 300.0

    @Option(name: .long, help: ArgumentHelp("Seconds the inspected part of a TLS handshake may take.",
                                            valueName: "seconds"))
    var handshakeTimeout = 10.0

    @Option(name: .long, help: ArgumentHelp("PEM file of extra trusted roots for certificate checks (repeatable).",
                                            valueName: "file"))
    var caFile: [String] = []

    @Option(name: .long, help: """
        Certificate Transparency (R16) for leaves that chain to the system store: on counts the SCTs \
        with distinct log ids against Apple's thresholds (2 for a lifetime up to 180 days, 3 above). \
        WITHOUT --ct-log-list THE SCTs ARE COUNTED, NOT VERIFIED. Off by default.
        """)
    var certificateTransparency: Switch = .off

    @Option(name: .long, help: ArgumentHelp("""
        Apple's CT log list (JSON): verify each SCT's log and signature (implies --certificate-transparency on).
        """, valueName: "file"))
    var ctLogList: String?

    func validate() throws {
        for timeout in [verdictTtl, handshakeTimeout] where !(timeout > 0) {
            throw ValidationError("--verdict-ttl and --handshake-timeout must be positive")
        }
    }

    func apply(to configuration: inout ProxyConfiguration) throws {
        configuration.inspection.enabled = tlsInspection == .on
        configuration.inspection.certificateMode = certificateCheck
        configuration.inspection.sniMismatch = sniMismatch
        configuration.inspection.verdictTimeToLive = verdictTtl
        configuration.timeouts.handshake = handshakeTimeout
        do {
            configuration.inspection.trustStore = try TrustStore(caFiles: caFile)
        } catch {
            throw CommandFailure(message: "--ca-file: \(error.description)")
        }
        if let ctLogList {
            do {
                configuration.inspection.transparency = TransparencyCheck(logList: try CTLogList(file: ctLogList))
            } catch {
                throw CommandFailure(message: "--ct-log-list: \(error.description)")
            }
        } else if certificateTransparency == .on {
            configuration.inspection.transparency = TransparencyCheck()
        }
    }
}

extension CertificateMode: ExpressibleByArgument {}
extension SNIMismatchAction: ExpressibleByArgument {}
