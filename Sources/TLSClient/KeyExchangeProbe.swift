import ATSPolicy
import Glibc
import POSIX
import TLSWire

/// Asks a server which key-exchange group it picks when offered X25519MLKEM768 the way iOS 26 and
/// macOS 26 offer it, without OpenSSL (3.0 has no ML-KEM): a ClientHello built by TLSWire whose only
/// key share is X25519MLKEM768, with classical groups listed beside it so a server without the hybrid
/// answers with a HelloRetryRequest naming its choice. The ServerHello or HelloRetryRequest (for TLS
/// 1.2, the ServerKeyExchange) settles it, and the probe hangs up: nothing is ever encrypted.
///
/// Blocks the calling thread for up to `timeout` to connect and again to read the answer.
public struct KeyExchangeProbe: Sendable {
    /// Seconds allowed for the connect, and again for the answer.
    public var timeout: Double

    public init(timeout: Double = 10) {
        self.timeout = timeout
    }

    /// The groups offered, in Apple's order: the hybrid first (the only one with a key share), then
    /// the classical groups a current client lists.
    public static let offeredGroups: [NamedGroup] = [.x25519MLKEM768, .x25519, .secp256r1, .secp384r1, .secp521r1]

    /// The most a server may send before its choice is known (a TLS 1.2 certificate chain comes first).
    static let readLimit = 256 * 1024

    /// The ClientHello the probe sends: TLS 1.3 and 1.2, the suites full ATS allows, an X25519MLKEM768
    /// key share of a well-formed ML-KEM-768 encapsulation key (FIPS 203) and a random X25519 share.
    public static func clientHello<Generator: RandomNumberGenerator>(serverName: String?,
                                                                     using generator: inout Generator) -> ClientHelloBuilder {
        func random(_ count: Int) -> [UInt8] { (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) } }
        // draft-ietf-tls-ecdhe-mlkem: the client's X25519MLKEM768 share is the ML-KEM-768 encapsulation
        // key, then the X25519 public key (any 32 bytes are one).
        let share = MLKEMEncapsulationKey.random768(using: &generator) + random(32)
        let suites = R14CipherSuites.all.filter { $0.group == .tls13 || $0.group == .forwardSecrecy }.map(\.code)
        return ClientHelloBuilder(serverName: serverName, cipherSuites: suites,
                                  supportedVersions: [TLSProtocolVersion.tls13, TLSProtocolVersion.tls12],
                                  supportedGroups: offeredGroups, keyShares: [(.x25519MLKEM768, share)],
                                  signatureAlgorithms: ClientHelloBuilder.commonSignatureAlgorithms,
                                  random: random(32), sessionID: random(32))
    }

    /// Connects to the target's first reachable address and reads the server's choice.
    public func probe(_ target: ProbeTarget) -> KeyExchangeProbeResult {
        var result = KeyExchangeProbeResult()
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
        result.failure = ProbeFailure(code: .unreachable, message: "no address to connect to for \(target.host)")
        for address in addresses {
            let fd: Int32
            switch SocketConnector.connect(address: address, port: target.port, timeout: timeout) {
            case .success(let connected): fd = connected
            case .failure(let failure):
                result.failure = failure
                continue
            }
            defer { SystemCall.close(fd) }
            result = ask(fd: fd, target: target)
            result.address = address
            return result
        }
        return result
    }

    private func ask(fd: Int32, target: ProbeTarget) -> KeyExchangeProbeResult {
        var result = KeyExchangeProbeResult()
        let place = "\(target.host) (port \(target.port))"
        let deadline = ContinuousClock.now + .milliseconds(Int64(timeout * 1000))
        var generator = SystemRandomNumberGenerator()
        let hello = Self.clientHello(serverName: ServerNameIndication.name(for: target.host), using: &generator).records
        if let failure = write(hello, fd: fd, deadline: deadline, place: place) {
            result.failure = failure
            return result
        }
        var reader = TLSHandshakeReader()
        var tracker = KeyExchangeTracker()
        var buffer = [UInt8](repeating: 0, count: 16_384)
        var total = 0
        while tracker.outcome == nil && !tracker.sawHelloRetryRequest {
            guard Poll.wait(fd: fd, events: Int16(POLLIN), until: deadline) == .ready else {
                result.failure = ProbeFailure(code: .timeout, message: "\(place) did not answer the ClientHello within \(Poll.seconds(timeout))")
                break
            }
            let outcome = buffer.withUnsafeMutableBytes { bytes in
                Result { () throws(SystemError) in try SystemCall.read(fd, into: bytes) }
            }
            switch outcome {
            case .success(.done(let count)):
                total += count
                do {
                    for message in try reader.feed(Array(buffer[..<count])) { tracker.observe(message) }
                } catch {
                    result.failure = ProbeFailure(code: .handshake, message: "\(place) answered with something that is not TLS: \(error)")
                    return result
                }
            case .success(.wouldBlock):
                continue
            case .success(.endOfFile):
                result.failure = ProbeFailure(code: .handshake, message: "\(place) closed the connection without answering the ClientHello")
            case .failure(let error):
                result.failure = ProbeFailure(code: .handshake, message: "reading from \(place): \(error)")
            }
            if result.failure != nil { break }
            if let alert = reader.alert {
                result.alert = alert
                result.failure = ProbeFailure(code: .handshake, message: "\(place) refused the ClientHello: \(alert.summary)")
                break
            }
            if reader.sawNonHandshakeRecord != nil || total > Self.readLimit { break }
        }
        result.negotiatedVersion = tracker.negotiatedVersion
        result.helloRetryRequest = tracker.sawHelloRetryRequest
        result.group = tracker.group
        if result.failure == nil, let error = tracker.error {
            result.failure = ProbeFailure(code: .handshake, message: "\(place) answered with a key exchange that cannot be read: \(error)")
        } else if result.failure == nil, tracker.group == nil, tracker.outcome == nil {
            result.failure = ProbeFailure(code: .handshake, message: "\(place) did not say which group it chose")
        }
        return result
    }

    private func write(_ bytes: [UInt8], fd: Int32, deadline: ContinuousClock.Instant, place: String) -> ProbeFailure? {
        var sent = 0
        while sent < bytes.count {
            let outcome = bytes[sent...].withUnsafeBytes { chunk in
                Result { () throws(SystemError) in try SystemCall.write(fd, chunk) }
            }
            switch outcome {
            case .success(.done(let count)):
                sent += count
            case .success(.wouldBlock), .success(.endOfFile):
                guard Poll.wait(fd: fd, events: Int16(POLLOUT), until: deadline) == .ready else {
                    return ProbeFailure(code: .timeout, message: "sending the ClientHello to \(place) timed out after \(Poll.seconds(timeout))")
                }
            case .failure(let error):
                return ProbeFailure(code: .handshake, message: "sending the ClientHello to \(place): \(error)")
            }
        }
        return nil
    }
}

/// What a server answered to the post-quantum offer.
public struct KeyExchangeProbeResult: Sendable {
    /// The group whose key share was offered.
    public var offered: NamedGroup = .x25519MLKEM768
    /// The address the probe connected to, if it connected.
    public var address: String?
    /// The version of the server's ServerHello or HelloRetryRequest.
    public var negotiatedVersion: UInt16?
    /// The group the server chose: its key share's, the one its HelloRetryRequest asked for, or its TLS
    /// 1.2 ServerKeyExchange curve. Nil for a TLS 1.2 key exchange without one (RSA).
    public var group: NamedGroup?
    /// The server asked for another key share: it did not take the one offered.
    public var helloRetryRequest = false
    /// The plaintext alert a server refused the hello with.
    public var alert: TLSAlert?
    /// Set when no choice could be read: unreachable, a timeout, an alert, not TLS, a key share or
    /// ServerKeyExchange that cannot be read.
    public var failure: ProbeFailure?

    public init() {}

    /// The server chose a hybrid or ML-KEM group: its traffic resists harvest-now-decrypt-later.
    public var quantumSecure: Bool { group?.isPostQuantum == true }
}
