/// `0xC02F`: how a code without a name is shown (cipher suites, versions, extensions).
func hex16(_ value: UInt16) -> String {
    let digits = String(value, radix: 16, uppercase: true)
    return "0x" + String(repeating: "0", count: 4 - digits.count) + digits
}

/// `0x16`.
func hexByte(_ value: UInt8) -> String {
    let digits = String(value, radix: 16, uppercase: true)
    return "0x" + String(repeating: "0", count: 2 - digits.count) + digits
}

/// `0x6B3343CF`.
func hex32(_ value: UInt32) -> String {
    let digits = String(value, radix: 16, uppercase: true)
    return "0x" + String(repeating: "0", count: 8 - digits.count) + digits
}
