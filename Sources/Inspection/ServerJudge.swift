import ATSPolicy
import DecisionLog
import TLSClient
import TLSWire
import POSIX

/// Turns TLSClient's certificate evaluation and probes into the proxy's judgements.
package struct ServerJudge: Sendable {
    /// The system store, loaded once, for configurations without --ca-file.
    private static let systemStore: TrustStore? = try? TrustStore()

    package let store: TrustStore?
    /// R16 (`--certificate-transparency`, `--ct-log-list`); nil when off.
    package let transparency: TransparencyCheck?

    package init(store: TrustStore?, transparency: TransparencyCheck? = nil) {
        self.store = store ?? ServerJudge.systemStore
        self.transparency = transparency
    }

    /// R15, R15a, R16 and R17 on the chain a TLS 1.2-or-lower server sent, with the SCTs its
    /// ServerHello carried.
    package func evaluate(chain: [[UInt8]], scts: [[UInt8]] = [], host: String, requirements: Requirements,
                  pin: PinnedDomain?) -> ServerJudgement {
        guard let store else { return unavailable(host, requirements) }
        let presented = transparency == nil ? [] : scts.map { PresentedSCT(source: .tlsExtension, bytes: $0) }
        let verdict = CertificateEvaluator.evaluate(chain: chain, host: host, requirements: requirements, pin: pin,
                                                    store: store, transparency: transparency, presentedSCTs: presented)
        return ServerJudgement(verdict)
    }

    /// R15/R17 by a handshake of our own with the same address and server name (TLS 1.3, resumption).
    /// Through a parent proxy, `address` is the parent's, `port` the origin's, and the probe asks the
    /// parent to CONNECT as the tunnel did.
    package func probe(address: SocketAddress, port: Int, tunnel: ProbeTunnel?, serverName: String?, host: String,
               requirements: Requirements, pin: PinnedDomain?, timeout: Double) -> ServerJudgement {
        guard let store else { return unavailable(host, requirements) }
        let target = ProbeTarget(host: serverName ?? host, port: port, addresses: [address.ip.description], tunnel: tunnel)
        let result = TLSProbe(store: store, timeout: timeout, transparency: transparency)
            .probe(target, requirements: requirements, pin: pin)
        if let session = result.session { return ServerJudgement(session.certificate) }
        let failure = result.failure?.description ?? "no answer"
        let message = "the certificate of \(host) could not be checked: a probe of \(address) failed (\(failure))"
        guard requirements.certificateChecks || pin != nil else {
            return ServerJudgement(tolerated: [], note: message)
        }
        return ServerJudgement(blocking: .init(reason: "upstream-tls", message: message, alert: .handshakeFailure))
    }

    private func unavailable(_ host: String, _ requirements: Requirements) -> ServerJudgement {
        let message = "no trust store could be loaded to check the certificate of \(host)"
        guard requirements.certificateChecks else { return ServerJudgement(note: message) }
        return ServerJudgement(blocking: .init(reason: BlockReason.certificateUntrusted.rawValue, message: message,
                                               alert: .internalError))
    }
}

extension ServerJudgement {
    package init(_ verdict: CertificateVerdict) {
        self.init()
        if let leaf = verdict.leaf {
            certificate = LoggedCertificate(subject: leaf.subject, issuer: leaf.issuer, key: leaf.key.description,
                                           signatureAlgorithm: leaf.signatureAlgorithm)
        }
        if let finding = verdict.blockingFinding {
            // INTERFACE.md: a handshake refused by policy gets insufficient_security (only a version
            // refusal gets protocol_version); the reason itself is in the log.
            blocking = Refusal(reason: finding.reason.rawValue, message: finding.message, alert: .insufficientSecurity,
                               rule: finding.rule)
        }
        let tolerated = verdict.toleratedFindings
        self.tolerated = tolerated.map(\.reason.rawValue)
        if !tolerated.isEmpty {
            note = "tolerated (cleartext is allowed for this host): " + tolerated.map(\.message).joined(separator: "; ")
        }
    }
}
