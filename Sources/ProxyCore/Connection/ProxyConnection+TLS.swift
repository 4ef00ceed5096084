import ATSPolicy
import DecisionLog
import Dispatch
import EventLoops
import Glibc
import Inspection
import ProxyAnswers
import TLSClient
import TLSWire
import POSIX

/// The executor of a watched TLS handshake (TLSInspection decides; this file reads, writes and
/// applies its steps). A refusal is a TLS fatal alert to the client, both sides closed, and a record.
extension ProxyConnection {
    /// The inspection of one tunnel. A class: a connection holds it only while its handshake is
    /// watched, and carrying the value inline would make every connection (idle tunnels included)
    /// carry its full size.
    final class InspectionBox {
        var inspection: TLSInspection

        init(_ inspection: TLSInspection) {
            self.inspection = inspection
        }
    }

    /// The record of a tunnel that ended before its certificate verdict, waiting for it (logDeferred).
    /// A class, so that every connection holds one reference instead of a second record inline.
    final class DeferredRecord {
        let record: DecisionRecord

        init(_ record: DecisionRecord) {
            self.record = record
        }
    }

    /// The first client bytes were a TLS record: start watching the handshake.
    func inspectTLS(destination: Destination, requirements: Requirements, pin: PinnedDomain?) {
        let configuration = generation.configuration
        let watched = InspectionBox(TLSInspection(.init(destination: destination, requirements: requirements, pin: pin,
                                                          sniMismatch: configuration.inspection.sniMismatch,
                                                          certificateMode: configuration.inspection.certificateMode)))
        enterInspecting(watched)
        arm(after: configuration.timeouts.handshake) { [self] in
            // Whoever owes the next flight is the one who was slow. Late (no longer inspecting): the
            // entry was due in the clock tick that saw the handshake end.
            guard case .inspecting(let watched) = state else { return }
            if watched.inspection.released {
                // Only the client's answer was awaited, and it is slow: relay without it.
                watched.inspection.stopWatchingClient()
                return release(watched)
            }
            let waitingForOrigin = watched.inspection.clientHello != nil && watched.inspection.serverHello == nil
            let timeout = Int(configuration.timeouts.handshake)
            respond(waitingForOrigin
                        ? .fail(.upstreamTimeout, status: 504, message: "the origin did not answer the TLS handshake in \(timeout) s")
                        : .answer(status: 408, .clientTimeout, message: "the TLS handshake did not complete in \(timeout) s"),
                    .cut)
        }
        let first = inbound
        inbound = []
        perform(watched.inspection.receiveFromClient(first), watched)
    }

    func inspectionReadClient() {
        guard case .inspecting(let watched) = state else { return impossible("a watched handshake's client read") }
        let outcome = readClient()
        let bytes = inbound
        inbound = []
        perform(watched.inspection.receiveFromClient(bytes), watched)
        guard case .inspecting = state else { return } // the steps just performed ended or released it
        if case .ended = outcome { return perform(watched.inspection.clientEnded(failed: false), watched) }
        if case .failed = outcome { return perform(watched.inspection.clientEnded(failed: true), watched) }
    }

    func inspectionReadUpstream() {
        guard case .inspecting(let watched) = state, let upstream else {
            return impossible("a watched handshake's origin read")
        }
        var ended = false
        var fresh: [UInt8] = []
        readLoop: while watched.inspection.heldBytes + fresh.count <= TLSInspection.holdLimit {
            switch try? SystemCall.read(upstream.fd, into: loop.scratch) {
            case .done(let n)?: fresh += UnsafeRawBufferPointer(rebasing: loop.scratch[..<n])
            case .wouldBlock?: break readLoop
            case .endOfFile?, nil: ended = true; break readLoop
            }
        }
        let wasJudging = watched.inspection.waitingForJudgement || watched.inspection.released
        perform(watched.inspection.receiveFromOrigin(fresh, ended: ended && !wasJudging), watched)
        guard case .inspecting = state else { return } // the steps just performed ended or released it
        // Above the hold limit, or at the origin's end while a verdict is awaited: stop reading (the
        // relay takes the end over once the tunnel is released).
        if watched.inspection.heldBytes > TLSInspection.holdLimit || ended { upstream.wantRead(false) }
    }

    /// Carries out the inspection's steps in order; an enforced refusal ends the tunnel and the rest
    /// is dropped. Then the cleared bytes are written.
    private func perform(_ steps: [TLSInspection.Step], _ watched: InspectionBox) {
        for step in steps {
            guard case .inspecting = state else { return } // a step before this one ended or released it
            switch step {
            case .note(let text):
                record.note(text)
            case .refuse(let verdict, let alert):
                noteHandshakeFacts(watched.inspection)
                if refuseHandshake(verdict, alert: alert, watched.inspection.alertRecordVersion) { return }
            case .judge(let evidence, let holding):
                noteHandshakeFacts(watched.inspection)
                awaitJudgement(evidence, holding: holding, watched)
            case .serverAlert(let alert):
                record.recordFailure(.serverAlert, message: "the origin refused the TLS handshake with a fatal alert: \(alert.summary)")
            case .release:
                noteHandshakeFacts(watched.inspection)
                // Still watched until the client answers the flight just cleared (its bytes pass
                // meanwhile); otherwise the relay takes over now.
                if !watched.inspection.watchingClient { return release(watched) }
            case .clientAnswered(let answer):
                noteClientAnswer(answer, watched.inspection)
                return release(watched)
            case .ended(let message, let origin):
                if origin {
                    record.recordFailure(.upstreamProtocol, message: message)
                } else {
                    record.message = message
                }
                return finish()
            }
        }
        noteHandshakeFacts(watched.inspection)
        inspectionFlush()
    }

    /// What the handshake showed, for the record.
    private func noteHandshakeFacts(_ inspection: TLSInspection) {
        record.noteHandshake(clientHello: inspection.clientHello, serverHello: inspection.serverHello,
                             group: inspection.keyExchange.group)
    }

    /// The client's answer to the server's flight: a fatal alert, or TLS 1.3's encrypted one, is its
    /// refusal of the server (pinning, trust): the record says so, unless it already has a reason of
    /// its own (a block report mode let through keeps it, with the refusal's fields beside it).
    private func noteClientAnswer(_ answer: ClientAnswerReader.Answer, _ inspection: TLSInspection) {
        let refusal: ClientRefusal
        switch answer {
        case .alert(let alert) where alert.level == .fatal:
            refusal = ClientRefusal(alert: alert.description, pinnedDomain: inspection.policy.pin?.key)
        case .encryptedAlert:
            refusal = ClientRefusal(alert: nil, pinnedDomain: inspection.policy.pin?.key)
        case .alert, .accepted, .unreadable:
            return
        }
        record.clientRefusal = refusal
        if record.loggedReason == nil { record.recordFailure(.clientRefusedCertificate, message: nil) }
        record.prependNote(refusal.message)
    }

    // MARK: judgement

    /// Applies a cached verdict at once; otherwise computes it off the loop. When `holding`, the
    /// server's bytes wait for it; otherwise the tunnel is released now and cut if the verdict fails.
    private func awaitJudgement(_ evidence: TLSInspection.Evidence, holding: Bool, _ watched: InspectionBox) {
        let policy = watched.inspection.policy
        let host = policy.destination.host.description
        let judge = generation.judge
        let issuers = issuerFetcher
        let key: CertificateVerdictCache.Key
        let compute: @Sendable () -> ServerJudgement
        var fetch: CertificateVerdictCache.IssuerFetch?
        // A chain is CPU work; a probe is a handshake of our own that waits on the network.
        let pool: BlockingPool
        switch evidence {
        case .chain(let chain, let scts):
            pool = BlockingPools.certificates
            key = CertificateVerdictCache.Key(host: host, address: nil, requirements: policy.requirements,
                                              pin: policy.pin, chain: chain, scts: scts)
            compute = {
                judge.evaluate(chain: chain, scts: scts, host: host, requirements: policy.requirements, pin: policy.pin)
            }
            // A chain that lacks an issuer is judged again with its caIssuers fetch, on the pool that may wait.
            if let issuers {
                fetch = .init(pool: BlockingPools.probes) {
                    judge.evaluate(chain: chain, scts: scts, host: host, requirements: policy.requirements,
                                   pin: policy.pin, issuers: issuers)
                }
            }
        case .probe(let serverName):
            guard let address = upstreamAddress else { return }
            pool = BlockingPools.probes
            key = CertificateVerdictCache.Key(host: serverName ?? host, address: address,
                                              requirements: policy.requirements, pin: policy.pin, chain: [])
            let timeout = generation.configuration.timeouts.connect
            let port = policy.destination.port
            let tunnel = probeTunnel
            compute = {
                judge.probe(address: address, port: port, tunnel: tunnel, serverName: serverName, host: host,
                            requirements: policy.requirements, pin: policy.pin, timeout: timeout, issuers: issuers)
            }
        }
        let cache = generation.verdicts
        if let cached = cache.lookup(key) {
            return applyJudgement(cached)
        }
        if !holding { perform(watched.inspection.release(), watched) }
        judgementPending = true
        // Held until the verdict (bounded by the probe's timeout), so that a tunnel that ends first
        // still gets its record completed with the certificate's findings.
        cache.compute(key, on: pool, compute: compute, fetchingIssuers: fetch, on: loop) { [self] judgement in
            judgementPending = false
            if let deferred = deferredRecord {
                deferredRecord = nil
                return logDeferred(deferred.record, judgement)
            }
            applyJudgement(judgement)
        }
    }

    /// The tunnel ended before its (non-blocking) verdict: the record goes out now, with it.
    private func logDeferred(_ deferred: DecisionRecord, _ judgement: ServerJudgement) {
        record = deferred
        record.noteCertificate(judgement)
        if let blocking = judgement.blocking {
            record.appendNote("verdict after the tunnel ended: " + blocking.message)
        } else if let note = judgement.note {
            record.note(note)
        }
        started = monotonic() - deferred.durationMilliseconds / 1000 // the tunnel's duration, not the verdict's
        log()
    }

    private func applyJudgement(_ judgement: ServerJudgement) {
        switch state {
        case .inspecting(let watched):
            record.noteCertificate(judgement)
            perform(watched.inspection.apply(judgement), watched)
        case .relaying, .relayingTLS:
            // Released before the verdict (parallel mode): a failing verdict cuts the tunnel.
            record.noteCertificate(judgement)
            if case .refuse(let verdict, _)? = TLSInspection.refusal(judgement) {
                guard enforce(verdict, .cut) else { return }
            }
            if let note = judgement.note { record.note(note) }
        default:
            return // late: the verdict came after the tunnel ended (its record waited: logDeferred) or was cut
        }
    }

    /// caIssuers fetches go where the tunnel went: through its parent proxy, if any; nil when off.
    var issuerFetcher: AIAFetcher? {
        generation.judge.fetcher(through: probeTunnel.map {
            AIAFetcher.Parent(host: $0.proxy.ip.description, port: $0.proxy.port, authorization: $0.authorization)
        })
    }

    // MARK: outcomes

    /// Hands the connection to the splice relay with whatever is still held in user space.
    private func release(_ watched: InspectionBox) {
        disarm()
        let up = watched.inspection.toOrigin
        let down = watched.inspection.toClient
        startRelay(prefix: up, downPrefix: down)
    }

    /// Applies a refusal during the handshake: a fatal alert to the client, both sides closed, the
    /// record. In report mode an ATS block is only recorded and false is returned: the handshake
    /// goes on.
    private func refuseHandshake(_ verdict: Verdict, alert: AlertDescription, _ recordVersion: UInt16) -> Bool {
        !enforce(verdict, .alert(alert, recordVersion: recordVersion))
    }

    /// Writes what the inspection has cleared: client bytes once the ClientHello is checked, server
    /// bytes once released (or a HelloRetryRequest's flight).
    func inspectionFlush() {
        // Also reached from the end of `perform`, whose last step may have ended or released it.
        guard case .inspecting(let watched) = state, let upstream else { return }
        if !watched.inspection.toOrigin.isEmpty {
            let before = watched.inspection.toOrigin.count
            let outcome = upstream.write(&watched.inspection.toOrigin)
            record.bytesUp += before - watched.inspection.toOrigin.count
            if outcome == .failed { return perform([.ended("writing to the origin failed", origin: true)], watched) }
        }
        if !watched.inspection.toClient.isEmpty || clientHasUnsent {
            let before = watched.inspection.toClient.count
            let outcome = writeClient(&watched.inspection.toClient)
            record.bytesDown += before - watched.inspection.toClient.count
            if outcome == .failed { return perform([.ended("writing to the client failed", origin: false)], watched) }
        }
        upstream.wantWrite(!watched.inspection.toOrigin.isEmpty)
        client.wantWrite(!watched.inspection.toClient.isEmpty || clientHasUnsent)
    }
}
