extension StringProtocol {
    /// Byte search. `contains(".")` on a String resolves to Foundation's substring search, which costs
    /// about a microsecond; host handling is on the proxy's hot path and only ever looks for ASCII.
    @inline(__always)
    func containsASCII(_ byte: UInt8) -> Bool { utf8.contains(byte) }
}
