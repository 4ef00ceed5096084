import ATSPolicy
import DecisionLog
import Dispatch
import EventLoops
import HTTP1
import Inspection
import TLSClient
import POSIX

/// `--cleartext upgrade`: a plain request to a host that forbids cleartext is carried to the origin
/// over TLS that meets the host's requirements (R13-R17); the response streams back as usual. A
/// server that fails them gets the client a 502 naming the reason.
extension ProxyConnection {
    /// What an upgrade carries while its TLS handshake runs.
    final class UpgradeState {
        let head: RequestHead
        let destination: Destination
        let secure: Destination
        let decision: Decision

        init(head: RequestHead, destination: Destination, secure: Destination, decision: Decision) {
            self.head = head
            self.destination = destination
            self.secure = secure
            self.decision = decision
        }
    }

    func upgrade(_ head: RequestHead, destination: Destination, decision: Decision) {
        var secure = destination
        secure.scheme = .https
        secure.port = generation.configuration.upgradePorts[destination.port] ?? destination.port
        openUpstream(secure, then: .upgrade(head, decision, original: destination))
    }

    /// Connected to the origin's TLS port: start the handshake.
    func startUpgrade(_ head: RequestHead, destination: Destination, secure: Destination, decision: Decision) {
        guard let upstream else { return close() }
        let host = destination.host.description
        guard let store = generation.judge.store else {
            return upgradeFailed(reason: "upstream-tls", message: "no trust store could be loaded to check \(host)")
        }
        let tls: TLSConnection
        do {
            tls = try TLSConnection(fd: upstream.fd, serverName: host, requirements: decision.requirements, store: store)
        } catch {
            return upgradeFailed(reason: "upstream-tls", message: "cannot start TLS to \(host): \(error)")
        }
        upstreamTLS = tls
        enterUpgrading(UpgradeState(head: head, destination: destination, secure: secure, decision: decision))
        arm(after: generation.configuration.timeouts.handshake) { [self] in
            upgradeFailed(reason: "upstream-timeout", message: "the TLS handshake with \(host):\(secure.port) timed out",
                          status: 504)
        }
        upgradeHandshake()
    }

    func upgradeHandshake() {
        guard case .upgrading(let upgrade) = state, let tls = upstreamTLS, let upstream else {
            return impossible("an upgrade's handshake step")
        }
        switch tls.handshake() {
        case .wantRead:
            upstream.wantWrite(false)
            upstream.wantRead(true)
        case .wantWrite:
            upstream.wantRead(false)
            upstream.wantWrite(true)
        case .failed(let problem):
            explainUpgradeFailure(problem, upgrade)
        case .closed:
            explainUpgradeFailure("the origin closed the connection during the handshake", upgrade)
        case .done, .bytes:
            disarm()
            upstream.wantRead(false)
            upstream.wantWrite(false)
            record.tlsVersion = tls.negotiatedVersion
            record.cipher = tls.cipherName
            let host = upgrade.destination.host.description
            // R14 in the rules' own words (OpenSSL was configured from the same requirements).
            if let facts = tls.handshakeFacts(host: host),
               let failure = upgrade.decision.requirements.handshakeRules.evaluate(facts).failure {
                return upgradeFailed(reason: failure.reason.rawValue, message: failure.message, rule: failure.rule)
            }
            let verdict = tls.evaluatePeer(host: host, pin: upgrade.decision.pin, transparency: generation.judge.transparency)
            guard !verdict.missingIssuerURLs.isEmpty, let issuers = issuerFetcher else {
                return upgradeJudged(ServerJudgement(verdict))
            }
            // The chain lacks an issuer: judged again with its caIssuers fetch, off the loop.
            let (judge, chain, loop) = (generation.judge, tls.peerChainDER, self.loop)
            let (requirements, pin) = (upgrade.decision.requirements, upgrade.decision.pin)
            nonisolated(unsafe) weak let connection = self
            BlockingPools.probes.submit {
                let judgement = judge.evaluate(chain: chain, host: host, requirements: requirements, pin: pin, issuers: issuers)
                loop.execute { connection?.upgradeJudged(judgement) }
            }
        }
    }

    /// The upgrade's certificate verdict: refused, or the request goes on over the TLS connection.
    private func upgradeJudged(_ judgement: ServerJudgement) {
        guard case .upgrading(let upgrade) = state else { return } // late: a stop closed the connection meanwhile
        record.noteCertificate(judgement)
        if let refusal = judgement.blocking {
            return upgradeFailed(reason: refusal.reason, message: refusal.message, rule: refusal.rule)
        }
        startExchange(upgrade.head, destination: upgrade.destination)
    }

    /// The handshake failed: a probe (off the loop) tells a version or cipher refusal from other
    /// failures, so the 502 names the ATS reason.
    private func explainUpgradeFailure(_ problem: String, _ upgrade: UpgradeState) {
        let secure = upgrade.secure
        upstreamTLS = nil
        upstream?.close()
        upstream = nil
        guard let address = upstreamAddress, let store = generation.judge.store else {
            return upgradeFailed(reason: "upstream-tls", message: "TLS to \(secure.host):\(secure.port) failed: \(problem)")
        }
        let target = ProbeTarget(host: secure.host.description, port: secure.port, addresses: [address.ip.description],
                                 tunnel: probeTunnel)
        let requirements = upgrade.decision.requirements
        let timeout = generation.configuration.timeouts.handshake
        let loop = self.loop
        nonisolated(unsafe) weak let connection = self
        let transparency = generation.judge.transparency
        BlockingPools.probes.submit {
            let result = TLSProbe(store: store, timeout: timeout, transparency: transparency)
                .probe(target, requirements: requirements)
            let reason = result.failure?.blockReason?.rawValue ?? "upstream-tls"
            let message = result.failure?.message ?? "TLS to \(secure.host):\(secure.port) failed: \(problem)"
            let rule = result.rule
            loop.execute { connection?.upgradeFailed(reason: reason, message: message, rule: rule) }
        }
    }

    private func upgradeFailed(reason: String, message: String, status: Int = 502, rule: RuleID? = nil) {
        switch state {
        // startUpgrade runs from connecting, or from parentHandshake once a parent has connected.
        case .connecting, .parentHandshake, .upgrading: break
        default: return // late: the probe's answer came after the timeout, or after a stop closed the connection
        }
        record.rule = rule
        upstreamTLS = nil
        upstream?.close()
        upstream = nil
        enforce(.fail(Reason(rawValue: reason) ?? .upstreamTLS, status: status, message: message))
    }

    /// A probe's way to the origin when the connection goes through a parent proxy.
    var probeTunnel: ProbeTunnel? {
        guard let parent, let address = upstreamAddress else { return nil }
        return ProbeTunnel(proxy: address, authorization: parent.authorization)
    }

    // MARK: upstream I/O, plain or TLS

    func upstreamRead(into buffer: UnsafeMutableRawBufferPointer) -> IOOutcome? {
        guard let upstream else { return nil }
        guard let tls = upstreamTLS else { return try? SystemCall.read(upstream.fd, into: buffer) }
        switch tls.read(into: buffer) {
        case .bytes(let n): return n == 0 ? .wouldBlock : .done(n)
        case .wantRead: return .wouldBlock
        case .wantWrite:
            upstream.wantWrite(true)
            return .wouldBlock
        case .closed: return .endOfFile
        case .failed, .done: return nil
        }
    }

    func upstreamWrite(_ buffer: UnsafeRawBufferPointer) -> IOOutcome? {
        guard let upstream else { return nil }
        guard let tls = upstreamTLS else { return try? SystemCall.write(upstream.fd, buffer) }
        switch tls.write(buffer) {
        case .bytes(let n): return .done(n)
        case .wantRead, .wantWrite: return .wouldBlock
        case .closed, .failed, .done: return nil
        }
    }
}
