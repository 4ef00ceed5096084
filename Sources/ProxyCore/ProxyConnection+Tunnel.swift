import ATSPolicy
import Glibc

/// CONNECT: the tunnel, its inspected first bytes, and the splice relay.
extension ProxyConnection {
    // MARK: CONNECT

    func connectTunnel(_ head: RequestHead) {
        let destination: Destination
        do {
            destination = try Destination.parse(authority: head.target, scheme: .https, portRequired: true)
        } catch {
            return respond(.answer(status: 400, .badRequest, message: "CONNECT target \(error.description)"))
        }
        let context = self.context.configuration.context ?? LoadContext.infer(userAgent: head.field(.userAgent))
        let decision = self.context.configuration.engine.decide(destination, context: context)
        record.decision = decision
        guard self.context.configuration.connectPorts.contains(destination.port) else {
            return respond(.block(.portNotAllowed,
                                  message: "CONNECT to port \(destination.port) is not allowed (see --connect-port)"))
        }
        openUpstream(destination) { [self] in
            establishTunnel { [self] in
                state = .inspecting
                client.onReadable { [self] in inspectTunnel(destination: destination, context: context) }
                client.wantRead(true)
                arm(after: self.context.configuration.headTimeout) { [self] in
                    record.action = .error
                    record.reason = .clientTimeout
                    record.message = "no bytes from the client after CONNECT"
                    finish()
                }
                if !inbound.isEmpty { inspectTunnel(destination: destination, context: context) }
            }
        }
    }

    /// The first client bytes of a tunnel: a TLS handshake record proceeds; anything else is cleartext
    /// and obeys the cleartext rule (`cleartext-in-tunnel`).
    func inspectTunnel(destination: Destination, context loadContext: LoadContext) {
        guard state == .inspecting else { return }
        if case .ended = readClient(), inbound.isEmpty { return close() }
        guard let first = inbound.first else { return }
        disarm()
        let isTLS = first == 0x16 && (inbound.count < 2 || inbound[1] == 0x03)
        if isTLS, self.context.configuration.tlsInspection, let decision = record.decision {
            return inspectTLS(destination: destination, requirements: decision.requirements, pin: decision.pin)
        }
        if !isTLS {
            var cleartext = destination
            cleartext.scheme = .http
            let decision = self.context.configuration.engine.decide(cleartext, context: loadContext)
            record.decision = decision
            if !decision.requirements.cleartextAllowed {
                let message = "cleartext in a CONNECT tunnel to \(destination.host): "
                    + decision.message.replacing("cleartext HTTP to \(destination.host) is not allowed: ", with: "")
                guard enforce(.block(.cleartextInTunnel, message: message), .cut) else { return }
            }
        }
        startRelay(prefix: inbound)
        inbound = []
    }

    // MARK: relay

    func startRelay(prefix: [UInt8], downPrefix: [UInt8] = []) {
        guard let upstream else { return close() }
        state = .relaying
        let up = Pump(from: client, to: upstream, loop: loop, pending: prefix)
        let down = Pump(from: upstream, to: client, loop: loop, pending: downPrefix)
        pumps = [up, down]
        client.onReadable { up.readable() }
        upstream.onWritable { up.run() }
        upstream.onReadable { down.readable() }
        client.onWritable { down.run() }
        lastActivity = monotonic()
        for pump in pumps {
            pump.onProgress = { [unowned self] in lastActivity = monotonic() }
            pump.onFinish = { [unowned self] in
                if pumps.allSatisfy(\.finished) { finish() }
            }
            pump.onError = { [unowned self] _ in finish() }
        }
        armIdleTimer()
        down.run()
        up.run()
    }

    /// Ends a relay or exchange that has moved no byte for the idle timeout.
    func armIdleTimer() {
        let idle = context.configuration.idleTimeout
        arm(after: max(LoopClock.resolution, idle / 2), repeating: true) { [self] in
            if monotonic() - lastActivity > idle {
                record.message = record.message ?? "idle for \(Int(idle)) s"
                finish()
            }
        }
    }

}
