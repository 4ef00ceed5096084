import Testing
import TLSWire

@Suite("TLSAlert")
struct TLSAlertTests {
    @Test("the codes RFC 8446 and 5246 give", arguments: [
        (AlertDescription.handshakeFailure, UInt8(40), "handshake_failure"),
        (.badCertificate, 42, "bad_certificate"),
        (.certificateExpired, 45, "certificate_expired"),
        (.certificateUnknown, 46, "certificate_unknown"),
        (.unknownCA, 48, "unknown_ca"),
        (.protocolVersion, 70, "protocol_version"),
        (.insufficientSecurity, 71, "insufficient_security"),
        (.internalError, 80, "internal_error"),
    ])
    func codes(_ description: AlertDescription, _ code: UInt8, _ name: String) {
        #expect(description.rawValue == code)
        #expect(description.name == name)
        #expect(TLSAlert.fatal(description, recordVersion: 0x0303) == [21, 3, 3, 0, 2, 2, code])
    }

    @Test("the record carries the version it is given")
    func recordVersion() {
        #expect(TLSAlert.fatal(.insufficientSecurity, recordVersion: 0x0301) == [0x15, 0x03, 0x01, 0x00, 0x02, 0x02, 0x47])
    }

    @Test("a built alert reads back as that alert, and ends the handshake", arguments: [
        AlertDescription.protocolVersion, .insufficientSecurity, .unknownCA,
    ])
    func roundTrip(_ description: AlertDescription) {
        let result = transcript(TLSAlert.fatal(description, recordVersion: 0x0303))
        #expect(result.alert == TLSAlert(level: .fatal, description: description))
        #expect(result.stoppedAt == .alert)
    }

    @Test("unknown codes still print")
    func unknown() {
        #expect(AlertDescription(rawValue: 200).description == "alert 200")
        #expect(AlertLevel(rawValue: 9).description == "level 9")
        #expect(TLSAlert(level: .warning, description: .closeNotify).summary == "warning close_notify(0)")
    }
}
