import ATSPolicy
import DecisionLog
import EventLoops
import Glibc
import HTTP1

/// CONNECT: the decision, the tunnel's first bytes (TLS or cleartext), and the splice relay.
extension ProxyConnection {
    // MARK: CONNECT

    /// `named`: the target as `dispatch` already read it (nil when it did not parse: read again here
    /// for the error's words).
    func connectTunnel(_ head: RequestHead, named: Destination?) {
        let destination: Destination
        if let named {
            destination = named
        } else {
            do {
                destination = try Destination.parse(authority: head.target, scheme: .https, portRequired: true)
            } catch {
                return respond(.answer(status: 400, .badRequest, message: "CONNECT target \(error.description)"))
            }
        }
        let loadContext = generation.configuration.context ?? LoadContext.infer(userAgent: head.field(.userAgent))
        record.decision = policy.decide(destination, context: loadContext)
        guard generation.configuration.connectPorts.contains(destination.port) else {
            return respond(.block(.ats(.portNotAllowed),
                                  message: "CONNECT to port \(destination.port) is not allowed (see --connect-port)"))
        }
        exemptSystemTraffic()
        openUpstream(destination, then: .tunnel(loadContext))
    }

    /// After the 200: the tunnel's first client bytes decide what it is.
    func openTunnel(_ destination: Destination, loadContext: LoadContext) {
        enterAwaitingTunnelBytes(destination, loadContext)
        arm(after: generation.configuration.timeouts.head) { [self] in
            record.recordFailure(.clientTimeout, message: "no bytes from the client after CONNECT")
            finish()
        }
        if !inbound.isEmpty { inspectTunnel(destination: destination, loadContext: loadContext) }
    }

    /// The first client bytes of a tunnel: a TLS handshake record proceeds; anything else is cleartext
    /// and obeys the cleartext rule (`cleartext-in-tunnel`).
    func inspectTunnel(destination: Destination, loadContext: LoadContext) {
        guard case .awaitingTunnelBytes = state else { return impossible("a tunnel's first bytes read") }
        if case .ended = readClient(), inbound.isEmpty {
            // The tunnel was decided and answered 200: it is logged like any other, empty or not
            // (the soak found bursts of CONNECTs answered and never logged).
            record.note("the client closed the tunnel before sending a byte")
            return finish()
        }
        guard let first = inbound.first else { return }
        disarm()
        let isTLS = first == 0x16 && (inbound.count < 2 || inbound[1] == 0x03)
        // The device's own TLS is not watched: no app's ATS applies, and the device judges its servers itself.
        if isTLS, generation.configuration.inspection.enabled, systemTraffic == nil, let decision = record.decision {
            return inspectTLS(destination: destination, requirements: decision.requirements, pin: decision.pin)
        }
        if !isTLS {
            var cleartext = destination
            cleartext.scheme = .http
            let decision = policy.decide(cleartext, context: loadContext)
            record.decision = decision
            if !decision.requirements.cleartextAllowed {
                let message = "cleartext in a CONNECT tunnel to \(destination.host): "
                    + decision.message.replacing("cleartext HTTP to \(destination.host) is not allowed: ", with: "")
                guard enforce(.block(.ats(.cleartextInTunnel), message: message), .cut) else { return }
            }
        }
        let prefix = inbound
        inbound = []
        startRelay(prefix: prefix)
    }

    // MARK: relay

    func startRelay(prefix: [UInt8], downPrefix: [UInt8] = []) {
        guard let upstream else { return close() }
        if let clientTLS {
            return startTLSRelay(clientTLS, to: upstream, prefix: prefix, downPrefix: downPrefix)
        }
        relay(up: Pump(from: client, to: upstream, loop: loop, pending: prefix),
              down: Pump(from: upstream, to: client, loop: loop, pending: downPrefix), lastActivity: clock.now())
    }

    /// Relays both ways (a tunnel of this process, or one an upgrade handed over).
    func relay(up: Pump, down: Pump, lastActivity: Double) {
        enterRelaying(up: up, down: down)
        self.lastActivity = lastActivity
        for pump in [up, down] {
            pump.onProgress = { [unowned self] in self.lastActivity = clock.now() }
            pump.onFinish = { [unowned self] in
                if case .relaying(let up, let down) = state, up.finished, down.finished { finish() }
            }
            pump.onError = { [unowned self] _ in finish() }
        }
        armIdleTimer()
        // During an upgrade a plain tunnel goes to the new process as soon as it relays.
        if handOverIfUpgrading() { return }
        down.run()
        up.run()
    }

    /// The relay of a client that speaks TLS to the proxy (ClientTLSRelay): user space both ways.
    private func startTLSRelay(_ tls: ClientTLS, to upstream: Channel, prefix: [UInt8], downPrefix: [UInt8]) {
        let relay = ClientTLSRelay(tls: tls, client: client, origin: upstream, loop: loop, prefix: prefix,
                                   downPrefix: downPrefix)
        enterRelayingTLS(relay)
        lastActivity = clock.now()
        relay.onProgress = { [unowned self] in lastActivity = clock.now() }
        relay.onFinish = { [unowned self] in
            if case .relayingTLS(let relay) = state, relay.upFinished, relay.downFinished { finish() }
        }
        relay.onError = { [unowned self] in finish() }
        armIdleTimer()
        relay.start()
    }

    /// Ends a relay or exchange that has moved no byte for the idle timeout.
    func armIdleTimer() {
        let idle = generation.configuration.timeouts.idle
        arm(after: max(LoopClock.resolution, idle / 2), repeating: true) { [self] in
            if clock.now() - lastActivity > idle {
                record.note("idle for \(Int(idle)) s")
                finish()
            }
        }
    }
}
