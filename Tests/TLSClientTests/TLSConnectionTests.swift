import ATSPolicy
import Foundation
import Glibc
import Testing
import TestSupport
import TLSClient

/// TLSConnection as the proxy's upgrade mode drives it: non-blocking, over a socket the caller owns.
@Suite(.serialized) struct TLSConnectionTests {
    /// A connected non-blocking loopback socket.
    static func connect(port: Int) throws -> Int32 {
        try connectLoopback(port: port, nonBlocking: true)
    }

    /// Repeats `step` until it stops asking to wait, polling the socket as asked; bounded.
    static func drive(_ fd: Int32, _ step: () -> TLSIOResult) throws -> TLSIOResult {
        for _ in 0..<1000 {
            let result = step()
            let events: Int16
            switch result {
            case .wantRead: events = Int16(POLLIN)
            case .wantWrite: events = Int16(POLLOUT)
            default: return result
            }
            var entry = pollfd(fd: fd, events: events, revents: 0)
            guard poll(&entry, 1, 10_000) == 1 else { throw HarnessError("no progress within 10 s") }
        }
        throw HarnessError("no result after 1000 steps")
    }

    @Test func requestAndResponseOverTLS12() throws {
        let server = try OpenSSLServer(["-tls1_2", "-cipher", "ECDHE-RSA-AES256-GCM-SHA384"])
        let fd = try Self.connect(port: server.port)
        defer { close(fd) }
        let store = try CertificateEvaluatorTests.trusting()
        let connection = try TLSConnection(fd: fd, serverName: "localhost", requirements: .full, store: store)
        #expect(try Self.drive(fd) { connection.handshake() } == .done)
        #expect(connection.negotiatedVersion == "TLSv1.2")
        #expect(connection.negotiatedTLSVersion == .tls12)
        #expect(connection.cipherName == "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384")
        #expect(connection.peerChainDER.count == 2)
        #expect(connection.evaluatePeer(host: "localhost", pin: nil).findings == [])

        let request = Array("GET / HTTP/1.0\r\n\r\n".utf8)
        var sent = 0
        while sent < request.count {
            let result = try Self.drive(fd) { request[sent...].withUnsafeBytes { connection.write($0) } }
            guard case .bytes(let n) = result else { Issue.record("write: \(result)"); return }
            sent += n
        }
        var response = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 16384)
        reading: while true {
            let result = try Self.drive(fd) { buffer.withUnsafeMutableBytes { connection.read(into: $0) } }
            switch result {
            case .bytes(let n): response += buffer[..<n]
            case .closed: break reading
            default: Issue.record("read: \(result)"); break reading
            }
        }
        let text = String(decoding: response, as: UTF8.self)
        // s_server -www answers with a status page naming the suite it negotiated.
        #expect(text.hasPrefix("HTTP/1.0 200 ok"))
        #expect(text.contains("ECDHE-RSA-AES256-GCM-SHA384"))
        connection.shutdown()
    }

    @Test func handshakeBelowTheMinimumFails() throws {
        let server = try OpenSSLServer(["-tls1", "-cipher", "ALL:@SECLEVEL=0"])
        let fd = try Self.connect(port: server.port)
        defer { close(fd) }
        let connection = try TLSConnection(fd: fd, serverName: "localhost", requirements: .full,
                                           store: try TrustStore())
        let result = try Self.drive(fd) { connection.handshake() }
        guard case .failed(let text) = result else { Issue.record("expected failure, got \(result)"); return }
        #expect(text.contains("protocol"), "\(text)")
        #expect(connection.negotiatedVersion == nil)
    }

    /// The handshake completes with a certificate ATS rejects: judging it is the caller's step.
    @Test func untrustedCertificateStillHandshakes() throws {
        let server = try OpenSSLServer(leaf: "self-signed", ["-tls1_3"])
        let fd = try Self.connect(port: server.port)
        defer { close(fd) }
        let connection = try TLSConnection(fd: fd, serverName: "localhost", requirements: .full,
                                           store: try CertificateEvaluatorTests.trusting())
        #expect(try Self.drive(fd) { connection.handshake() } == .done)
        #expect(connection.evaluatePeer(host: "localhost", pin: nil).blockingFinding?.reason == .certificateUntrusted)
    }

    @Test func ipLiteralIsNotSentAsServerName() throws {
        let server = try OpenSSLServer()
        let fd = try Self.connect(port: server.port)
        defer { close(fd) }
        let connection = try TLSConnection(fd: fd, serverName: "127.0.0.1", requirements: .full, store: try TrustStore())
        #expect(connection.serverName == nil)
    }
}
