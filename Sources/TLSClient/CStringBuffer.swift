extension String {
    /// The text of a NUL-terminated buffer that a C call filled (up to the first NUL).
    init(nulTerminated buffer: [CChar]) {
        self.init(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
