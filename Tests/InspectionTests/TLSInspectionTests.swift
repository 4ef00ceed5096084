import ATSPolicy
import Testing
import TestSupport
import TLSWire
@testable import HTTP1
@testable import Inspection
import ProxyAnswers

/// The watched handshake as a value: real captured handshakes go in, in one piece or byte by byte, and
/// the steps that come out are asserted with no socket anywhere.
@Suite struct TLSInspectionTests {
    typealias Step = TLSInspection.Step

    private func inspection(host: String = "api.example.com", requirements: Requirements = .full,
                            pin: PinnedDomain? = nil, sni: SNIMismatchAction = .block,
                            certificates: CertificateMode = .before) throws -> TLSInspection {
        let destination = try Destination.parse(authority: "\(host):443", scheme: .https, portRequired: true)
        return TLSInspection(.init(destination: destination, requirements: requirements, pin: pin, sniMismatch: sni,
                                   certificateMode: certificates))
    }

    /// A readable summary of steps, for comparing whole sequences.
    private func names(_ steps: [Step]) -> [String] {
        steps.map { step in
            switch step {
            case .note: "note"
            case .refuse(let verdict, let alert):
                switch verdict {
                case .block(let reason, _, let rule): "refuse block \(reason.rawValue) \(alert)\(rule.map { " " + $0.rawValue } ?? "")"
                case .answer(_, let reason, _, _, _), .fail(let reason, _, _, _): "refuse error \(reason.rawValue) \(alert)"
                default: "refuse"
                }
            case .judge(.chain(let chain, _), let holding): "judge chain(\(chain.count)) holding=\(holding)"
            case .judge(.probe(let name), let holding): "judge probe(\(name ?? "-")) holding=\(holding)"
            case .serverAlert(let alert): "server-alert \(alert.summary)"
            case .release: "release"
            case .ended(_, let origin): origin ? "ended origin" : "ended client"
            case .clientAnswered(let answer): "client-answered \(answer)"
            }
        }
    }

    @Test func aTLS13HandshakeIsHeldForItsVerdictThenReleasedWhole() throws {
        let captured = CapturedHandshakes.tls13
        var watched = try inspection()
        #expect(names(watched.receiveFromClient(captured.clientToServer)).isEmpty)
        #expect(watched.clientHello?.serverName == "api.example.com")
        #expect(watched.toOrigin == captured.clientToServer, "the checked ClientHello goes on")
        #expect(names(watched.receiveFromOrigin(captured.serverToClient, ended: false))
                == ["judge probe(api.example.com) holding=true"])
        #expect(watched.toClient.isEmpty, "the server's flight is held")
        #expect(watched.serverHello?.negotiatedVersion == 0x0304)
        #expect(names(watched.apply(ServerJudgement())) == ["release"])
        #expect(watched.toClient == captured.serverToClient)
    }

    /// The first record of captured client bytes (the ClientHello).
    private func firstRecord(_ bytes: [UInt8]) -> [UInt8] {
        Array(bytes.prefix(5 + (Int(bytes[3]) << 8 | Int(bytes[4]))))
    }

    @Test func aTLS12ClientsAlertAfterTheReleasedCertificateIsItsAnswer() throws {
        let captured = CapturedHandshakes.tls12EcdheRSA
        var watched = try inspection()
        _ = watched.receiveFromClient(firstRecord(captured.clientToServer))
        #expect(names(watched.receiveFromOrigin(captured.serverToClient, ended: false)).first?.hasPrefix("judge chain") == true)
        #expect(!watched.watchingClient, "nothing to watch while the flight is held")
        #expect(names(watched.apply(ServerJudgement())) == ["release"])
        #expect(watched.watchingClient, "the certificate reached the client: its answer is awaited")
        let alert = TLSAlert.fatal(.unknownCA, recordVersion: 0x0303)
        let before = watched.toOrigin.count
        #expect(names(watched.receiveFromClient(Array(alert.prefix(3)))).isEmpty)
        #expect(names(watched.receiveFromClient(Array(alert.dropFirst(3))))
                == ["client-answered alert(TLSWire.TLSAlert(level: fatal, description: unknown_ca(48)))"])
        #expect(!watched.watchingClient)
        #expect(Array(watched.toOrigin.dropFirst(before)) == alert, "the alert goes on to the origin")
    }

    @Test func aTLS12ClientThatGoesOnEndsTheWatchAtItsChangeCipherSpec() throws {
        let captured = CapturedHandshakes.tls12EcdheRSA
        var watched = try inspection()
        let hello = firstRecord(captured.clientToServer)
        _ = watched.receiveFromClient(hello)
        _ = watched.receiveFromOrigin(captured.serverToClient, ended: false)
        _ = watched.apply(ServerJudgement())
        #expect(names(watched.receiveFromClient(Array(captured.clientToServer.dropFirst(hello.count))))
                == ["client-answered accepted"])
    }

    @Test func aTLS13ClientsEncryptedAlertIsToldByItsSize() throws {
        let captured = CapturedHandshakes.tls13
        var watched = try inspection()
        _ = watched.receiveFromClient(firstRecord(captured.clientToServer))
        _ = watched.receiveFromOrigin(captured.serverToClient, ended: false)
        #expect(names(watched.apply(ServerJudgement())) == ["release"])
        #expect(watched.watchingClient)
        #expect(names(watched.receiveFromClient([20, 3, 3, 0, 1, 1])).isEmpty, "the compatibility ChangeCipherSpec")
        #expect(names(watched.receiveFromClient([23, 3, 3, 0, 19] + [UInt8](repeating: 7, count: 19)))
                == ["client-answered encryptedAlert"])
    }

    @Test func aFlightWithoutACertificateIsNotWatched() throws {
        // The origin refused the handshake itself: its alert reaches the client, nothing more is awaited.
        let captured = CapturedHandshakes.protocolVersionAlert
        var watched = try inspection()
        _ = watched.receiveFromClient(captured.clientToServer)
        let steps = names(watched.receiveFromOrigin(captured.serverToClient, ended: false))
        #expect(steps.contains("release"), "\(steps)")
        #expect(!watched.watchingClient)
    }

    @Test func byteByByteGivesTheSameStepsAsOnePiece() throws {
        let captured = CapturedHandshakes.tls12EcdheRSA
        var whole = try inspection()
        var steps = whole.receiveFromClient(captured.clientToServer)
        steps += whole.receiveFromOrigin(captured.serverToClient, ended: false)
        var pieces = try inspection()
        var pieceSteps: [Step] = []
        for byte in captured.clientToServer { pieceSteps += pieces.receiveFromClient([byte]) }
        for byte in captured.serverToClient { pieceSteps += pieces.receiveFromOrigin([byte], ended: false) }
        #expect(names(steps) == ["judge chain(1) holding=true"])
        #expect(names(pieceSteps) == names(steps))
        #expect(pieces.toOrigin == whole.toOrigin)
    }

    @Test func nothingReachesTheOriginBeforeTheClientHelloIsWhole() throws {
        let hello = CapturedHandshakes.tls13.clientToServer
        var watched = try inspection()
        _ = watched.receiveFromClient(Array(hello.prefix(20)))
        #expect(watched.toOrigin.isEmpty)
        _ = watched.receiveFromClient(Array(hello.dropFirst(20)))
        #expect(watched.toOrigin == hello)
    }

    @Test(arguments: [(SNIMismatchAction.block, "refuse block sni-mismatch insufficient_security(71)"), (.log, "note")])
    func aServerNameOtherThanTheConnectHost(action: SNIMismatchAction, expected: String) throws {
        var watched = try inspection(host: "other.example", sni: action)
        #expect(names(watched.receiveFromClient(CapturedHandshakes.tls13.clientToServer)) == [expected])
    }

    @Test func anOldVersionIsRefusedWithProtocolVersion() throws {
        let captured = CapturedHandshakes.tls10
        var watched = try inspection()
        _ = watched.receiveFromClient(captured.clientToServer)
        let steps = names(watched.receiveFromOrigin(captured.serverToClient, ended: false))
        #expect(steps.first == "refuse block tls-version protocol_version(70) R14")
        #expect(watched.toClient.isEmpty, "nothing of the refused server flight is cleared")
    }

    @Test func aSuiteWithoutForwardSecrecyIsRefused() throws {
        let captured = CapturedHandshakes.tls12RSA
        var watched = try inspection()
        _ = watched.receiveFromClient(captured.clientToServer)
        let steps = names(watched.receiveFromOrigin(captured.serverToClient, ended: false))
        #expect(steps.first == "refuse block cipher-suite insufficient_security(71) R14")
        // In report mode the refusal is only recorded: the steps after it judge the certificate.
        #expect(steps.dropFirst().first == "judge chain(1) holding=true")
    }

    @Test func verdictsDoNotHoldWhatCannotBeBlockedOrRunInParallel() throws {
        let captured = CapturedHandshakes.tls12EcdheRSA
        let lenient = Requirements(cleartextAllowed: true, minimumTLSVersion: .tls12, forwardSecrecy: true,
                                   certificateChecks: false)
        for var watched in [try inspection(requirements: lenient), try inspection(certificates: .parallel)] {
            _ = watched.receiveFromClient(captured.clientToServer)
            #expect(names(watched.receiveFromOrigin(captured.serverToClient, ended: false))
                    == ["judge chain(1) holding=false"])
        }
        var off = try inspection(certificates: .off)
        _ = off.receiveFromClient(captured.clientToServer)
        #expect(names(off.receiveFromOrigin(captured.serverToClient, ended: false)) == ["release"])
    }

    @Test func aHelloRetryRequestPassesAtOnceAndTheRealServerHelloIsJudged() throws {
        let captured = CapturedHandshakes.tls13HelloRetry
        // The server's first flight is the HelloRetryRequest record and a ChangeCipherSpec record;
        // the real ServerHello comes only after the client's second ClientHello.
        let server = captured.serverToClient
        var split = 5 + Int(server[3]) << 8 + Int(server[4])
        if server[split] == 0x14 { split += 5 + Int(server[split + 3]) << 8 + Int(server[split + 4]) }
        var watched = try inspection()
        _ = watched.receiveFromClient(captured.clientToServer)
        #expect(names(watched.receiveFromOrigin(Array(server[..<split]), ended: false)).isEmpty)
        #expect(watched.toClient == Array(server[..<split]), "the HelloRetryRequest flight goes to the client at once")
        watched.toClient = []
        let steps = names(watched.receiveFromOrigin(Array(server[split...]), ended: false))
        #expect(steps == ["judge probe(api.example.com) holding=true"])
        #expect(watched.toClient.isEmpty, "the real ServerHello's flight is held")
    }

    @Test func anOriginsFatalAlertIsNamedAndPassedOn() throws {
        let captured = CapturedHandshakes.protocolVersionAlert
        var watched = try inspection()
        _ = watched.receiveFromClient(captured.clientToServer)
        let steps = watched.receiveFromOrigin(captured.serverToClient, ended: true)
        #expect(names(steps).first?.hasPrefix("server-alert fatal") == true, "\(names(steps))")
        #expect(names(steps).last == "release")
        #expect(watched.toClient == captured.serverToClient, "the client hears the alert itself")
    }

    @Test func aBlockingVerdictRefusesAndANoteDoesNot() throws {
        var watched = try inspection()
        _ = watched.receiveFromClient(CapturedHandshakes.tls13.clientToServer)
        _ = watched.receiveFromOrigin(CapturedHandshakes.tls13.serverToClient, ended: false)
        var judgement = ServerJudgement()
        judgement.blocking = .init(reason: "certificate-expired", message: "expired", alert: .insufficientSecurity)
        #expect(names(watched.apply(judgement)) == ["refuse block certificate-expired insufficient_security(71)", "release"])
    }

    @Test func bytesThatAreNotTLSAreRefusedAsABadRequest() throws {
        var watched = try inspection()
        let steps = names(watched.receiveFromClient(Array("GET / HTTP/1.1\r\n\r\n".utf8)))
        #expect(steps == ["refuse error bad-request decode_error(50)"])
    }

    /// badssl's 10000-sans: a Certificate message above what the device's TLS stack reads is the
    /// server's failure in its own words, not "not TLS".
    @Test func aCertificateMessageLargerThanTheDeviceReadsIsRefusedAsTheOriginsTLSFailure() throws {
        let captured = CapturedHandshakes.tls12EcdheRSA
        var watched = try inspection()
        _ = watched.receiveFromClient(firstRecord(captured.clientToServer))
        // The captured ServerHello alone, in a record of its own, then a 120,000-byte Certificate message
        // in records of 2^14 bytes, as a server sends it.
        let record = firstRecord(captured.serverToClient)
        let helloLength = Int(record[6]) << 16 | Int(record[7]) << 8 | Int(record[8])
        let hello = Array(record[5..<(9 + helloLength)])
        func records(_ message: [UInt8]) -> [UInt8] {
            stride(from: 0, to: message.count, by: 16_384).flatMap { start -> [UInt8] in
                let part = message[start..<min(start + 16_384, message.count)]
                return [22, 3, 3, UInt8(part.count >> 8), UInt8(part.count & 0xFF)] + part
            }
        }
        let length = 120_000
        let certificate: [UInt8] = [11, UInt8(length >> 16), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF)]
            + [UInt8](repeating: 0, count: length)
        let steps = watched.receiveFromOrigin(records(hello) + records(certificate), ended: false)
        #expect(names(steps) == ["refuse error upstream-tls handshake_failure(40)"])
        guard case .refuse(.fail(_, let status, let message, _), _)? = steps.first else { return }
        #expect(status == 502)
        #expect(message.hasPrefix("the origin's certificate chain is refused: the server's Certificate message of 120000"
            + " bytes exceeds the 102400 bytes"), "\(message)")
        #expect(!message.contains("not TLS"))
    }

    @Test func anOriginThatClosesMidHandshakeEndsIt() throws {
        var watched = try inspection()
        _ = watched.receiveFromClient(CapturedHandshakes.tls13.clientToServer)
        #expect(names(watched.receiveFromOrigin([], ended: true)) == ["ended origin"])
    }
}
