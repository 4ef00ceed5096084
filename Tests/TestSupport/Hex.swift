/// Bytes from a hex string; whitespace is ignored so fixtures can wrap.
public func hexBytes(_ text: String) -> [UInt8] {
    let digits = text.unicodeScalars.filter { !$0.properties.isWhitespace }.map { Character($0) }
    precondition(digits.count % 2 == 0, "odd number of hex digits")
    return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(digits[$0...$0 + 1]), radix: 16)! }
}
