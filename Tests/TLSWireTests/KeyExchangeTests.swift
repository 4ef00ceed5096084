import Testing
import TestSupport
import TLSWire

/// Groups offered and chosen, read from real handshakes (OpenSSL 3.0 and pyOpenSSL on OpenSSL 4,
/// which speaks X25519MLKEM768) and from hellos edited to be wrong.
@Suite("Key exchange groups")
struct KeyExchangeTests {
    typealias C = CapturedHandshakes

    static func clientHello(_ capture: CapturedHandshake) throws -> ClientHello {
        try ClientHello(#require(capture.messages(.clientHello, fromServer: false).first))
    }

    static func serverHellos(_ capture: CapturedHandshake) throws -> [ServerHello] {
        try capture.messages(.serverHello, fromServer: true).map { try ServerHello($0) }
    }

    /// The tracker fed every plaintext message the server sent.
    static func tracked(_ capture: CapturedHandshake) -> KeyExchangeTracker {
        var tracker = KeyExchangeTracker()
        for message in capture.serverTranscript.messages { tracker.observe(message) }
        return tracker
    }

    // MARK: names

    @Test("IANA names; unknown codes as 0xNNNN", arguments: [
        (UInt16(0x001D), "x25519"), (0x001E, "x448"), (0x0017, "secp256r1"), (0x0018, "secp384r1"),
        (0x0019, "secp521r1"), (0x0100, "ffdhe2048"), (0x0104, "ffdhe8192"), (0x001A, "brainpoolP256r1"),
        (0x001F, "brainpoolP256r1tls13"), (0x11EC, "X25519MLKEM768"), (0x11EB, "SecP256r1MLKEM768"),
        (0x11ED, "SecP384r1MLKEM1024"), (0x0200, "MLKEM512"), (0x0201, "MLKEM768"), (0x0202, "MLKEM1024"),
        (0x6399, "X25519Kyber768Draft00"), (0x1234, "0x1234"), (0x0A0A, "0x0A0A"), (0x0003, "sect163r2"),
    ] as [(UInt16, String)])
    func names(_ code: UInt16, _ name: String) {
        #expect(NamedGroup(rawValue: code).name == name)
        #expect(NamedGroup(rawValue: code).description == name)
    }

    @Test("a name reads back as its group: every registry name and 0xNNNN, nothing else")
    func fromName() {
        for (code, name) in NamedGroup.names { #expect(NamedGroup(name: name) == NamedGroup(rawValue: code)) }
        #expect(NamedGroup(name: "0x1234") == NamedGroup(rawValue: 0x1234))
        #expect(NamedGroup(name: "0x11EC") == .x25519MLKEM768, "a listed code in hex reads too")
        for bad in ["", "X25519", "x25519 ", "0x1", "0x12345", "0xzzzz", "0x11ec", "mlkem768"] {
            #expect(NamedGroup(name: bad) == nil, "\(bad)")
        }
    }

    @Test("post-quantum: the hybrids, pure ML-KEM and the Kyber drafts; nothing classical")
    func postQuantum() {
        let quantum: [UInt16] = [0x11EB, 0x11EC, 0x11ED, 0x11EE, 0x0200, 0x0201, 0x0202, 0x6399, 0x639A, 0xFE30, 0xFE31]
        for code in quantum { #expect(NamedGroup(rawValue: code).isPostQuantum, "\(hex(code))") }
        for code in NamedGroup.names.keys where !quantum.contains(code) {
            #expect(!NamedGroup(rawValue: code).isPostQuantum, "\(NamedGroup(rawValue: code))")
        }
        #expect(!NamedGroup(rawValue: 0x1A1A).isPostQuantum)
    }

    @Test("GREASE values (RFC 8701) and nothing else")
    func grease() {
        let greases = (0...15).map { UInt16($0) << 12 | 0x0A00 | UInt16($0) << 4 | 0x0A }
        #expect(greases.first == 0x0A0A && greases.last == 0xFAFA)
        for code in UInt16.min...UInt16.max {
            #expect(NamedGroup(rawValue: code).isGREASE == greases.contains(code))
        }
    }

    // MARK: offers in real ClientHellos

    @Test("pyOpenSSL on OpenSSL 4 offers X25519MLKEM768 first, with a 1216-byte share", arguments: [
        C.pqTLS13, C.pqClassicalServer, C.pqHelloRetryClassical, C.pqClientTLS12,
    ])
    func postQuantumOffer(_ capture: CapturedHandshake) throws {
        let hello = try Self.clientHello(capture)
        #expect(hello.offersPostQuantum)
        #expect(hello.keyExchangeError == nil)
        #expect(hello.supportedGroups.first == .x25519MLKEM768)
        #expect(hello.supportedGroups.contains(.x25519))
        #expect(hello.keyShares.first == KeyShareEntry(group: .x25519MLKEM768, keyExchangeLength: 1216))
    }

    @Test("a client that lists the hybrid but shares only x25519 still offers post-quantum")
    func offeredWithoutShare() throws {
        let hello = try Self.clientHello(C.pqHelloRetry)
        #expect(hello.offersPostQuantum)
        #expect(hello.supportedGroups == [.x25519, .x25519MLKEM768])
        #expect(hello.keyShares == [KeyShareEntry(group: .x25519, keyExchangeLength: 32)])
    }

    @Test("OpenSSL 3.0 and curl offer only classical groups", arguments: [
        C.tls13, C.curl, C.tls13HelloRetry, C.tls12EcdheRSA, C.tls12RSA, C.tls12DHE, C.tls10,
    ])
    func classicalOffer(_ capture: CapturedHandshake) throws {
        let hello = try Self.clientHello(capture)
        #expect(!hello.offersPostQuantum)
        #expect(hello.keyExchangeError == nil)
        #expect(hello.supportedGroups.allSatisfy { !$0.isPostQuantum })
        // OpenSSL leaves supported_groups out when no suite it offers uses a group.
        let ephemeralECDH = capture.name != C.tls12RSA.name && capture.name != C.tls12DHE.name
        #expect(hello.supportedGroups.contains(.x25519) == ephemeralECDH)
    }

    @Test("OpenSSL 3.0's TLS 1.3 hello: one x25519 share of 32 bytes; its TLS 1.2 hello has none")
    func classicalShares() throws {
        #expect(try Self.clientHello(C.tls13).keyShares == [KeyShareEntry(group: .x25519, keyExchangeLength: 32)])
        #expect(try Self.clientHello(C.tls12RSA).keyShares.isEmpty)
    }

    @Test("the second ClientHello after a HelloRetryRequest shares the group the server asked for", arguments: [
        (C.pqHelloRetry, NamedGroup.x25519MLKEM768, 1216), (C.pqHelloRetryClassical, .secp256r1, 65),
        (C.tls13HelloRetry, .secp256r1, 65),
    ] as [(CapturedHandshake, NamedGroup, Int)])
    func secondHelloShare(_ capture: CapturedHandshake, group: NamedGroup, length: Int) throws {
        var reader = TLSHandshakeReader()
        reader.serverSentHelloRetryRequest()
        let hellos = try reader.feed(capture.clientToServer).filter { $0.type == .clientHello }
        #expect(hellos.count == 2)
        let second = try ClientHello(hellos[1])
        #expect(second.keyShares == [KeyShareEntry(group: group, keyExchangeLength: length)])
    }

    // MARK: choices in real ServerHellos

    @Test("the group each server chose, from its ServerHello or HelloRetryRequest", arguments: [
        (C.tls13, [NamedGroup.x25519], [32]),
        (C.curl, [.x25519], [32]),
        (C.pqTLS13, [.x25519MLKEM768], [1120]),
        (C.pqClassicalServer, [.x25519], [32]),
        (C.pqHelloRetry, [.x25519MLKEM768, .x25519MLKEM768], [nil, 1120]),
        (C.pqHelloRetryClassical, [.secp256r1, .secp256r1], [nil, 65]),
        (C.tls13HelloRetry, [.secp256r1, .secp256r1], [nil, 65]),
    ] as [(CapturedHandshake, [NamedGroup], [Int?])])
    func serverChoice(_ capture: CapturedHandshake, groups: [NamedGroup], lengths: [Int?]) throws {
        let hellos = try Self.serverHellos(capture)
        #expect(hellos.map(\.selectedGroup) == groups)
        #expect(hellos.map(\.serverShare?.keyExchangeLength) == lengths)
        #expect(hellos.map(\.isHelloRetryRequest) == (groups.count == 2 ? [true, false] : [false]))
        #expect(hellos.allSatisfy { $0.keyExchangeError == nil })
    }

    @Test("a TLS 1.2 ServerHello names no group", arguments: [C.tls12EcdheRSA, C.tls12RSA, C.tls12DHE, C.pqClientTLS12])
    func tls12ServerHello(_ capture: CapturedHandshake) throws {
        let hello = try #require(try Self.serverHellos(capture).first)
        #expect(hello.selectedGroup == nil && hello.serverShare == nil)
    }

    @Test("the tracker settles each real handshake", arguments: [
        (C.tls13, KeyExchangeTracker.Outcome.group(.x25519), nil as NamedGroup?),
        (C.curl, .group(.x25519), nil),
        (C.pqTLS13, .group(.x25519MLKEM768), nil),
        (C.pqHelloRetry, .group(.x25519MLKEM768), .x25519MLKEM768),
        (C.pqClassicalServer, .group(.x25519), nil),
        (C.pqHelloRetryClassical, .group(.secp256r1), .secp256r1),
        (C.tls13HelloRetry, .group(.secp256r1), .secp256r1),
        (C.tls12EcdheRSA, .group(.x25519), nil),
        (C.tls12Fragmented, .group(.x25519), nil),
        (C.pqClientTLS12, .group(.x25519), nil),
        (C.tls10, .group(.x25519), nil),
        (C.tls12RSA, .noGroup, nil),
        (C.tls12DHE, .noGroup, nil),
    ] as [(CapturedHandshake, KeyExchangeTracker.Outcome, NamedGroup?)])
    func tracker(_ capture: CapturedHandshake, outcome: KeyExchangeTracker.Outcome, retry: NamedGroup?) {
        let tracker = Self.tracked(capture)
        #expect(tracker.outcome == outcome)
        #expect(tracker.helloRetryGroup == retry)
        #expect(tracker.error == nil)
        if case .group(let group) = outcome { #expect(tracker.group == group) } else { #expect(tracker.group == nil) }
    }

    @Test("a handshake the server refused settles nothing")
    func refused() {
        let tracker = Self.tracked(C.protocolVersionAlert)
        #expect(tracker.outcome == nil && tracker.group == nil && tracker.negotiatedVersion == nil)
    }

    @Test("a handshake that ends after the HelloRetryRequest reports the group it asked for")
    func endsAfterRetry() throws {
        var tracker = KeyExchangeTracker()
        tracker.observe(try #require(C.pqHelloRetryClassical.messages(.serverHello, fromServer: true).first))
        #expect(tracker.outcome == nil)
        #expect(tracker.group == .secp256r1)
        #expect(tracker.negotiatedVersion == TLSProtocolVersion.tls13)
    }

    // MARK: TLS 1.2 ServerKeyExchange

    @Test("OpenSSL 3.0's DHE ServerKeyExchange: a 2048-bit MODP prime, no group id")
    func dheModp() throws {
        let message = try #require(C.tls12DHE.messages(.serverKeyExchange, fromServer: true).first)
        let exchange = try ServerKeyExchange(message, method: .dhe)
        #expect(exchange.dhPrimeBits == 2048)
        #expect(exchange.group == nil)
        #expect(exchange.publicKeyLength == 256)
    }

    @Test("ECDHE ServerKeyExchange in real TLS 1.2 and 1.0 flights: x25519, a 32-byte point",
          arguments: [C.tls12EcdheRSA, C.tls10, C.pqClientTLS12])
    func ecdhe(_ capture: CapturedHandshake) throws {
        let message = try #require(capture.messages(.serverKeyExchange, fromServer: true).first)
        let exchange = try ServerKeyExchange(message, method: .ecdhe)
        #expect(exchange.group == .x25519 && exchange.publicKeyLength == 32 && exchange.dhPrimeBits == nil)
    }

    @Test("the suite decides the grammar", arguments: [
        (UInt16(0xC02F), ServerKeyExchange.Method.ecdhe), (0xC014, .ecdhe), (0xC018, .ecdhe),
        (0xC035, .ecdhePSK), (0x009E, .dhe), (0x0034, .dhe), (0x00AA, .dhePSK),
    ] as [(UInt16, ServerKeyExchange.Method)])
    func method(_ suite: UInt16, _ method: ServerKeyExchange.Method) {
        #expect(ServerKeyExchange.Method(cipherSuite: suite) == method)
    }

    @Test("no ServerKeyExchange: RSA, PSK, RSA_PSK, TLS 1.3 and unknown suites",
          arguments: [UInt16(0x002F), 0x009C, 0x008C, 0x00AC, 0x1301, 0x1302, 0xFFFF])
    func noMethod(_ suite: UInt16) {
        #expect(ServerKeyExchange.Method(cipherSuite: suite) == nil)
    }

    /// An RFC 7919 prime of `bytes` bytes in shape: 64 one bits, e's fraction, anything, 64 one bits.
    static func ffdheShaped(_ bytes: Int, fraction: [UInt8] = [0xAD, 0xF8, 0x54, 0x58, 0xA2, 0xBB, 0x4A, 0x9A]) -> [UInt8] {
        [UInt8](repeating: 0xFF, count: 8) + fraction + [UInt8](repeating: 0x5A, count: bytes - 24)
            + [UInt8](repeating: 0xFF, count: 8)
    }

    static func dheBody(prime: [UInt8], hint: [UInt8]? = nil) -> [UInt8] {
        let p = [UInt8(prime.count >> 8), UInt8(prime.count & 0xFF)] + prime
        let hintBytes = hint.map { [UInt8($0.count >> 8), UInt8($0.count & 0xFF)] + $0 } ?? []
        return hintBytes + p + [0, 1, 2] + [0, 3, 1, 2, 3] + [0x04, 0x01, 0, 0]
    }

    @Test("an RFC 7919 prime is named by its size; a MODP-shaped one is not", arguments: [
        (256, "ffdhe2048"), (384, "ffdhe3072"), (512, "ffdhe4096"), (768, "ffdhe6144"), (1024, "ffdhe8192"),
    ])
    func ffdhe(_ bytes: Int, _ name: String) throws {
        let named = try ServerKeyExchange(body: Self.dheBody(prime: Self.ffdheShaped(bytes)), method: .dhe)
        #expect(named.group?.name == name)
        #expect(named.dhPrimeBits == bytes * 8)
        #expect(named.publicKeyLength == 3)
        let pi: [UInt8] = [0xC9, 0x0F, 0xDA, 0xA2, 0x21, 0x68, 0xC2, 0x34]
        #expect(try ServerKeyExchange(body: Self.dheBody(prime: Self.ffdheShaped(bytes, fraction: pi)), method: .dhe).group == nil)
        // A leading zero byte (as a signed integer encoding would add) does not change the size.
        #expect(try ServerKeyExchange(body: Self.dheBody(prime: [0] + Self.ffdheShaped(bytes)), method: .dhe).group?.name == name)
        #expect(try ServerKeyExchange(body: Self.dheBody(prime: Self.ffdheShaped(bytes), hint: [1, 2]), method: .dhePSK).group?.name == name)
        #expect(try ServerKeyExchange(body: Self.dheBody(prime: Self.ffdheShaped(bytes + 8)), method: .dhe).group == nil)
    }

    @Test("ECDHE parameters: named, explicit, PSK-hinted; other curve types are errors")
    func ecdheVariants() throws {
        let named = try ServerKeyExchange(body: [3, 0x00, 0x17, 2, 4, 9, 0x04, 0x03, 0, 0], method: .ecdhe)
        #expect(named.group == .secp256r1 && named.publicKeyLength == 2)
        #expect(try ServerKeyExchange(body: [0, 0, 3, 0x11, 0xEC, 1, 7], method: .ecdhePSK).group == .x25519MLKEM768)
        #expect(try ServerKeyExchange(body: [0, 2, 0x61, 0x62, 3, 0, 0x1D, 1, 7], method: .ecdhePSK).group == .x25519)
        #expect(try ServerKeyExchange(body: [1, 9, 9], method: .ecdhe).group?.name == "arbitrary_explicit_prime_curves")
        #expect(try ServerKeyExchange(body: [2], method: .ecdhe).group?.name == "arbitrary_explicit_char2_curves")
        #expect(throws: TLSWireError.malformed(message: "ServerKeyExchange",
                                               reason: "curve_type 4 is not explicit_prime, explicit_char2 or named_curve")) {
            try ServerKeyExchange(body: [4, 0, 0x1D, 1, 7], method: .ecdhe)
        }
        #expect(throws: TLSWireError.malformed(message: "ServerKeyExchange", reason: "ECPoint public length 0 is outside 1...255")) {
            try ServerKeyExchange(body: [3, 0, 0x1D, 0], method: .ecdhe)
        }
    }

    @Test("a ServerKeyExchange cut before its parameters end is an error, never a trap", arguments: [C.tls12EcdheRSA, C.tls12DHE])
    func truncatedKeyExchange(_ capture: CapturedHandshake) throws {
        let body = try #require(capture.messages(.serverKeyExchange, fromServer: true).first).body
        let method: ServerKeyExchange.Method = capture.name == "tls12DHE" ? .dhe : .ecdhe
        let full = try ServerKeyExchange(body: body, method: method)
        // The parameters come first (ECDHE: type, curve, point; DHE: p, g, Ys); any cut inside them fails.
        var parametersLength = method == .ecdhe ? 4 + full.publicKeyLength : 0
        if method == .dhe {
            for _ in 0..<3 { parametersLength += 2 + (Int(body[parametersLength]) << 8 | Int(body[parametersLength + 1])) }
        }
        for end in 0..<parametersLength {
            #expect(throws: TLSWireError.self, "cut at \(end)") { try ServerKeyExchange(body: Array(body[..<end]), method: method) }
        }
        #expect(try ServerKeyExchange(body: Array(body[..<parametersLength]), method: method) == full)
    }

    @Test("a tracker fed a malformed ServerKeyExchange settles on no group and says why")
    func malformedKeyExchangeInFlight() throws {
        var tracker = KeyExchangeTracker()
        tracker.observe(try #require(C.tls12EcdheRSA.messages(.serverHello, fromServer: true).first))
        #expect(tracker.outcome == nil)
        tracker.observe(HandshakeMessage(type: .serverKeyExchange, body: [3, 0, 0x1D, 200, 1]))
        #expect(tracker.outcome == .noGroup)
        #expect(tracker.error != nil)
        // Settled: a later, valid one changes nothing.
        tracker.observe(try #require(C.tls12EcdheRSA.messages(.serverKeyExchange, fromServer: true).first))
        #expect(tracker.outcome == .noGroup)
    }

    @Test("an ECDHE suite whose server skips the ServerKeyExchange settles on no group")
    func missingKeyExchange() throws {
        var tracker = KeyExchangeTracker()
        tracker.observe(try #require(C.tls12EcdheRSA.messages(.serverHello, fromServer: true).first))
        tracker.observe(HandshakeMessage(type: .serverHelloDone, body: []))
        #expect(tracker.outcome == .noGroup && tracker.error == nil)
    }

    // MARK: malformed and oversized, client side

    static func groupList(_ codes: [UInt16]) -> [UInt8] {
        let bytes = codes.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
        return [UInt8(bytes.count >> 8 & 0xFF), UInt8(bytes.count & 0xFF)] + bytes
    }

    static func shareList(_ shares: [(UInt16, Int)]) -> [UInt8] {
        let bytes = shares.flatMap { group, length in
            [UInt8(group >> 8), UInt8(group & 0xFF), UInt8(length >> 8), UInt8(length & 0xFF)]
                + [UInt8](repeating: 0x42, count: length)
        }
        return [UInt8(bytes.count >> 8 & 0xFF), UInt8(bytes.count & 0xFF)] + bytes
    }

    static let sni = ClientHelloTests.sni([(0, Array("api.example.com".utf8))])

    @Test("malformed group lists and key shares leave the hello valid, name the fault, and read as no offer",
          arguments: [
        ("odd supported_groups", [(UInt16(10), [UInt8](arrayLiteral: 0, 3, 0x11, 0xEC, 0))],
         "supported_groups named_group_list length 3 is odd"),
        ("empty supported_groups", [(10, [0, 0])], "supported_groups named_group_list length 0 is outside 2...65534"),
        ("supported_groups overrunning its extension", [(10, [0, 8, 0x11, 0xEC])],
         "supported_groups named_group_list needs 8 bytes, 2 left"),
        ("bytes after supported_groups", [(10, groupList([0x11EC]) + [7])], "1 byte left over after supported_groups"),
        ("an empty key", [(51, [0, 4, 0x11, 0xEC, 0, 0])],
         "key_share entry 0 key_exchange length 0 is outside 1...65535"),
        ("a key longer than the list", [(51, [0, 6, 0x11, 0xEC, 0x04, 0xC0, 1, 2])],
         "key_share entry 0 key_exchange needs 1216 bytes, 2 left"),
        ("a share cut inside its group", [(51, [0, 1, 0x11])], "key_share entry 0 group needs 2 bytes, 1 left"),
        ("client_shares overrunning its extension", [(51, [0x04, 0xC4, 0x11, 0xEC])],
         "key_share client_shares needs 1220 bytes, 2 left"),
        ("bytes after client_shares", [(51, shareList([(0x001D, 32)]) + [0])], "1 byte left over after key_share"),
    ] as [(String, [(UInt16, [UInt8])], String)])
    func malformedOffer(_ name: String, _ extensions: [(UInt16, [UInt8])], _ reason: String) throws {
        let hello = try ClientHello(body: ClientHelloTests.withExtensions([(0, Self.sni)] + extensions))
        #expect(hello.serverName == "api.example.com", "\(name): the rest of the hello still reads")
        #expect(hello.keyExchangeError == .malformed(message: "ClientHello", reason: reason), "\(name)")
        #expect(hello.supportedGroups.isEmpty && hello.keyShares.isEmpty && !hello.offersPostQuantum, "\(name)")
    }

    @Test("a readable group list still counts when the key shares are broken, and the other way round")
    func halfReadable() throws {
        let brokenShares = try ClientHello(body: ClientHelloTests.withExtensions([
            (10, Self.groupList([0x001D, 0x11EC])), (51, [0, 1, 0x11]),
        ]))
        #expect(brokenShares.offersPostQuantum && brokenShares.supportedGroups == [.x25519, .x25519MLKEM768])
        #expect(brokenShares.keyExchangeError != nil)
        let brokenGroups = try ClientHello(body: ClientHelloTests.withExtensions([
            (10, [0, 3, 0, 0x1D, 0]), (51, Self.shareList([(0x11EC, 1216)])),
        ]))
        #expect(brokenGroups.offersPostQuantum && brokenGroups.keyShares.count == 1)
        #expect(brokenGroups.keyExchangeError == .malformed(message: "ClientHello",
                                                           reason: "supported_groups named_group_list length 3 is odd"))
    }

    @Test("oversized lists: the first 64 groups and 16 shares are kept, a post-quantum one past them still counts")
    func oversizedOffer() throws {
        let groups = [UInt16](repeating: 0x001D, count: 32_000) + [0x11EC]
        let hello = try ClientHello(body: ClientHelloTests.withExtensions([(10, Self.groupList(groups))]))
        #expect(hello.supportedGroups.count == 64)
        #expect(hello.offersPostQuantum)
        #expect(hello.keyExchangeError == nil)

        let shares = try ClientHello(body: ClientHelloTests.withExtensions([
            (51, Self.shareList([(UInt16, Int)](repeating: (0x001D, 32), count: 40) + [(0x6399, 1216)])),
        ]))
        #expect(shares.keyShares.count == 16)
        #expect(shares.offersPostQuantum)
        #expect(shares.supportedGroups.isEmpty)

        let big = try ClientHello(body: ClientHelloTests.withExtensions([(51, Self.shareList([(0x11EC, 60_000)]))]))
        #expect(big.keyShares == [KeyShareEntry(group: .x25519MLKEM768, keyExchangeLength: 60_000)])
    }

    @Test("a hello without the extensions offers nothing and is not malformed")
    func noOffer() throws {
        let hello = try ClientHello(body: ClientHelloTests.withExtensions([(0, Self.sni)]))
        #expect(hello.supportedGroups.isEmpty && hello.keyShares.isEmpty && !hello.offersPostQuantum)
        #expect(hello.keyExchangeError == nil)
    }

    // MARK: malformed, server side

    @Test("malformed server key shares leave the ServerHello valid and name the fault", arguments: [
        ("a ServerHello share without its key", false, [UInt8](arrayLiteral: 0x11, 0xEC),
         "key_share server_share key_exchange length needs 2 bytes, 0 left"),
        ("an empty server key", false, [0, 0x1D, 0, 0], "key_share server_share key_exchange length 0 is outside 1...65535"),
        ("a server key longer than the extension", false, [0, 0x1D, 0, 32, 1], "key_share server_share key_exchange needs 32 bytes, 1 left"),
        ("two server shares", false, [0, 0x1D, 0, 1, 9, 0, 0x17, 0, 1, 9], "5 bytes left over after key_share"),
        ("a HelloRetryRequest with a whole share", true, [0, 0x1D, 0, 1, 9], "3 bytes left over after key_share"),
        ("a HelloRetryRequest cut in its group", true, [0x11], "key_share selected_group needs 2 bytes, 1 left"),
    ] as [(String, Bool, [UInt8], String)])
    func malformedChoice(_ name: String, _ retry: Bool, _ data: [UInt8], _ reason: String) throws {
        var body = ServerHelloTests.body(suite: 0x1301, extensions: [(43, [3, 4]), (51, data)])
        if retry { body.replaceSubrange(2..<34, with: ServerHello.helloRetryRequestRandom) }
        let hello = try ServerHello(body: body)
        #expect(hello.negotiatedVersion == TLSProtocolVersion.tls13, "\(name)")
        #expect(hello.isHelloRetryRequest == retry)
        #expect(hello.selectedGroup == nil && hello.serverShare == nil, "\(name)")
        #expect(hello.keyExchangeError == .malformed(message: "ServerHello", reason: reason), "\(name)")
        var tracker = KeyExchangeTracker()
        tracker.observe(hello)
        #expect(tracker.group == nil && tracker.error != nil, "\(name)")
    }

    @Test("a server share of the wrong size for its group is no key exchange over it")
    func wrongSizeChoice() throws {
        for (group, length) in [(NamedGroup.x25519MLKEM768, 1216), (.x25519, 33), (.secp256r1, 32)] {
            let hello = try ServerHello(body: ServerHelloTests.body(suite: 0x1301, extensions: [
                (43, [3, 4]), (51, [UInt8(group.rawValue >> 8), UInt8(group.rawValue & 0xFF), UInt8(length >> 8),
                                    UInt8(length & 0xFF)] + [UInt8](repeating: 4, count: length)),
            ]))
            #expect(hello.selectedGroup == group, "the hello itself reads")
            var tracker = KeyExchangeTracker()
            tracker.observe(hello)
            #expect(tracker.outcome == .noGroup && tracker.group == nil, "\(group)")
            #expect(tracker.error == .malformed(message: "ServerHello", reason: "key_share server_share for \(group) has "
                                               + "\(length) bytes, not \(group.keyShareLengths!.server)"))
        }
        // An unlisted group is taken at its word.
        var tracker = KeyExchangeTracker()
        tracker.observe(try ServerHello(body: ServerHelloTests.body(suite: 0x1301, extensions: [(43, [3, 4]), (51, [0x12, 0x34, 0, 1, 9])])))
        #expect(tracker.group == NamedGroup(rawValue: 0x1234) && tracker.error == nil)
    }

    @Test("the share lengths table matches what real OpenSSL 4 and 3.0 peers sent")
    func shareLengths() throws {
        for capture in [C.pqTLS13, C.pqClassicalServer, C.tls13, C.tls13HelloRetry, C.pqHelloRetryClassical] {
            var reader = TLSHandshakeReader()
            reader.serverSentHelloRetryRequest()
            for message in try reader.feed(capture.clientToServer) where message.type == .clientHello {
                for share in try ClientHello(message).keyShares {
                    #expect(share.group.keyShareLengths?.client == share.keyExchangeLength, "\(capture) \(share)")
                }
            }
            for hello in try Self.serverHellos(capture) {
                if let share = hello.serverShare { #expect(share.group.keyShareLengths?.server == share.keyExchangeLength) }
            }
        }
    }

    @Test("an oversized server share reads as its length")
    func oversizedChoice() throws {
        // As long as the 16-bit extensions block allows.
        let key = [UInt8](repeating: 1, count: 65_000)
        let hello = try ServerHello(body: ServerHelloTests.body(suite: 0x1301, extensions: [
            (43, [3, 4]), (51, [0x11, 0xEC, UInt8(key.count >> 8), UInt8(key.count & 0xFF)] + key),
        ]))
        #expect(hello.serverShare == KeyShareEntry(group: .x25519MLKEM768, keyExchangeLength: 65_000))
    }

    // MARK: the probe's ClientHello

    static func probeHello(serverName: String? = "pq.test", seed: UInt64 = 7) -> ClientHelloBuilder {
        var generator = SeededGenerator(seed: seed)
        let key = MLKEMEncapsulationKey.random768(using: &generator)
            + (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        return ClientHelloBuilder(serverName: serverName, cipherSuites: [0x1301, 0x1302, 0xC02F],
                                  supportedVersions: [0x0304, 0x0303],
                                  supportedGroups: [.x25519MLKEM768, .x25519, .secp256r1],
                                  keyShares: [(.x25519MLKEM768, key)],
                                  signatureAlgorithms: ClientHelloBuilder.commonSignatureAlgorithms,
                                  random: [UInt8](repeating: 9, count: 32), sessionID: [UInt8](repeating: 8, count: 32))
    }

    @Test("a built ClientHello reads back as written, through the record reader")
    func builtHello() throws {
        var builder = Self.probeHello()
        builder.alpnProtocols = ["h2"]
        let messages = try TLSHandshakeReader().feedAll(builder.records)
        #expect(messages.map(\.type) == [.clientHello])
        let hello = try ClientHello(messages[0])
        #expect(hello.serverName == "pq.test")
        #expect(hello.supportedVersions == [0x0304, 0x0303])
        #expect(hello.cipherSuites == [0x1301, 0x1302, 0xC02F])
        #expect(hello.supportedGroups == [.x25519MLKEM768, .x25519, .secp256r1])
        #expect(hello.keyShares == [KeyShareEntry(group: .x25519MLKEM768, keyExchangeLength: 1216)])
        #expect(hello.offersPostQuantum)
        #expect(hello.alpnProtocols == ["h2"])
        #expect(hello.sessionID.count == 32 && hello.random == [UInt8](repeating: 9, count: 32))
        #expect(hello.keyExchangeError == nil)
        #expect(TLSHandshakeReader.looksLikeTLS(firstBytes: builder.records))
        // Without a name (an IP address), no server_name.
        let bare = try ClientHello(TLSHandshakeReader().feedAll(Self.probeHello(serverName: nil).records)[0])
        #expect(bare.serverName == nil && !bare.extensionTypes.contains(TLSExtensionType.serverName))
    }

    @Test("a hello longer than one record is split into records of 2^14 bytes")
    func builtHelloRecords() throws {
        var builder = Self.probeHello()
        builder.keyShares += [(NamedGroup(rawValue: 0x0202), [UInt8](repeating: 3, count: 20_000))]
        let records = builder.records
        #expect(records[3] == 0x40 && records[4] == 0x00, "the first record carries 16384 bytes")
        let hello = try ClientHello(TLSHandshakeReader().feedAll(records)[0])
        #expect(hello.keyShares.map(\.keyExchangeLength) == [1216, 20_000])
    }

    @Test("the ML-KEM-768 encapsulation key: 1184 bytes, 768 coefficients all below q, seeded runs repeat")
    func encapsulationKey() {
        for seed in UInt64(1)...20 {
            var generator = SeededGenerator(seed: seed)
            let key = MLKEMEncapsulationKey.random768(using: &generator)
            #expect(key.count == 1184)
            let coefficients = MLKEMEncapsulationKey.coefficients(key)
            #expect(coefficients.count == 768)
            #expect(coefficients.allSatisfy { $0 < 3329 })
            var again = SeededGenerator(seed: seed)
            #expect(MLKEMEncapsulationKey.random768(using: &again) == key)
        }
        // The decoder sees a coefficient of q or more where one was written.
        var bad = [UInt8](repeating: 0, count: 1184)
        bad[0] = 0x01; bad[1] = 0x0D // 0xD01 = 3329
        #expect(MLKEMEncapsulationKey.coefficients(bad)[0] == 3329)
    }

    private func hex(_ code: UInt16) -> String { String(code, radix: 16) }
}

extension TLSHandshakeReader {
    /// Every message of `bytes`, fed at once.
    func feedAll(_ bytes: [UInt8]) throws -> [HandshakeMessage] {
        var reader = self
        return try reader.feed(bytes)
    }
}
