import TLSWire

/// Cipher suites as the decision log and HAR files name them (IANA names, or `0xC0FF` for a code the
/// table lacks).
package enum CipherSuiteName {
    private static let codes: [String: UInt16] = {
        var codes: [String: UInt16] = [:]
        for (code, name) in CipherSuite.names { codes[name] = code }
        return codes
    }()

    /// A suite's IANA code from its name as the log writes it.
    package static func code(_ name: String) -> UInt16? {
        if let code = codes[name] { return code }
        if name.hasPrefix("0x"), let value = UInt16(name.dropFirst(2), radix: 16) { return value }
        return nil
    }
}
