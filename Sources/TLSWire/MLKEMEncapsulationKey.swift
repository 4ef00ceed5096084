/// ML-KEM encapsulation keys of the right shape for a ClientHello that only has to be answered
/// (FIPS 203): the server checks the key (section 7.2's modulus check) and encapsulates to it, and the
/// probe hangs up before anyone would decapsulate. So random content is enough, as long as every
/// coefficient is below q.
public enum MLKEMEncapsulationKey {
    /// The ML-KEM modulus.
    public static let q: UInt16 = 3329
    /// ML-KEM-768: k = 3 polynomials of 256 coefficients, 12 bits each (1152 bytes), then the 32-byte
    /// seed rho.
    public static let mlkem768Length = 3 * 384 + 32

    /// A random well-formed ML-KEM-768 encapsulation key: ByteEncode12 of 768 coefficients below q,
    /// then 32 random bytes of rho.
    public static func random768<Generator: RandomNumberGenerator>(using generator: inout Generator) -> [UInt8] {
        var key: [UInt8] = []
        key.reserveCapacity(mlkem768Length)
        // ByteEncode12 (FIPS 203 algorithm 5) packs two 12-bit coefficients, little-endian, into 3 bytes.
        for _ in 0..<(3 * 256 / 2) {
            let a = UInt16.random(in: 0..<q, using: &generator)
            let b = UInt16.random(in: 0..<q, using: &generator)
            key.append(UInt8(a & 0xFF))
            key.append(UInt8(a >> 8) | UInt8(b & 0x0F) << 4)
            key.append(UInt8(b >> 4))
        }
        for _ in 0..<32 { key.append(UInt8.random(in: 0...255, using: &generator)) }
        return key
    }

    /// The 12-bit coefficients of the polynomial part of an encapsulation key (ByteDecode12); what the
    /// modulus check looks at.
    public static func coefficients(_ key: [UInt8]) -> [UInt16] {
        let encoded = key.count - 32
        guard encoded > 0, encoded % 3 == 0 else { return [] }
        var result: [UInt16] = []
        result.reserveCapacity(encoded / 3 * 2)
        for offset in stride(from: 0, to: encoded, by: 3) {
            result.append(UInt16(key[offset]) | UInt16(key[offset + 1] & 0x0F) << 8)
            result.append(UInt16(key[offset + 1] >> 4) | UInt16(key[offset + 2]) << 4)
        }
        return result
    }
}
