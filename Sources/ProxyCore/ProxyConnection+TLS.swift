import ATSPolicy
import Dispatch
import Glibc
import TLSWire

/// A CONNECT tunnel's TLS handshake, watched but not terminated: the proxy relays the client's
/// ClientHello once its SNI is checked, holds the server's first flight until the ServerHello meets
/// R14 and the certificate meets R15/R17, and only then releases it and hands the tunnel to the
/// splice relay. A refusal is a TLS fatal alert to the client, both sides closed, and a record.
extension ProxyConnection {
    /// What the inspection knows so far. A class: a connection holds it only while its handshake is
    /// watched, and an inline optional struct would make every connection (idle tunnels included)
    /// carry its full size.
    final class TLSInspection {
        let destination: Destination
        let requirements: Requirements
        let pin: PinnedDomain?
        var client = TLSHandshakeReader()
        var server = TLSHandshakeReader()
        var clientHello: ClientHello?
        var serverHello: ServerHello?
        /// Client bytes not yet written to the origin.
        var toUpstream: [UInt8] = []
        /// Server bytes held until the verdict (then written to the client).
        var toClient: [UInt8] = []
        var waitingForJudgement = false
        var released = false

        init(destination: Destination, requirements: Requirements, pin: PinnedDomain?) {
            self.destination = destination
            self.requirements = requirements
            self.pin = pin
        }
    }

    static let inspectionHoldLimit = 256 * 1024

    /// The first client bytes were a TLS record: start watching the handshake.
    func inspectTLS(destination: Destination, requirements: Requirements, pin: PinnedDomain?) {
        inspection = TLSInspection(destination: destination, requirements: requirements, pin: pin)
        client.onReadable { [self] in inspectionReadClient() }
        client.onWritable { [self] in inspectionFlush() }
        upstream?.onReadable { [self] in inspectionReadUpstream() }
        upstream?.onWritable { [self] in inspectionFlush() }
        upstream?.wantRead(true)
        arm(after: context.configuration.handshakeTimeout) { [self] in
            // Whoever owes the next flight is the one who was slow.
            let waitingForOrigin = inspection?.clientHello != nil && inspection?.serverHello == nil
            let timeout = Int(context.configuration.handshakeTimeout)
            enforce(waitingForOrigin
                        ? .fail(.upstreamTimeout, status: 504, message: "the origin did not answer the TLS handshake in \(timeout) s")
                        : .answer(status: 408, .clientTimeout, message: "the TLS handshake did not complete in \(timeout) s"),
                    .cut)
        }
        let first = inbound
        inbound = []
        takeClientBytes(first)
    }

    func inspectionReadClient() {
        guard inspection != nil else { return }
        let outcome = readClient()
        let bytes = inbound
        inbound = []
        takeClientBytes(bytes)
        if case .ended = outcome { return inspectionEnded("the client closed during the TLS handshake") }
        if case .failed = outcome { return inspectionEnded("the client connection failed during the TLS handshake") }
    }

    private func takeClientBytes(_ bytes: [UInt8]) {
        guard let current = inspection, !bytes.isEmpty else { return }
        current.toUpstream += bytes
        if current.clientHello == nil {
            let messages: [HandshakeMessage]
            do {
                messages = try current.client.feed(bytes)
            } catch {
                refuseHandshake(.answer(status: 400, .badRequest, message: "not a TLS handshake: \(error)"), alert: .decodeError)
                return
            }
            if let first = messages.first {
                guard first.type == .clientHello, let hello = try? ClientHello(first) else {
                    refuseHandshake(.answer(status: 400, .badRequest,
                                            message: "the first handshake message is not a valid ClientHello"),
                                    alert: .decodeError)
                    return
                }
                current.clientHello = hello
                record.sni = hello.serverName
                if let problem = sniMismatch(hello.serverName, current.destination) {
                    if context.configuration.sniMismatch == .block {
                        if refuseHandshake(.block(.sniMismatch, message: problem), alert: .insufficientSecurity) { return }
                    } else {
                        record.message = problem
                    }
                }
            } else {
                // Not a whole ClientHello yet: nothing goes to the origin before its SNI is checked.
                if current.toUpstream.count > Self.inspectionHoldLimit {
                    refuseHandshake(.answer(status: 400, .badRequest, message: "ClientHello larger than 256 KiB"),
                                    alert: .decodeError)
                }
                return
            }
        }
        inspectionFlush()
    }

    private func probeKey() -> CertificateVerdictCache.Key? {
        guard let current = inspection, let address = upstreamAddress else { return nil }
        return CertificateVerdictCache.Key(host: current.clientHello?.serverName ?? current.destination.host.description,
                                           address: address, requirements: current.requirements, pin: current.pin,
                                           chain: [])
    }

    /// SNI must name the host the CONNECT named (the decision was made for that host).
    private func sniMismatch(_ serverName: String?, _ destination: Destination) -> String? {
        guard let serverName else { return nil }
        let sni = serverName.lowercased()
        let named = destination.host.description
        let sniHost = sni.hasSuffix(".") ? String(sni.dropLast()) : sni
        let connectHost = named.hasSuffix(".") ? String(named.dropLast()) : named
        if sniHost == connectHost { return nil }
        return "TLS server name \(serverName) differs from the CONNECT host \(named): the decision was made for "
            + "\(named), so the handshake is refused (set sni-mismatch = log to only log this)"
    }

    func inspectionReadUpstream() {
        guard let current = inspection, let upstream else { return }
        var ended = false
        var fresh: [UInt8] = []
        readLoop: while current.toClient.count + fresh.count <= Self.inspectionHoldLimit {
            switch try? SystemCall.read(upstream.fd, into: loop.scratch) {
            case .done(let n)?: fresh += UnsafeRawBufferPointer(rebasing: loop.scratch[..<n])
            case .wouldBlock?: break readLoop
            case .endOfFile?: ended = true; break readLoop
            case nil: ended = true; break readLoop
            }
        }
        current.toClient += fresh
        if current.toClient.count > Self.inspectionHoldLimit { upstream.wantRead(false) }
        if current.released || current.waitingForJudgement {
            if ended { upstream.wantRead(false) }
            return inspectionFlush()
        }
        let messages: [HandshakeMessage]
        do {
            messages = try current.server.feed(fresh)
        } catch {
            refuseHandshake(.fail(.upstreamProtocol, status: 502, message: "the origin's answer is not TLS: \(error)"),
                            alert: .handshakeFailure)
            return
        }
        for message in messages {
            guard inspection != nil else { return }
            if message.type == .serverHello {
                guard let hello = try? ServerHello(message) else {
                    refuseHandshake(.fail(.upstreamProtocol, status: 502, message: "the origin sent a malformed ServerHello"),
                                    alert: .handshakeFailure)
                    return
                }
                if serverHelloArrived(hello) { return }
            } else if message.type == .certificate, inspection?.serverHello != nil {
                guard let hello = inspection?.serverHello, hello.negotiatedVersion < 0x0304 else { continue }
                let chain = (try? CertificateMessage(message, format: .tls12))?.certificates ?? []
                return judge(chain: chain)
            } else if message.type == .serverHelloDone, inspection?.serverHello != nil {
                // A TLS 1.2 flight without a Certificate (PSK or anonymous suites): probe instead.
                return judgeByProbe()
            }
        }
        guard let after = inspection else { return }
        if after.server.sawNonHandshakeRecord != nil, !after.waitingForJudgement, !after.released {
            if let alert = after.server.alert {
                // The origin refused the handshake itself: not an ATS decision, but no allow either.
                // The client hears the alert itself (released); the record names it.
                record.action = .error
                record.reason = .serverAlert
                record.message = "the origin refused the TLS handshake with a fatal alert: \(alert.summary)"
                after.released = true
                return release()
            }
            // TLS 1.2 resumption (ChangeCipherSpec before any Certificate): judge the server by a probe.
            if after.serverHello != nil {
                return judgeByProbe()
            }
        }
        if ended { return inspectionEnded("the origin closed during the TLS handshake") }
    }

    /// R14 on the ServerHello. Returns true when the inspection has moved on (refused, judging, released).
    private func serverHelloArrived(_ hello: ServerHello) -> Bool {
        guard let current = inspection else { return true }
        let version = hello.negotiatedVersion
        record.tlsVersion = TLSProtocolVersion.name(for: version)
        record.cipher = CipherSuite.name(for: hello.cipherSuite)
        // The server reader skips the compatibility ChangeCipherSpec after a HelloRetryRequest by
        // itself; the client reader must be told, or it would stop at the client's.
        if hello.isHelloRetryRequest { current.client.serverSentHelloRetryRequest() }
        current.serverHello = hello
        if let violation = current.requirements.wireViolation(version: version, suite: hello.cipherSuite,
                                                              host: current.destination.host.description,
                                                              versionName: TLSProtocolVersion.name(for: version),
                                                              suiteName: CipherSuite.name(for: hello.cipherSuite)) {
            let alert: AlertDescription = violation.reason == .tlsVersion ? .protocolVersion : .insufficientSecurity
            if refuseHandshake(.block(Reason(violation.reason), message: violation.message), alert: alert) { return true }
        }
        if hello.isHelloRetryRequest {
            // The client needs the HelloRetryRequest to send its second ClientHello: pass the held
            // bytes now; the real ServerHello that follows is judged as usual.
            if let upstreamFlight = inspection?.toClient, !upstreamFlight.isEmpty {
                var bytes = upstreamFlight
                if !write(&bytes, to: client) { inspectionEnded("writing to the client failed"); return true }
                inspectedDown += upstreamFlight.count - bytes.count
                inspection?.toClient = bytes
            }
            return false
        }
        guard context.configuration.certificateMode != .off else {
            release()
            return true
        }
        if version >= 0x0304 {
            judgeByProbe()
            return true
        }
        return false // TLS 1.2 and below: the Certificate message follows in this flight
    }

    // MARK: judgement

    /// TLS 1.2 and below: the chain on the wire.
    private func judge(chain: [[UInt8]]) {
        guard let current = inspection else { return }
        let key = CertificateVerdictCache.Key(host: current.destination.host.description, address: nil,
                                              requirements: current.requirements, pin: current.pin, chain: chain)
        let judgeService = context.judge
        let host = current.destination.host.description
        let requirements = current.requirements
        let pin = current.pin
        awaitJudgement(key) {
            judgeService.evaluate(chain: chain, host: host, requirements: requirements, pin: pin)
        }
    }

    /// TLS 1.3 (the certificate is encrypted) or a resumed session: a probe of the same address with
    /// the client's SNI and the host's requirements, cached.
    private func judgeByProbe() {
        guard let current = inspection, let address = upstreamAddress, let key = probeKey() else { return }
        let host = current.destination.host.description
        let serverName = current.clientHello?.serverName
        let judgeService = context.judge
        let requirements = current.requirements
        let pin = current.pin
        let timeout = context.configuration.connectTimeout
        awaitJudgement(key) {
            judgeService.probe(address: address, serverName: serverName, host: host, requirements: requirements,
                               pin: pin, timeout: timeout)
        }
    }

    /// Applies a cached verdict at once; otherwise computes it off the loop. In `before` mode the
    /// server's bytes wait for it; in `parallel` mode they are released now and the tunnel is cut if
    /// the verdict fails.
    private func awaitJudgement(_ key: CertificateVerdictCache.Key, compute: @escaping @Sendable () -> ServerJudgement) {
        let cache = context.verdicts
        if let cached = cache.lookup(key) {
            return applyJudgement(cached)
        }
        // Nothing can block a host without certificate checks or pins (R15): its findings are only
        // logged, so its handshake never waits for them.
        let canBlock = inspection.map { $0.requirements.certificateChecks || $0.pin != nil } ?? false
        let parallel = context.configuration.certificateMode == .parallel || !canBlock
        if parallel { release() } else { inspection?.waitingForJudgement = true }
        judgementPending = true
        // Held until the verdict (bounded by the probe's timeout), so that a tunnel that ends first
        // still gets its record completed with the certificate's findings.
        cache.compute(key, compute: compute, on: loop) { [self] judgement in
            judgementPending = false
            if let record = deferredRecord.first {
                deferredRecord = []
                return logDeferred(record, judgement)
            }
            applyJudgement(judgement)
        }
    }

    /// The tunnel ended before its (non-blocking) verdict: the record goes out now, with it.
    private func logDeferred(_ deferred: LogRecord, _ judgement: ServerJudgement) {
        record = deferred
        record.certificate = judgement.certificate
        record.toleratedFindings = judgement.tolerated
        if let blocking = judgement.blocking {
            record.message = (record.message.map { $0 + "; " } ?? "") + "verdict after the tunnel ended: " + blocking.message
        } else if let note = judgement.note {
            record.message = record.message ?? note
        }
        started = monotonic() - deferred.durationMilliseconds / 1000 // the tunnel's duration, not the verdict's
        log()
    }

    private func applyJudgement(_ judgement: ServerJudgement) {
        guard state == .inspecting || state == .relaying else { return }
        record.certificate = judgement.certificate
        record.toleratedFindings = judgement.tolerated
        if let blocking = judgement.blocking,
           refuseHandshake(.block(Reason(rawValue: blocking.reason) ?? .upstreamTLS, message: blocking.message),
                           alert: blocking.alert) {
            return
        }
        if let note = judgement.note, record.message == nil { record.message = note }
        if inspection?.released == false { release() }
    }

    // MARK: outcomes

    /// Hands the connection to the splice relay with whatever is still held in user space.
    private func release() {
        guard let current = inspection else { return }
        current.released = true
        current.waitingForJudgement = false
        guard state == .inspecting else { return }
        disarm()
        let up = current.toUpstream
        let down = current.toClient
        inspection = nil
        startRelay(prefix: up, downPrefix: down)
    }

    /// Applies a refusal during the handshake: a fatal alert to the client (mid-relay, after a
    /// parallel verdict, the stream is encrypted and an alert would be noise: just cut), both sides
    /// closed, the record. In report mode an ATS block is only recorded and false is returned: the
    /// handshake goes on.
    @discardableResult
    func refuseHandshake(_ verdict: Verdict, alert: AlertDescription) -> Bool {
        let version = inspection?.server.firstRecordVersion ?? inspection?.client.firstRecordVersion ?? 0x0303
        let delivery: Delivery = state == .inspecting ? .alert(alert, recordVersion: version) : .cut
        let refused = inspection
        inspection = nil
        guard !enforce(verdict, delivery) else {
            inspection = refused
            return false
        }
        return true
    }

    private func inspectionEnded(_ message: String) {
        inspection = nil
        record.message = message
        finish()
    }

    /// Writes what the inspection may pass on: client bytes once the ClientHello is checked, server
    /// bytes once released.
    func inspectionFlush() {
        guard let current = inspection, let upstream else { return }
        if current.clientHello != nil, !current.toUpstream.isEmpty {
            let before = current.toUpstream.count
            let ok = write(&current.toUpstream, to: upstream)
            inspectedUp += before - current.toUpstream.count
            if !ok { return inspectionEnded("writing to the origin failed") }
        }
        if current.released, !current.toClient.isEmpty {
            let before = current.toClient.count
            let ok = write(&current.toClient, to: client)
            inspectedDown += before - current.toClient.count
            if !ok { return inspectionEnded("writing to the client failed") }
        }
        upstream.wantWrite(!current.toUpstream.isEmpty && current.clientHello != nil)
        client.wantWrite(current.released && !current.toClient.isEmpty)
    }

    /// Writes as much as the socket takes; false on an error.
    private func write(_ bytes: inout [UInt8], to channel: Channel) -> Bool {
        while !bytes.isEmpty {
            switch bytes.withUnsafeBytes({ try? SystemCall.write(channel.fd, $0) }) {
            case .done(let n)?: bytes.removeFirst(n)
            case .wouldBlock?: return true
            default: return false
            }
        }
        return true
    }
}
