import ArgumentParser
import Inspection
import ProxyCore

/// How a CONNECT tunnel's TLS handshake is watched (R14-R17): whether at all, when certificates are
/// judged (what they are judged against is TrustOptions'), a ClientHello naming another host, and how
/// long verdicts are kept and handshakes may take.
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
    }
}

extension CertificateMode: ExpressibleByArgument {}
extension SNIMismatchAction: ExpressibleByArgument {}
