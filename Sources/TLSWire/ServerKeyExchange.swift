/// The parameters of a TLS 1.0-1.2 ServerKeyExchange (RFC 8422 section 5.4 for ECDHE, RFC 5246
/// section 7.4.3 for DHE, RFC 4279 and RFC 5489 for the PSK variants): what says which group an
/// (EC)DHE handshake uses, since TLS 1.2 has no key_share. Only the parameters are read; the signature
/// after them differs by version and is not needed.
public struct ServerKeyExchange: Sendable, Equatable {
    /// How the suite agrees on keys, which decides the message's grammar (and whether there is one).
    public enum Method: Sendable, Equatable {
        /// ServerECDHParams, then a signature (none for ECDH_anon).
        case ecdhe
        /// A psk_identity_hint, then ServerECDHParams.
        case ecdhePSK
        /// ServerDHParams (p, g, Ys), then a signature (none for DH_anon).
        case dhe
        /// A psk_identity_hint, then ServerDHParams.
        case dhePSK

        /// The method of a TLS 1.0-1.2 suite; nil for suites without an ephemeral key exchange (RSA,
        /// PSK, static ECDH and DH), for TLS 1.3 suites, and for codes the suite table does not know.
        public init?(cipherSuite: UInt16) {
            guard let name = CipherSuite.names[cipherSuite] else { return nil }
            if name.hasPrefix("TLS_ECDHE_PSK_") { self = .ecdhePSK }
            else if name.hasPrefix("TLS_ECDHE_") || name.hasPrefix("TLS_ECDH_anon_") { self = .ecdhe }
            else if name.hasPrefix("TLS_DHE_PSK_") { self = .dhePSK }
            else if name.hasPrefix("TLS_DHE_") || name.hasPrefix("TLS_DH_anon_") { self = .dhe }
            else { return nil }
        }
    }

    public var method: Method
    /// ECDHE: the named curve, or `arbitrary_explicit_prime_curves` / `arbitrary_explicit_char2_curves`
    /// for a curve sent as parameters. DHE: the RFC 7919 group whose prime the server sent, or nil for
    /// a prime of its own (OpenSSL 3.0's defaults are RFC 3526's MODP primes, which have no group id).
    public var group: NamedGroup?
    /// ECDHE: the length of the server's public point. DHE: the length of its public value Ys.
    public var publicKeyLength: Int
    /// DHE: the bit length of the prime (leading zero bytes not counted); nil for ECDHE.
    public var dhPrimeBits: Int?

    /// Parses a ServerKeyExchange handshake message for a suite of key exchange `method`.
    public init(_ message: HandshakeMessage, method: Method) throws(TLSWireError) {
        guard message.type == .serverKeyExchange else {
            throw .unexpectedMessage(expected: .serverKeyExchange, got: message.type)
        }
        try self.init(body: message.body, method: method)
    }

    /// Parses a ServerKeyExchange body (the handshake message without its 4-byte header).
    public init(body: [UInt8], method: Method) throws(TLSWireError) {
        var cursor = ByteCursor(body, message: "ServerKeyExchange")
        self.method = method
        if method == .ecdhePSK || method == .dhePSK {
            _ = try cursor.vector(lengthBytes: 2, "psk_identity_hint")
        }
        switch method {
        case .ecdhe, .ecdhePSK:
            dhPrimeBits = nil
            let curveType = try cursor.uint8("curve_type")
            switch curveType {
            case 3: // named_curve
                group = NamedGroup(rawValue: try cursor.uint16("namedcurve"))
                publicKeyLength = try cursor.vector(lengthBytes: 1, "ECPoint public", range: 1...255).remaining
            case 1, 2: // explicit_prime, explicit_char2: deprecated by RFC 8422 and refused by every current stack
                group = NamedGroup(rawValue: curveType == 1 ? 0xFF01 : 0xFF02)
                publicKeyLength = 0
            default:
                throw cursor.failure("curve_type \(curveType) is not explicit_prime, explicit_char2 or named_curve")
            }
        case .dhe, .dhePSK:
            let prime = try cursor.vector(lengthBytes: 2, "dh_p", range: 1...0xFFFF).rest()
            _ = try cursor.vector(lengthBytes: 2, "dh_g", range: 1...0xFFFF)
            publicKeyLength = try cursor.vector(lengthBytes: 2, "dh_Ys", range: 1...0xFFFF).remaining
            let significant = prime.drop { $0 == 0 }
            dhPrimeBits = significant.first.map { significant.count * 8 - $0.leadingZeroBitCount } ?? 0
            group = Self.ffdheGroup(prime: significant)
        }
    }

    /// The RFC 7919 group of a prime: each is 2^b - 2^(b-64) + (floor(2^(b-130) e) + X) * 2^64 - 1, so it
    /// starts with 64 one bits followed by e's binary fraction (0xADF85458A2BB4A9A...) and ends with 64
    /// one bits, at one of five sizes. RFC 3526's MODP primes follow pi instead (0xC90FDAA2...). Checking
    /// that shape names the group for a log line without carrying the five primes.
    static func ffdheGroup(prime: ArraySlice<UInt8>) -> NamedGroup? {
        let sizes: [Int: UInt16] = [256: 0x0100, 384: 0x0101, 512: 0x0102, 768: 0x0103, 1024: 0x0104]
        guard let code = sizes[prime.count] else { return nil }
        let eFraction: [UInt8] = [0xAD, 0xF8, 0x54, 0x58, 0xA2, 0xBB, 0x4A, 0x9A]
        let ones = [UInt8](repeating: 0xFF, count: 8)
        guard prime.prefix(8).elementsEqual(ones), prime.dropFirst(8).prefix(8).elementsEqual(eFraction),
              prime.suffix(8).elementsEqual(ones) else { return nil }
        return NamedGroup(rawValue: code)
    }
}
