import Foundation
import Glibc
import Testing
import TestSupport
import TLSClient

/// The TLS listener's certificate and key (`--listen-cert`, `--listen-key`) and its sessions over
/// memory BIOs, with a real `openssl s_client` on the other end.
@Suite(.serialized) struct TLSServerContextTests {
    static func context(_ certificate: String = "good-rsa-chain.pem", key: String = "good-rsa.key") throws -> TLSServerContext {
        try TLSServerContext(certificateFile: try TestPKI.path(certificate), keyFile: try TestPKI.path(key))
    }

    @Test func aChainAndItsKeyLoad() throws {
        let context = try Self.context()
        #expect(context.subject.contains("CN=localhost good-rsa"))
        #expect((context.notAfter ?? .distantPast) > Date())
        // The same file may hold both (a combined PEM): each part is found in it.
        let directory = try TestPKI.directory().appendingPathComponent("combined-\(getpid()).pem").path
        defer { unlink(directory) }
        let combined = try String(contentsOfFile: try TestPKI.path("good-ec.key"), encoding: .utf8)
            + String(contentsOfFile: try TestPKI.path("good-ec-chain.pem"), encoding: .utf8)
        try combined.write(toFile: directory, atomically: true, encoding: .utf8)
        #expect(try TLSServerContext(certificateFile: directory, keyFile: directory).subject.contains("good-ec"))
    }

    /// Each wrong file is named, with what is wrong with it.
    @Test(arguments: [
        ("missing.pem", "good-rsa.key", "certificate", "missing.pem: no such file"),
        (".", "good-rsa.key", "certificate", ": is a directory, not a PEM file"),
        ("good-rsa.key", "good-rsa.key", "certificate", "good-rsa.key: holds no PEM certificate"),
        ("good-rsa-chain.pem", "missing.key", "key", "missing.key: no such file"),
        ("good-rsa-chain.pem", "ca.pem", "key", "ca.pem: holds no PEM private key"),
        ("good-rsa-chain.pem", "good-ec.key", "key", "good-ec.key: is not the private key of the certificate in"),
    ])
    func aWrongFileIsNamed(certificate: String, key: String, part: String, message: String) throws {
        let error = #expect(throws: TLSIdentityError.self) { try Self.context(certificate, key: key) }
        #expect(error?.description.contains(message) == true, "\(error?.description ?? "no error")")
        #expect(error.map { $0.part == .certificate ? "certificate" : "key" } == part)
    }

    @Test func anEncryptedKeyIsRefusedWithoutAPrompt() throws {
        let encrypted = try TestPKI.directory().appendingPathComponent("encrypted-\(getpid()).key").path
        defer { unlink(encrypted) }
        let made = try Shell.run("/usr/bin/openssl", ["pkey", "-in", try TestPKI.path("good-rsa.key"), "-aes256",
                                                      "-passout", "pass:secret", "-out", encrypted])
        #expect(made.status == 0, "\(made.stderr)")
        let error = #expect(throws: TLSIdentityError.self) {
            try TLSServerContext(certificateFile: try TestPKI.path("good-rsa-chain.pem"), keyFile: encrypted)
        }
        #expect(error?.description.contains("encrypted private key") == true, "\(error?.description ?? "")")
    }

    /// The server side driven as the proxy drives it (the test does the socket I/O and hands the
    /// bytes over), against `openssl s_client` checking the chain with the test CA: the handshake,
    /// records both ways (a large answer, past the BIOs' compaction), and close_notify at the end.
    @Test func anOpenSSLClientTalksToASessionOverMemoryBIOs() throws {
        let session = try TLSServerSession(context: try Self.context())
        let listener = try loopbackListener()
        defer { close(listener.fd) }
        let client = Process()
        client.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        client.arguments = ["s_client", "-connect", "127.0.0.1:\(listener.port)", "-servername", "localhost",
                            "-CAfile", try TestPKI.path("ca.pem"), "-verify_return_error", "-quiet"]
        let input = Pipe(), output = Pipe()
        client.standardInput = input
        client.standardOutput = output
        client.standardError = FileHandle.nullDevice
        try client.run()
        defer { if client.isRunning { kill(client.processIdentifier, SIGKILL) } }
        let fd = accept(listener.fd, nil, nil)
        #expect(fd >= 0)
        defer { close(fd) }
        var timeout = timeval(tv_sec: 20, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))

        func send() {
            var bytes: [UInt8] = []
            session.takeOutput(appendingTo: &bytes)
            _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        }
        func receive() throws {
            var buffer = [UInt8](repeating: 0, count: 16384)
            let count = recv(fd, &buffer, buffer.count, 0)
            guard count > 0 else { throw HarnessError("the client closed or was silent") }
            buffer[..<count].withUnsafeBytes { session.receive($0) }
        }

        var result = TLSIOResult.wantRead
        for _ in 0..<20 {
            result = session.handshake()
            send()
            if result != .wantRead { break }
            try receive()
        }
        #expect(result == .done)
        #expect(session.negotiatedVersion == "TLSv1.3")

        input.fileHandleForWriting.write(Data("ping\n".utf8))
        var plaintext: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !plaintext.contains(UInt8(ascii: "\n")) {
            switch buffer.withUnsafeMutableBytes({ session.read(into: $0) }) {
            case .bytes(let count): plaintext += buffer[..<count]
            case .wantRead: try receive()
            case let other: throw HarnessError("read: \(other)")
            }
        }
        #expect(String(decoding: plaintext, as: UTF8.self) == "ping\n")

        // A record at a time (at most 16 KiB each), as ClientTLS.seal does.
        let answer = Array(String(repeating: "x", count: 100_000).utf8) + Array("\npong\n".utf8)
        var sealed = 0
        while sealed < answer.count {
            guard case .bytes(let count) = answer[sealed...].withUnsafeBytes({ session.write($0) }), count > 0 else {
                throw HarnessError("write stopped at \(sealed)")
            }
            sealed += count
        }
        send()
        session.compact()
        session.shutdown()
        send()
        try input.fileHandleForWriting.close()
        let printed = output.fileHandleForReading.readDataToEndOfFile()
        client.waitUntilExit()
        #expect(printed.count == answer.count && printed == Data(answer), "s_client printed \(printed.count) bytes")
    }
}
