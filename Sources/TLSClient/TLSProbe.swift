import ATSPolicy
import COpenSSL
import Foundation
import Glibc

/// A blocking client handshake that judges a live server by a set of requirements (R13-R17).
///
/// Blocks the calling thread for up to `timeout` to connect and again to handshake: call it from a
/// global queue or a command, never from an event loop.
public struct TLSProbe: Sendable {
    public var store: TrustStore
    /// Seconds allowed for the connect, and again for the handshake.
    public var timeout: Double
    /// R16, when the operator asked for it.
    public var transparency: TransparencyCheck?
    /// Completes a chain that lacks an issuer from its caIssuers URL (`--aia-fetch`); nil leaves it incomplete.
    public var aia: AIAFetcher?

    public init(store: TrustStore, timeout: Double = 10, transparency: TransparencyCheck? = nil, aia: AIAFetcher? = nil) {
        self.store = store
        self.timeout = timeout
        self.transparency = transparency
        self.aia = aia
    }

    /// Which rules judge the handshake.
    enum Judge {
        /// An app's ATS requirements (R14-R17).
        case ats(pin: PinnedDomain?)
        /// Apple's system connections (R18): full ATS plus the extended master secret.
        case system
    }

    /// Judges a server as Apple's system connections do (R18): TLS 1.2 or later, forward secrecy, the
    /// extended master secret on TLS 1.2, and certificates as R15/R15a with no tolerance.
    public func probeSystem(_ target: ProbeTarget, now: Date = Date()) -> ProbeResult {
        run(target, requirements: SystemConnectionRule.requirements, judge: .system, now: now)
    }

    /// Connects to the target's first reachable address and handshakes offering exactly what
    /// `requirements` allow; the peer chain is judged for `target.host` with `pin`.
    ///
    /// When the handshake fails and the requirements restrict anything, a second handshake without
    /// restriction learns what the server does speak, so the failure names it ("speaks at most TLSv1.0").
    public func probe(_ target: ProbeTarget, requirements: Requirements, pin: PinnedDomain? = nil,
                      now: Date = Date()) -> ProbeResult {
        run(target, requirements: requirements, judge: .ats(pin: pin), now: now)
    }

    private func run(_ target: ProbeTarget, requirements: Requirements, judge: Judge, now: Date) -> ProbeResult {
        var result = ProbeResult(target: target, requirements: requirements)
        let addresses: [String]
        if target.addresses.isEmpty {
            switch SocketConnector.resolve(target.host, port: target.port) {
            case .success(let resolved): addresses = resolved
            case .failure(let failure):
                result.failure = failure
                return result
            }
        } else {
            addresses = target.addresses
        }
        var lastFailure = ProbeFailure(code: .unreachable, message: "no address to connect to for \(target.host)")
        for address in addresses {
            switch attempt(address: address, target: target, requirements: requirements, judge: judge, now: now) {
            case .connectFailed(let failure):
                lastFailure = failure
                continue
            case .negotiated(let session):
                result.address = address
                result.session = session
            case .handshakeFailed(let failure):
                result.address = address
                result.failure = explain(failure, address: address, target: target, requirements: requirements,
                                         judge: judge, now: now)
            }
            return result
        }
        result.failure = lastFailure
        return result
    }

    private enum Attempt {
        case connectFailed(ProbeFailure)
        case handshakeFailed(HandshakeFailure)
        case negotiated(NegotiatedSession)
    }

    /// A failed handshake with OpenSSL's reason codes, to tell version from cipher failures.
    private struct HandshakeFailure {
        var failure: ProbeFailure
        var reasons: [Int32]
    }

    private func attempt(address: String, target: ProbeTarget, requirements: Requirements, judge: Judge,
                         now: Date) -> Attempt {
        let fd: Int32
        switch SocketConnector.connect(address: address, port: target.tunnel?.proxy.port ?? target.port, timeout: timeout) {
        case .success(let connected): fd = connected
        case .failure(let failure): return .connectFailed(failure)
        }
        defer { close(fd) }
        if let tunnel = target.tunnel {
            let host = target.host.contains(":") ? "[\(target.host)]" : target.host
            if let failure = tunnel.open(fd, authority: "\(host):\(target.port)", timeout: timeout) {
                return .connectFailed(failure)
            }
        }
        let connection: TLSConnection
        do {
            connection = try TLSConnection(fd: fd, serverName: target.host, requirements: requirements, store: store,
                                           requestSCTs: transparency != nil)
        } catch {
            return .handshakeFailed(HandshakeFailure(failure: ProbeFailure(code: .handshake, message: error.description),
                                                     reasons: []))
        }
        let deadline = ContinuousClock.now + .milliseconds(Int64(timeout * 1000))
        while true {
            let step = connection.handshake()
            let events: Int16
            switch step {
            case .done:
                let facts = connection.handshakeFacts(host: target.host)
                let certificate: CertificateVerdict
                let handshakeFailure: RuleFailure?
                switch judge {
                case .ats(let pin):
                    certificate = connection.evaluatePeer(host: target.host, pin: pin, now: now,
                                                          transparency: transparency, aia: aia)
                    handshakeFailure = facts.flatMap { requirements.handshakeRules.evaluate($0).failure }
                case .system:
                    certificate = connection.evaluatePeer(host: target.host,
                                                          rules: CertificateRules(.system, now: now,
                                                                                  transparency: transparency?.rule),
                                                          transparency: transparency, aia: aia)
                    handshakeFailure = facts.flatMap { SystemConnectionRule().evaluate($0).failure }
                }
                let session = NegotiatedSession(
                    protocolVersion: connection.negotiatedVersion ?? "unknown",
                    tlsVersion: connection.negotiatedTLSVersion,
                    cipher: connection.cipherName ?? "unknown",
                    cipherSuite: connection.cipherSuite,
                    extendedMasterSecret: connection.extendedMasterSecret,
                    peerChainDER: connection.peerChainDER,
                    certificate: certificate,
                    handshakeFailure: handshakeFailure)
                connection.shutdown()
                return .negotiated(session)
            case .wantRead: events = Int16(POLLIN)
            case .wantWrite: events = Int16(POLLOUT)
            case .failed(let text):
                return .handshakeFailed(HandshakeFailure(
                    failure: ProbeFailure(code: .handshake, message: "\(target.host) (\(address)): \(text)"),
                    reasons: connection.failureReasons))
            case .closed, .bytes:
                // A handshake step never reports these; treat them as the server hanging up.
                return .handshakeFailed(HandshakeFailure(
                    failure: ProbeFailure(code: .handshake,
                                          message: "\(target.host) (\(address)) closed the connection during the TLS handshake"),
                    reasons: connection.failureReasons))
            }
            let left = ContinuousClock.now.duration(to: deadline)
            let seconds = Double(left.components.seconds) + Double(left.components.attoseconds) / 1e18
            guard seconds > 0, Poll.wait(fd: fd, events: events, timeout: seconds) == .ready else {
                return .handshakeFailed(HandshakeFailure(
                    failure: ProbeFailure(code: .timeout,
                                          message: "TLS handshake with \(target.host) (\(address)) timed out after \(Poll.seconds(timeout))"),
                    reasons: []))
            }
        }
    }

    /// Turns a failed handshake into tls-version, cipher-suite or a plain handshake failure: a second
    /// handshake offering everything learns what the server speaks, and the handshake rules (R14, or
    /// R18 for system connections) say what is wrong with it, in their words.
    private func explain(_ first: HandshakeFailure, address: String, target: ProbeTarget,
                         requirements: Requirements, judge: Judge, now: Date) -> ProbeFailure {
        if first.failure.code == .timeout { return first.failure }
        let host = target.host
        let restricts = requirements.minimumTLSVersion != nil || requirements.cipherPolicy != .any
        if restricts,
           case .negotiated(var open) = attempt(address: address, target: target, requirements: .none,
                                                judge: .ats(pin: nil), now: now) {
            // The certificate is the same whatever the handshake offered: judge it by the real rules.
            switch judge {
            case .ats(let pin):
                open.certificate = CertificateEvaluator.evaluate(chain: open.peerChainDER, host: host,
                                                                 requirements: requirements, pin: pin, store: store,
                                                                 now: now, aia: aia)
            case .system:
                open.certificate = CertificateEvaluator.evaluate(chain: open.peerChainDER, host: host,
                                                                 rules: CertificateRules(.system, now: now), store: store,
                                                                 aia: aia)
            }
            let facts = open.handshakeFacts(host: host)
            let failure: RuleFailure? = switch judge {
            case .ats: facts.flatMap { requirements.handshakeRules.evaluate($0).failure }
            case .system: facts.flatMap { SystemConnectionRule().evaluate($0).failure }
            }
            open.handshakeFailure = failure
            if let failure, failure.reason == .tlsVersion, let minimum = requirements.minimumTLSVersion {
                return ProbeFailure(code: .tlsVersion,
                                    message: "\(host) speaks at most \(open.protocolVersion); the requirements need"
                                        + " \(minimum.rawValue) or later. Offered every version, the \(failure.message)",
                                    unrestricted: open, rule: failure.rule)
            }
            if let failure, failure.reason == .cipherSuite {
                return ProbeFailure(code: .cipherSuite,
                                    message: "\(host) has no cipher suite in common with the allowed set"
                                        + " (\(CipherSuites.describe(requirements.cipherPolicy))). Offered every suite,"
                                        + " the \(failure.message)",
                                    unrestricted: open, rule: failure.rule)
            }
            // The server speaks something allowed, so the first failure was not about versions or suites.
            return ProbeFailure(code: .handshake, message: first.failure.message, unrestricted: open)
        }
        let rule: RuleID = if case .system = judge { .r18 } else { .r14 }
        let versionReasons = [SSL_R_UNSUPPORTED_PROTOCOL, SSL_R_TLSV1_ALERT_PROTOCOL_VERSION, SSL_R_VERSION_TOO_LOW,
                              SSL_R_WRONG_SSL_VERSION, SSL_R_NO_PROTOCOLS_AVAILABLE, SSL_R_UNSUPPORTED_SSL_VERSION]
        let cipherReasons = [SSL_R_NO_SHARED_CIPHER, SSL_R_SSLV3_ALERT_HANDSHAKE_FAILURE, SSL_R_NO_CIPHERS_AVAILABLE,
                             SSL_R_TLSV1_ALERT_INSUFFICIENT_SECURITY]
        if restricts, first.reasons.contains(where: versionReasons.contains) {
            return ProbeFailure(code: .tlsVersion, message: first.failure.message
                                + " (the requirements need \(requirements.minimumTLSVersion?.rawValue ?? "TLSv1.0") or later)",
                                rule: rule)
        }
        if restricts, first.reasons.contains(where: cipherReasons.contains) {
            return ProbeFailure(code: .cipherSuite, message: first.failure.message
                                + " (ATS needs \(CipherSuites.describe(requirements.cipherPolicy)), \(rule.rawValue))",
                                rule: rule)
        }
        return first.failure
    }
}
