/// A key-exchange group code point (IANA "TLS Supported Groups" registry, RFC 8446 section 4.2.7). A
/// struct, not an enum, so a group this table does not name still reads, compares and prints.
public struct NamedGroup: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    public static let secp256r1 = NamedGroup(rawValue: 0x0017)
    public static let secp384r1 = NamedGroup(rawValue: 0x0018)
    public static let secp521r1 = NamedGroup(rawValue: 0x0019)
    public static let x25519 = NamedGroup(rawValue: 0x001D)
    public static let x448 = NamedGroup(rawValue: 0x001E)
    public static let ffdhe2048 = NamedGroup(rawValue: 0x0100)
    public static let mlkem768 = NamedGroup(rawValue: 0x0201)
    /// The hybrid iOS 26 and macOS 26 offer in every TLS 1.3 ClientHello (draft-ietf-tls-ecdhe-mlkem).
    public static let x25519MLKEM768 = NamedGroup(rawValue: 0x11EC)
    public static let secp256r1MLKEM768 = NamedGroup(rawValue: 0x11EB)
    public static let secp384r1MLKEM1024 = NamedGroup(rawValue: 0x11ED)
    /// The pre-standard hybrid Chrome 124-130 offered (draft-tls-westerbaan-xyber768d00).
    public static let x25519Kyber768Draft00 = NamedGroup(rawValue: 0x6399)

    /// The registry's name (`x25519`, `X25519MLKEM768`), or `0x1234` for a code it does not list.
    public var name: String { Self.names[rawValue] ?? hex16(rawValue) }

    /// The group `name` names, as `name` spells it (a log's `key_exchange`: `X25519MLKEM768`, `0x1234`);
    /// nil for anything else.
    public init?(name: String) {
        if let code = Self.codes[name] {
            self.init(rawValue: code)
        } else if name.count == 6, name.hasPrefix("0x"), let code = UInt16(name.dropFirst(2), radix: 16),
                  hex16(code) == name {
            self.init(rawValue: code)
        } else {
            return nil
        }
    }

    private static let codes: [String: UInt16] = Dictionary(uniqueKeysWithValues: names.map { ($0.value, $0.key) })

    public var description: String { name }

    /// A hybrid or pure ML-KEM group, the Kyber drafts included: a key exchange a quantum computer
    /// cannot be expected to break, so traffic recorded today stays confidential.
    public var isPostQuantum: Bool {
        switch rawValue {
        case 0x0200...0x0202, 0x11EB...0x11EE, 0x6399, 0x639A, 0xFE30, 0xFE31: true
        default: false
        }
    }

    /// The key_exchange lengths each side sends for this group (RFC 8446 section 4.2.8.2 for the curves,
    /// draft-ietf-tls-ecdhe-mlkem and draft-ietf-tls-mlkem for ML-KEM: the client sends an encapsulation
    /// key, the server a ciphertext); nil for groups whose shares this table does not fix.
    public var keyShareLengths: (client: Int, server: Int)? {
        switch rawValue {
        case 0x0017, 0x001A, 0x001F: (65, 65)
        case 0x0018, 0x001B, 0x0020: (97, 97)
        case 0x0019: (133, 133)
        case 0x001C, 0x0021: (129, 129)
        case 0x001D: (32, 32)
        case 0x001E: (56, 56)
        case 0x0200: (800, 768)
        case 0x0201: (1184, 1088)
        case 0x0202: (1568, 1568)
        case 0x11EB: (1249, 1153)
        case 0x11EC, 0x6399: (1216, 1120)
        case 0x11ED: (1665, 1665)
        default: nil
        }
    }

    /// A GREASE value (RFC 8701: 0x0A0A, 0x1A1A, ... 0xFAFA), sent to keep servers tolerant; never chosen.
    public var isGREASE: Bool { rawValue & 0x0F0F == 0x0A0A && rawValue >> 8 == rawValue & 0xFF }

    /// The registry, by code: every assigned group, the obsolete ones included so an old client's
    /// offer still reads by name.
    public static let names: [UInt16: String] = [
        0x0001: "sect163k1", 0x0002: "sect163r1", 0x0003: "sect163r2", 0x0004: "sect193r1",
        0x0005: "sect193r2", 0x0006: "sect233k1", 0x0007: "sect233r1", 0x0008: "sect239k1",
        0x0009: "sect283k1", 0x000A: "sect283r1", 0x000B: "sect409k1", 0x000C: "sect409r1",
        0x000D: "sect571k1", 0x000E: "sect571r1", 0x000F: "secp160k1", 0x0010: "secp160r1",
        0x0011: "secp160r2", 0x0012: "secp192k1", 0x0013: "secp192r1", 0x0014: "secp224k1",
        0x0015: "secp224r1", 0x0016: "secp256k1", 0x0017: "secp256r1", 0x0018: "secp384r1",
        0x0019: "secp521r1", 0x001A: "brainpoolP256r1", 0x001B: "brainpoolP384r1", 0x001C: "brainpoolP512r1",
        0x001D: "x25519", 0x001E: "x448", 0x001F: "brainpoolP256r1tls13", 0x0020: "brainpoolP384r1tls13",
        0x0021: "brainpoolP512r1tls13", 0x0022: "GC256A", 0x0023: "GC256B", 0x0024: "GC256C",
        0x0025: "GC256D", 0x0026: "GC512A", 0x0027: "GC512B", 0x0028: "GC512C", 0x0029: "curveSM2",
        0x0100: "ffdhe2048", 0x0101: "ffdhe3072", 0x0102: "ffdhe4096", 0x0103: "ffdhe6144", 0x0104: "ffdhe8192",
        0x0200: "MLKEM512", 0x0201: "MLKEM768", 0x0202: "MLKEM1024",
        0x11EB: "SecP256r1MLKEM768", 0x11EC: "X25519MLKEM768", 0x11ED: "SecP384r1MLKEM1024",
        0x11EE: "curveSM2MLKEM768",
        0x6399: "X25519Kyber768Draft00", 0x639A: "SecP256r1Kyber768Draft00",
        // Not IANA's: the code points of the first Kyber experiments (Cloudflare, Open Quantum Safe).
        0xFE30: "X25519Kyber512Draft00", 0xFE31: "X25519Kyber768Draft00Old",
        0xFF01: "arbitrary_explicit_prime_curves", 0xFF02: "arbitrary_explicit_char2_curves",
    ]
}
