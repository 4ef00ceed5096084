import ATSPolicy
import DecisionLog
import TLSClient
import TLSWire
import POSIX

/// Turns TLSClient's certificate evaluation and probes into the proxy's judgements.
package struct ServerJudge: Sendable {
    /// The system store, loaded once, for configurations that name no store (in-process ones).
    private static let systemStore: TrustStore? = try? TrustStore()

    package let store: TrustStore?
    /// R16 (`--certificate-transparency`, `--ct-log-list`, or the store's own log list); nil when off.
    package let transparency: TransparencyCheck?
    /// Completes a chain that lacks an issuer from its caIssuers URL (`--aia-fetch on`); nil when off.
    /// Its cache is the daemon's, kept across reloads.
    package let aia: AIAFetcher?

    package init(store: TrustStore?, transparency: TransparencyCheck? = nil, aia: AIAFetcher? = nil) {
        self.store = store ?? ServerJudge.systemStore
        self.transparency = transparency
        self.aia = aia
    }

    /// The fetcher for one tunnel: through the parent proxy the tunnel goes through, if any (the
    /// origin's network may be reachable only through it); nil when fetching is off.
    package func fetcher(through parent: AIAFetcher.Parent?) -> AIAFetcher? {
        guard var fetcher = aia else { return nil }
        fetcher.parent = parent
        return fetcher
    }

    /// R15, R15a, R16 and R17 on the chain a TLS 1.2-or-lower server sent, with the SCTs its
    /// ServerHello carried. Without `issuers` it never waits on the network: a chain that lacks an
    /// issuer comes back with `missingIssuerURLs`, for a second evaluation with them on a pool that may wait.
    package func evaluate(chain: [[UInt8]], scts: [[UInt8]] = [], host: String, requirements: Requirements,
                          pin: PinnedDomain?, issuers: AIAFetcher? = nil) -> ServerJudgement {
        guard let store else { return unavailable(host, requirements) }
        let presented = transparency == nil ? [] : scts.map { PresentedSCT(source: .tlsExtension, bytes: $0) }
        let verdict = CertificateEvaluator.evaluate(chain: chain, host: host, requirements: requirements, pin: pin,
                                                    store: store, transparency: transparency, presentedSCTs: presented,
                                                    aia: issuers)
        var judgement = ServerJudgement(verdict)
        judgement.capAge(verdict, issuers)
        // Only worth a second stage when this one could not fetch and the fetcher is on.
        if issuers != nil || aia == nil { judgement.missingIssuerURLs = [] }
        return judgement
    }

    /// R15/R17 by a handshake of our own with the same address and server name (TLS 1.3, resumption).
    /// Through a parent proxy, `address` is the parent's, `port` the origin's, and the probe asks the
    /// parent to CONNECT as the tunnel did. A probe waits on the network anyway: it fetches a missing
    /// issuer itself (`issuers`).
    package func probe(address: SocketAddress, port: Int, tunnel: ProbeTunnel?, serverName: String?, host: String,
                       requirements: Requirements, pin: PinnedDomain?, timeout: Double,
                       issuers: AIAFetcher? = nil) -> ServerJudgement {
        guard let store else { return unavailable(host, requirements) }
        let target = ProbeTarget(host: serverName ?? host, port: port, addresses: [address.ip.description], tunnel: tunnel)
        let result = TLSProbe(store: store, timeout: timeout, transparency: transparency, aia: issuers)
            .probe(target, requirements: requirements, pin: pin)
        if let session = result.session {
            var judgement = ServerJudgement(session.certificate)
            judgement.capAge(session.certificate, issuers)
            judgement.missingIssuerURLs = []
            return judgement
        }
        let failure = result.failure?.description ?? "no answer"
        let message = "the certificate of \(host) could not be checked: a probe of \(address) failed (\(failure))"
        guard requirements.certificateChecks || pin != nil else {
            return ServerJudgement(tolerated: [], note: message)
        }
        var judgement = ServerJudgement(blocking: .init(reason: "upstream-tls", message: message, alert: .handshakeFailure))
        judgement.failedProbe = true
        judgement.maximumAge = ServerJudge.failedProbeLifetime
        return judgement
    }

    /// Seconds a failed probe's verdict answers for the server: long enough that a burst of tunnels to
    /// a server that stopped answering does not probe it once each, short enough that the next
    /// connection after a blip is judged afresh (not refused for --verdict-ttl by a stale timeout).
    package static let failedProbeLifetime = 5.0

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
        certificateDepth = verdict.certificateDepth
        aiaFetched = verdict.aiaFetched
        missingIssuerURLs = verdict.missingIssuerURLs
    }

    /// An untrusted chain after a failed caIssuers fetch is judged again once `fetcher` forgets the
    /// failure, as the device would fetch again then: the verdict is kept no longer.
    mutating func capAge(_ verdict: CertificateVerdict, _ fetcher: AIAFetcher?) {
        guard let fetcher, !verdict.trusted,
              verdict.aiaFetches.contains(where: { if case .failed = $0.outcome { true } else { false } }) else { return }
        let lifetime = fetcher.cache.failureLifetime.components
        maximumAge = Double(lifetime.seconds) + Double(lifetime.attoseconds) / 1e18
    }
}
