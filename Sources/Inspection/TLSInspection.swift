import ATSPolicy
import DecisionLog
import ProxyAnswers
import TLSWire

/// A CONNECT tunnel's TLS handshake, watched but not terminated, as a value with no sockets: bytes
/// from each side go in, and what to do comes out as steps (refuse with this alert, ask for a
/// certificate verdict, release the tunnel to the relay), in the shape of swift-nio's
/// ProtocolNegotiationHandlerStateMachine. The connection (ProxyConnection+TLS.swift) only executes
/// the steps and writes the bytes the inspection has cleared (`toOrigin`, `toClient`).
///
/// The rules it applies: nothing goes to the origin before the ClientHello's SNI is checked against
/// the CONNECT host; the server's first flight is held until its ServerHello meets R14 and, unless
/// verdicts run in parallel, until the certificate verdict (R15-R17) is known.
package struct TLSInspection {
    /// What the proxy knows about the destination, fixed when the tunnel opened.
    package struct Policy {
        package var destination: Destination
        package var requirements: Requirements
        package var pin: PinnedDomain?
        package var sniMismatch: SNIMismatchAction
        package var certificateMode: CertificateMode

        package init(destination: Destination, requirements: Requirements, pin: PinnedDomain?,
                     sniMismatch: SNIMismatchAction, certificateMode: CertificateMode) {
            self.destination = destination
            self.requirements = requirements
            self.pin = pin
            self.sniMismatch = sniMismatch
            self.certificateMode = certificateMode
        }
    }

    /// The evidence the certificate is judged on.
    package enum Evidence: Equatable {
        /// TLS 1.2 and below: the chain the server sent, in the clear, and the SCTs its ServerHello carried.
        case chain([[UInt8]], scts: [[UInt8]])
        /// TLS 1.3 (the certificate is encrypted) or a resumption: a probe of the same address with
        /// the client's server name.
        case probe(serverName: String?)
    }

    /// What the connection does next, in order; after a refusal it enforces, the rest is dropped
    /// (in report mode an ATS refusal is only recorded and the steps after it run).
    package enum Step {
        /// A finding for the record's message that blocks nothing.
        case note(String)
        /// End the handshake: the verdict for the record, the alert for the client.
        case refuse(Verdict, AlertDescription)
        /// Ask for the certificate verdict; `holding` means the server's bytes wait for it.
        case judge(Evidence, holding: Bool)
        /// The origin refused the handshake with a fatal alert; the client hears it (released).
        case serverAlert(TLSAlert)
        /// The handshake is accepted (or no longer watched): hand the tunnel to the relay, after
        /// writing what is still held.
        case release
        /// One side closed or failed before the handshake completed.
        case ended(String, origin: Bool)
        /// After the release, the client's answer to the server's flight: it went on, or refused
        /// it. The watch is over: hand the tunnel to the relay.
        case clientAnswered(ClientAnswerReader.Answer)
    }

    package static let holdLimit = 256 * 1024

    package let policy: Policy
    private var clientReader = TLSHandshakeReader()
    private var serverReader = TLSHandshakeReader()
    package private(set) var clientHello: ClientHello?
    package private(set) var serverHello: ServerHello?
    /// The group the server's key exchange uses, followed through a HelloRetryRequest and, on TLS
    /// 1.2, to the ServerKeyExchange (read on while a verdict is awaited). Only recorded: it never
    /// changes a step.
    package private(set) var keyExchange = KeyExchangeTracker()
    /// The server reader failed while only the key exchange was being read on.
    private var keyExchangeReaderFailed = false
    /// Client bytes cleared for the origin (after the ClientHello's check), not yet written.
    package var toOrigin: [UInt8] = []
    /// Server bytes cleared for the client (a HelloRetryRequest flight, or everything once released).
    package var toClient: [UInt8] = []
    /// Client bytes read before the ClientHello was whole, held until it is checked.
    private var heldFromClient: [UInt8] = []
    /// Server bytes held until the verdict.
    private var heldFromServer: [UInt8] = []
    package private(set) var waitingForJudgement = false
    package private(set) var released = false
    /// The client's records, read from its first byte: once the server's flight is released, the
    /// first record of the client's that says whether it accepted the server (ClientAnswerReader).
    private var clientAnswer = ClientAnswerReader()
    /// Released, and the client has not answered the server's flight yet: the tunnel stays watched
    /// (its bytes pass at once) until it does, so that a refusal of the certificate is seen.
    package private(set) var watchingClient = false

    package init(_ policy: Policy) {
        self.policy = policy
    }

    /// The record version an alert of ours should carry (the server's, else the client's).
    package var alertRecordVersion: UInt16 {
        serverReader.firstRecordVersion ?? clientReader.firstRecordVersion ?? 0x0303
    }

    /// Server bytes read and not yet passed on: the read side pauses above the hold limit.
    package var heldBytes: Int { heldFromServer.count + toClient.count }

    // MARK: the client's side

    package mutating func receiveFromClient(_ bytes: [UInt8]) -> [Step] {
        guard !bytes.isEmpty else { return [] }
        var answered: [Step] = []
        if clientAnswer.answer == nil, let answer = clientAnswer.feed(bytes), watchingClient {
            watchingClient = false
            answered = [.clientAnswered(answer)]
        }
        if clientHello != nil {
            toOrigin += bytes
            return answered
        }
        heldFromClient += bytes
        let messages: [HandshakeMessage]
        do {
            messages = try clientReader.feed(bytes)
        } catch {
            return [.refuse(.answer(status: 400, .badRequest, message: "not a TLS handshake: \(error)"), .decodeError)]
        }
        guard let first = messages.first else {
            if heldFromClient.count > Self.holdLimit {
                return [.refuse(.answer(status: 400, .badRequest, message: "ClientHello larger than 256 KiB"), .decodeError)]
            }
            return []
        }
        guard first.type == .clientHello, let hello = try? ClientHello(first) else {
            return [.refuse(.answer(status: 400, .badRequest,
                                    message: "the first handshake message is not a valid ClientHello"), .decodeError)]
        }
        clientHello = hello
        toOrigin += heldFromClient
        heldFromClient = []
        guard let problem = Self.sniMismatch(hello.serverName, policy.destination) else { return [] }
        if policy.sniMismatch == .block { return [.refuse(.block(.ats(.sniMismatch), message: problem), .insufficientSecurity)] }
        return [.note(problem)]
    }

    package mutating func clientEnded(failed: Bool) -> [Step] {
        [.ended(failed ? "the client connection failed during the TLS handshake" : "the client closed during the TLS handshake",
                origin: false)]
    }

    /// SNI must name the host the CONNECT named (the decision was made for that host).
    package static func sniMismatch(_ serverName: String?, _ destination: Destination) -> String? {
        guard let serverName else { return nil }
        let sni = serverName.lowercased()
        let named = destination.host.description
        let sniHost = sni.hasSuffix(".") ? String(sni.dropLast()) : sni
        let connectHost = named.hasSuffix(".") ? String(named.dropLast()) : named
        if sniHost == connectHost { return nil }
        return "TLS server name \(serverName) differs from the CONNECT host \(named): the decision was made for "
            + "\(named), so the handshake is refused (set sni-mismatch = log to only log this)"
    }

    // MARK: the origin's side

    package mutating func receiveFromOrigin(_ bytes: [UInt8], ended: Bool) -> [Step] {
        if released {
            toClient += bytes
            return []
        }
        heldFromServer += bytes
        if waitingForJudgement {
            readKeyExchange(bytes)
            return []
        }
        let messages: [HandshakeMessage]
        do {
            messages = try serverReader.feed(bytes)
        } catch let error where error.isOversizedCertificate {
            // TLS, but a chain larger than the device's TLS stack reads: the device fails it too.
            return [.refuse(.fail(.upstreamTLS, status: 502, message: "the origin's certificate chain is refused: \(error)"),
                            .handshakeFailure)]
        } catch {
            return [.refuse(.fail(.upstreamProtocol, status: 502, message: "the origin's answer is not TLS: \(error)"),
                            .handshakeFailure)]
        }
        var steps: [Step] = []
        // Once a step settles this flight, the rest of its messages are only read for the key exchange
        // (a TLS 1.2 ServerKeyExchange follows the Certificate that asked for the verdict).
        var settled = false
        for message in messages {
            if settled {
                keyExchange.observe(message)
            } else if message.type == .serverHello {
                guard let hello = try? ServerHello(message) else {
                    return steps + [.refuse(.fail(.upstreamProtocol, status: 502,
                                                  message: "the origin sent a malformed ServerHello"), .handshakeFailure)]
                }
                keyExchange.observe(hello)
                steps += serverHelloArrived(hello)
                settled = released || waitingForJudgement || steps.contains(where: \.isJudgement)
            } else if message.type == .certificate, let hello = serverHello {
                guard hello.negotiatedVersion < 0x0304 else { continue }
                let chain = (try? CertificateMessage(message, format: .tls12))?.certificates ?? []
                steps += judge(.chain(chain, scts: hello.signedCertificateTimestamps))
                settled = true
            } else if message.type == .serverHelloDone, serverHello != nil {
                // A TLS 1.2 flight without a Certificate (PSK or anonymous suites): probe instead.
                keyExchange.observe(message)
                steps += judge(.probe(serverName: clientHello?.serverName))
                settled = true
            } else {
                keyExchange.observe(message)
            }
        }
        if settled { return steps }
        if serverReader.sawNonHandshakeRecord != nil {
            if let alert = serverReader.alert {
                // The origin refused the handshake itself: the client hears it.
                return steps + [.serverAlert(alert)] + release(watchingClient: false)
            }
            // TLS 1.2 resumption (ChangeCipherSpec before any Certificate): judge the server by a probe.
            if serverHello != nil { return steps + judge(.probe(serverName: clientHello?.serverName)) }
        }
        if ended { steps.append(.ended("the origin closed during the TLS handshake", origin: true)) }
        return steps
    }

    /// Reads on, while a verdict is awaited, until the key exchange is known: bytes that are held
    /// anyway, parsed only for the record. A reader error here stops the reading, nothing else.
    private mutating func readKeyExchange(_ bytes: [UInt8]) {
        guard keyExchange.outcome == nil, !keyExchangeReaderFailed else { return }
        do {
            for message in try serverReader.feed(bytes) { keyExchange.observe(message) }
        } catch {
            keyExchangeReaderFailed = true
        }
    }

    /// R14 on the ServerHello, then what the certificate needs.
    private mutating func serverHelloArrived(_ hello: ServerHello) -> [Step] {
        let version = hello.negotiatedVersion
        // The server reader skips the compatibility ChangeCipherSpec after a HelloRetryRequest by
        // itself; the client reader must be told, or it would stop at the client's.
        if hello.isHelloRetryRequest { clientReader.serverSentHelloRetryRequest() }
        serverHello = hello
        var steps: [Step] = []
        // R14, the same rules the probe, the upgrade and diagnose ask.
        let facts = HandshakeFacts(version: version, cipherSuite: hello.cipherSuite,
                                   extendedMasterSecret: hello.extendedMasterSecret,
                                   host: policy.destination.host.description,
                                   versionName: TLSProtocolVersion.name(for: version),
                                   suiteName: CipherSuite.name(for: hello.cipherSuite))
        if !hello.isHelloRetryRequest, let failure = policy.requirements.handshakeRules.evaluate(facts).failure {
            let alert: AlertDescription = failure.reason == .tlsVersion ? .protocolVersion : .insufficientSecurity
            steps.append(.refuse(.block(Reason(failure.reason), message: failure.message, rule: failure.rule), alert))
        }
        if hello.isHelloRetryRequest {
            // The client needs the HelloRetryRequest to send its second ClientHello: pass the held
            // bytes now; the real ServerHello that follows is judged as usual.
            toClient += heldFromServer
            heldFromServer = []
            return steps
        }
        if policy.certificateMode == .off { return steps + release() }
        if version >= 0x0304 { return steps + judge(.probe(serverName: clientHello?.serverName)) }
        return steps // TLS 1.2 and below: the Certificate message follows in this flight
    }

    /// Asks for the verdict. Nothing can block a host without certificate checks or pins (R15): its
    /// findings are only logged, so its handshake never waits for them; nor does it in parallel mode.
    private mutating func judge(_ evidence: Evidence) -> [Step] {
        let canBlock = policy.requirements.certificateChecks || policy.pin != nil
        let holding = policy.certificateMode != .parallel && canBlock
        waitingForJudgement = holding
        return [.judge(evidence, holding: holding)]
    }

    // MARK: verdicts

    /// The certificate verdict is in (at once from the cache, or later from the pool).
    package mutating func apply(_ judgement: ServerJudgement) -> [Step] {
        waitingForJudgement = false
        var steps: [Step] = []
        if let refusal = Self.refusal(judgement) { steps.append(refusal) }
        if let note = judgement.note { steps.append(.note(note)) }
        if !released { steps += release() }
        return steps
    }

    /// A verdict that blocks, as a refusal.
    package static func refusal(_ judgement: ServerJudgement) -> Step? {
        guard let blocking = judgement.blocking else { return nil }
        return .refuse(.block(Reason(rawValue: blocking.reason) ?? .upstreamTLS, message: blocking.message,
                              rule: blocking.rule), blocking.alert)
    }

    /// Clears every held server byte for the client and stops holding them. Unless told otherwise,
    /// the client's answer to a flight that carries the server's certificate is then watched for
    /// (`watchingClient`).
    package mutating func release(watchingClient watch: Bool = true) -> [Step] {
        released = true
        waitingForJudgement = false
        toClient += heldFromServer
        heldFromServer = []
        if watch, !watchingClient, clientAnswer.answer == nil, let hello = serverHello, sendsCertificate(hello) {
            clientAnswer.arm(version: hello.negotiatedVersion, cipherSuite: hello.cipherSuite)
            watchingClient = true
        }
        return [.release]
    }

    /// Whether the server's flight carries its certificate: not a HelloRetryRequest, not a resumed
    /// session (TLS 1.3: the server took the client's pre-shared key; TLS 1.2: it echoed the
    /// client's session ID, an abbreviated handshake).
    private func sendsCertificate(_ hello: ServerHello) -> Bool {
        if hello.isHelloRetryRequest { return false }
        if hello.negotiatedVersion >= TLSProtocolVersion.tls13 { return !hello.acceptsPreSharedKey }
        return hello.sessionID.isEmpty || hello.sessionID != clientHello?.sessionID
    }

    /// The watch for the client's answer ends without one (the handshake took too long): the tunnel
    /// goes to the relay as it is.
    package mutating func stopWatchingClient() {
        watchingClient = false
    }
}

extension TLSInspection.Step {
    package var isJudgement: Bool { if case .judge = self { true } else { false } }
}
