/// Free text that goes into a profile (names, descriptions, the SSID, user names, passwords).
///
/// XML 1.0 cannot carry most control characters at all, so a plist holding one is not well-formed
/// and the device refuses the whole profile: they are refused here, where the flag can be named.
package enum ProfileText {
    package static func check(_ text: String, allowEmpty: Bool = false) throws(ProfileInputError) {
        guard allowEmpty || !text.isEmpty else { throw ProfileInputError("is empty") }
        if let control = text.unicodeScalars.first(where: isForbidden) {
            throw ProfileInputError("contains the control character U+\(hex(control.value)), which a property list cannot hold")
        }
    }

    /// C0 controls (tab included: no profile field means one), DEL, C1 controls, and the
    /// noncharacters U+FFFE and U+FFFF, which XML excludes.
    private static func isForbidden(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F, 0xFFFE, 0xFFFF: true
        default: false
        }
    }

    private static func hex(_ value: UInt32) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}
