import DecisionLog
import EventLoops
import QUICGate

/// The QUIC listener (`--listen-quic`), read on the first loop: every ClientHello becomes a record
/// (`quic-fallback`, with the app's decision for the same destination over TCP); nothing is sent.
extension ProxyServer {
    func startQUIC(on proxyLoop: ProxyLoop) {
        guard let gate = quicGate else { return }
        proxyLoop.listeners += gate.start(on: proxyLoop.loop) { [unowned self] attempt in
            let generation = current.withLock { $0 }
            let configuration = generation.configuration
            var (record, verdict) = attempt.judged(router: generation.router, devices: configuration.devices,
                                                   context: configuration.context, time: wallClock(),
                                                   system: configuration.systemTraffic)
            _ = ProxyConnection.enforce(verdict, on: &record, mode: configuration.mode)
            record.enforced = configuration.mode == .enforce || record.reason?.enforcedInReportMode == true
            proxyLoop.write(record, generation)
        }
    }
}
