import Testing
@testable import ATSPolicy

/// R6a (normalisation), R6b (classes) and R6c (direct destinations), per profile.
@Suite("Host classification (R6)")
struct HostClassificationTests {
    struct Normalised: Sendable, CustomTestStringConvertible {
        var input: String
        var canonical: String
        var hostClass: HostClass
        var testDescription: String { "\(input) -> \(canonical) (\(hostClass.rawValue))" }
        init(_ input: String, _ canonical: String, _ hostClass: HostClass) {
            self.input = input
            self.canonical = canonical
            self.hostClass = hostClass
        }
    }

    static let normalised: [Normalised] = [
        // R6a lowercasing; R6b classes.
        .init("example.com", "example.com", .public),
        .init("API.Example.COM", "api.example.com", .public),
        .init("foo.local", "foo.local", .local),
        .init("Foo.LOCAL", "foo.local", .local),
        .init("foo.local.", "foo.local.", .local),
        .init("a.b.printer.local", "a.b.printer.local", .local),
        .init("localhost", "localhost", .unqualified),
        .init("LOCALHOST", "localhost", .unqualified),
        .init("printer", "printer", .unqualified),
        .init("local", "local", .unqualified),
        // R6b's letter: "a name with no dot at all" is unqualified, so a trailing dot makes it public.
        .init("printer.", "printer.", .public),
        .init("localhost.", "localhost.", .public),
        // A .local look-alike that does not end in the label "local".
        .init("notlocal", "notlocal", .unqualified),
        .init("foo.mylocal", "foo.mylocal", .public),
        .init("foo.local.com", "foo.local.com", .public),
        .init("xn--bcher-kva.example", "xn--bcher-kva.example", .public),
        .init("my_host.example.com", "my_host.example.com", .public),
        .init("1.2.3.4a", "1.2.3.4a", .public),
        .init("123.example.com", "123.example.com", .public),

        // R6a numeric IPv4 spellings an OS resolver accepts: dotted quad, never a name.
        .init("127.0.0.1", "127.0.0.1", .ip),
        .init("2130706433", "127.0.0.1", .ip),
        .init("0x7f.1", "127.0.0.1", .ip),
        .init("0X7F.1", "127.0.0.1", .ip),
        .init("0177.0.0.1", "127.0.0.1", .ip),
        .init("127.1", "127.0.0.1", .ip),
        .init("127.0.1", "127.0.0.1", .ip),
        .init("0x7f000001", "127.0.0.1", .ip),
        .init("0x7F000001", "127.0.0.1", .ip),
        .init("127.0.0.1.", "127.0.0.1", .ip),
        .init("134744072", "8.8.8.8", .ip),
        .init("0", "0.0.0.0", .ip),
        .init("4294967295", "255.255.255.255", .ip),
        .init("1.16777215", "1.255.255.255", .ip),
        .init("1.2.65535", "1.2.255.255", .ip),
        .init("0x1.0x2.0x3.0x4", "1.2.3.4", .ip),
        .init("010.010.010.010", "8.8.8.8", .ip),

        // IPv6: brackets stripped, RFC 5952 output.
        .init("[::1]", "::1", .ip),
        .init("::1", "::1", .ip),
        .init("[2001:DB8:0:0:0:0:0:1]", "2001:db8::1", .ip),
        .init("[2001:0db8::0001]", "2001:db8::1", .ip),
        .init("[2001:db8:0:0:1:0:0:1]", "2001:db8::1:0:0:1", .ip),      // tie: the first run
        .init("[2001:0:0:1:0:0:0:1]", "2001:0:0:1::1", .ip),            // the longest run
        .init("[2001:db8:0:1:1:1:1:1]", "2001:db8:0:1:1:1:1:1", .ip),   // no "::" for one group
        .init("[1:0:1:0:1:0:1:0]", "1:0:1:0:1:0:1:0", .ip),
        .init("[0:0:0:0:0:0:0:0]", "::", .ip),
        .init("[::]", "::", .ip),
        .init("[1::]", "1::", .ip),
        .init("[FE80::1]", "fe80::1", .ip),
        .init("[1:2:3:4:5:6:7::]", "1:2:3:4:5:6:7:0", .ip),
        .init("[::2:3:4:5:6:7:8]", "0:2:3:4:5:6:7:8", .ip),
        .init("[64:ff9b::192.0.2.1]", "64:ff9b::c000:201", .ip),
        // IPv4-mapped IPv6 is the IPv4 address.
        .init("[::ffff:192.0.2.1]", "192.0.2.1", .ip),
        .init("[::FFFF:c000:0201]", "192.0.2.1", .ip),
        .init("[0:0:0:0:0:ffff:127.0.0.1]", "127.0.0.1", .ip),
        .init("::ffff:8.8.8.8", "8.8.8.8", .ip),
    ]

    @Test("normalised host and class", arguments: normalised)
    func normalises(_ row: Normalised) throws {
        let host = try Host.parse(row.input)
        #expect(host.description == row.canonical)
        #expect(host.hostClass == row.hostClass)
    }

    /// R6a: "never let such a host pass as an unqualified name".
    @Test("numeric IPv4 spellings are IP addresses", arguments: [
        "2130706433", "0x7f.1", "0177.0.0.1", "127.1", "134744072", "0x7f000001", "127.0.1", "127.0.0.1.",
    ])
    func numericSpellingIsIP(_ text: String) throws {
        let host = try Host.parse(text)
        guard case .address(let address) = host else {
            Issue.record("\(text) parsed as a name: \(host)")
            return
        }
        #expect(address.isIPv4)
        #expect(host.hostClass == .ip)
    }

    static let invalid: [String] = [
        // Empty host and empty labels.
        "", ".", "..", "a..b", ".example.com", "example..com", "example.com..",
        // Characters outside a host name.
        "exa mple.com", "*.example.com", "ex/ample.com", "ex@mple.com", "example.com:80", "a+b.com",
        "a\u{0}b", "exa!mple.com", "[", "]",
        // Non-ASCII (IDNA form required).
        "exämple.com", "例え.jp", "bücher", "ex\u{00A0}ample.com",
        // Percent-encoding and zone ids.
        "a%2eb.com", "[fe80::1%eth0]", "[fe80::1%25eth0]", "fe80::1%eth0",
        // Invalid numeric spellings: errors, not names (inet_aton / WHATWG "ends in a number").
        "1.2.3.256", "1.2.3.4.5", "0x1.0x100.1.1", "08.1.1.1", "1.2.3.09", "256.1", "1.16777216",
        "4294967296", "example.123", "example.0x1f", "1..2.3", ".1.2.3", "127.0.0.1..", "0x1g.1",
        "foo.0x",
        // Bad IPv6.
        "[::1", "::1]", "[]", "[example.com]", "[127.0.0.1]", "[1::2::3]", "[12345::]", "[::g]",
        "[1:2:3:4:5:6:7:8:9]", "[1:2:3:4:5:6:7:8::]", "[:1]", "[1:]", "[1:::2]", "[::1.2.3.4.5]",
        "[::01.2.3.4]", "[::256.2.3.4]", "[1.2.3.4::]", "1:2",
        // A sign is not a hex digit (Swift's UInt16(_:radix:) would accept "+1" and "-0").
        "[+1::1]", "[::-0]", "[1:+2::]",
        // Labels longer than 63 and names longer than 253 characters.
        String(repeating: "a", count: 64) + ".com",
        (0..<4).map { _ in String(repeating: "a", count: 63) }.joined(separator: "."),
    ]

    @Test("invalid hosts are errors", arguments: invalid)
    func rejects(_ text: String) {
        #expect(throws: HostError.self) { try Host.parse(text) }
    }

    @Test("length limits: 63 per label, 253 per name plus an optional trailing dot")
    func lengthLimits() throws {
        let label63 = String(repeating: "a", count: 63)
        #expect(try Host.parse(label63 + ".com").description == label63 + ".com")
        // 63+1+63+1+63+1+61 = 253 characters.
        let name253 = [label63, label63, label63, String(repeating: "b", count: 61)].joined(separator: ".")
        #expect(name253.utf8.count == 253)
        #expect(try Host.parse(name253).description == name253)
        #expect(try Host.parse(name253 + ".").description == name253 + ".")
        #expect(throws: HostError.self) { try Host.parse(name253 + "b") }
    }

    @Test("a host error names the host and the problem")
    func errorDescription() {
        let badCharacter = #expect(throws: HostError.self) { try Host.parse("exa mple.com") }
        #expect(badCharacter?.description.contains("exa mple.com") == true)
        #expect(badCharacter?.description.contains("not allowed") == true)
        let zone = #expect(throws: HostError.self) { try Host.parse("[fe80::1%eth0]") }
        #expect(zone?.description.contains("fe80::1%eth0") == true)
        #expect(zone?.description.contains("zone") == true)
        let numeric = #expect(throws: HostError.self) { try Host.parse("1.2.3.256") }
        #expect(numeric?.description.contains("1.2.3.256") == true)
        #expect(numeric?.description.contains("IPv4") == true)
    }

    // MARK: Destinations from URLs and authorities

    struct URLCase: Sendable, CustomTestStringConvertible {
        var url: String
        var scheme: Scheme
        var host: String
        var port: Int
        var testDescription: String { url }
    }

    @Test("absolute URLs", arguments: [
        URLCase(url: "http://api.example.com/v1", scheme: .http, host: "api.example.com", port: 80),
        URLCase(url: "HTTPS://API.EXAMPLE.COM", scheme: .https, host: "api.example.com", port: 443),
        URLCase(url: "http://[::1]:8080/x", scheme: .http, host: "::1", port: 8080),
        URLCase(url: "http://[2001:DB8::0:1]/", scheme: .http, host: "2001:db8::1", port: 80),
        URLCase(url: "http://user:pw@0x7f.1:81/", scheme: .http, host: "127.0.0.1", port: 81),
        URLCase(url: "ws://printer.local/socket", scheme: .http, host: "printer.local", port: 80),
        URLCase(url: "wss://example.com?q=1", scheme: .https, host: "example.com", port: 443),
        URLCase(url: "http://127.0.0.1./", scheme: .http, host: "127.0.0.1", port: 80),
    ])
    func parsesURL(_ row: URLCase) throws {
        let destination = try Destination.parse(url: row.url)
        #expect(destination.scheme == row.scheme)
        #expect(destination.host.description == row.host)
        #expect(destination.port == row.port)
    }

    @Test("invalid URLs", arguments: [
        "example.com", "ftp://example.com/", "http://", "http://[fe80::1%25eth0]/", "http://exa mple.com/",
        "http://example.com:0/", "http://example.com:65536/", "http://example.com:8o/", "http://[::1]x/",
        "http://1.2.3.256/", "http://example.com:99999999999999999999999/", "http://example.com:+80/",
        "http://[::1/",
    ])
    func rejectsURL(_ url: String) {
        #expect(throws: DestinationError.self) { try Destination.parse(url: url) }
    }

    @Test("a refused URL names itself and the problem")
    func urlErrorsSayWhy() {
        let cases = [
            ("gopher://a/", "gopher://a/: unsupported scheme 'gopher'"),
            ("http://a:8o/", "http://a:8o/: invalid port '8o'"),
            ("http://[::1]x/", "http://[::1]x/: junk after IPv6 address"),
            ("http://u@a b/", "http://u@a b/: invalid host 'a b': character ' ' is not allowed in a host name"),
        ]
        for (url, message) in cases {
            let error = #expect(throws: DestinationError.self) { try Destination.parse(url: url) }
            #expect(error?.description == message)
        }
    }

    @Test("CONNECT authorities")
    func parsesAuthority() throws {
        let v6 = try Destination.parse(authority: "[2001:db8::1]:443", scheme: .https, portRequired: true)
        #expect(v6.host == .address(.v6(0x2001_0db8_0000_0000_0000_0000_0000_0001)))
        #expect(v6.port == 443)
        let name = try Destination.parse(authority: "Example.COM:8443", scheme: .https, portRequired: true)
        #expect(name.host == .name("example.com"))
        #expect(name.port == 8443)
        #expect(throws: DestinationError.self) {
            try Destination.parse(authority: "example.com", scheme: .https, portRequired: true)
        }
        #expect(throws: DestinationError.self) {
            try Destination.parse(authority: "example.com:", scheme: .https, portRequired: true)
        }
    }

    // MARK: R6c direct destinations

    struct DirectCase: Sendable, CustomTestStringConvertible {
        var host: String
        var ios9: Bool
        var ios10: Bool
        var ios17: Bool
        var testDescription: String { host }
        init(_ host: String, ios9: Bool, ios10: Bool, ios17: Bool) {
            self.host = host
            self.ios9 = ios9
            self.ios10 = ios10
            self.ios17 = ios17
        }
        /// Direct under R6c with the default local networks, whatever the profile, except ios10's rule
        /// that every IP literal is direct (R11).
        init(_ host: String, r6c: Bool, ip: Bool) {
            self.init(host, ios9: r6c, ios10: r6c || ip, ios17: r6c)
        }
    }

    // `direct` reports R6c; the ios9 profile keeps the R6c answer even though nothing is exempt there (R11).
    static let directCases: [DirectCase] = [
        .init("example.com", r6c: false, ip: false),
        .init("printer.", r6c: false, ip: false),
        .init("foo.local", r6c: true, ip: false),
        .init("foo.local.", r6c: true, ip: false),
        .init("localhost", r6c: true, ip: false),
        .init("printer", r6c: true, ip: false),
        .init("127.0.0.1", r6c: true, ip: true),
        .init("127.255.255.254", r6c: true, ip: true),
        .init("2130706433", r6c: true, ip: true),
        .init("10.1.2.3", r6c: true, ip: true),
        .init("172.16.0.1", r6c: true, ip: true),
        .init("172.31.255.255", r6c: true, ip: true),
        .init("172.32.0.1", r6c: false, ip: true),
        .init("172.15.255.255", r6c: false, ip: true),
        .init("192.168.1.10", r6c: true, ip: true),
        .init("192.169.0.1", r6c: false, ip: true),
        .init("169.254.1.1", r6c: true, ip: true),
        .init("8.8.8.8", r6c: false, ip: true),
        .init("134744072", r6c: false, ip: true),
        .init("11.0.0.1", r6c: false, ip: true),
        .init("[::1]", r6c: true, ip: true),
        .init("[::2]", r6c: false, ip: true),
        .init("[fe80::1]", r6c: true, ip: true),
        .init("[febf:ffff::1]", r6c: true, ip: true),
        .init("[fec0::1]", r6c: false, ip: true),
        .init("[fc00::1]", r6c: true, ip: true),
        .init("[fdff:ffff::1]", r6c: true, ip: true),
        .init("[fe00::1]", r6c: false, ip: true),
        .init("[2001:db8::1]", r6c: false, ip: true),
        .init("[::ffff:10.0.0.1]", r6c: true, ip: true),
        .init("[::ffff:8.8.8.8]", r6c: false, ip: true),
    ]

    @Test("direct with the default local networks, per profile", arguments: directCases)
    func directDefault(_ row: DirectCase) throws {
        let host = try Host.parse(row.host)
        #expect(PolicyFixtures.engine(profile: .ios9).isDirect(host) == row.ios9)
        #expect(PolicyFixtures.engine(profile: .ios10).isDirect(host) == row.ios10)
        #expect(PolicyFixtures.engine(profile: .ios17).isDirect(host) == row.ios17)
    }

    @Test("custom local networks replace the default list")
    func directCustom() throws {
        let custom = [PolicyFixtures.network("203.0.113.0/24"), PolicyFixtures.network("2001:db8:1::/48")]
        let ios17 = PolicyFixtures.engine(profile: .ios17, localNetworks: custom)
        let ios10 = PolicyFixtures.engine(profile: .ios10, localNetworks: custom)
        let expectations: [(String, ios17: Bool)] = [
            ("203.0.113.9", true), ("203.0.114.1", false), ("10.0.0.1", false), ("127.0.0.1", false),
            ("[2001:db8:1:ffff::1]", true), ("[2001:db8:2::1]", false), ("[::1]", false),
            ("printer", true), ("foo.local", true), ("example.com", false),
        ]
        for (text, expected) in expectations {
            let host = try Host.parse(text)
            #expect(ios17.isDirect(host) == expected, "ios17 \(text)")
            // ios10: every IP literal is direct whatever the list; names as R6c.
            let ios10Expected = host.hostClass == .ip ? true : expected
            #expect(ios10.isDirect(host) == ios10Expected, "ios10 \(text)")
        }
        let none = PolicyFixtures.engine(profile: .ios17, localNetworks: [])
        #expect(!none.isDirect(try Host.parse("127.0.0.1")))
        #expect(!none.isDirect(try Host.parse("[::1]")))
        #expect(none.isDirect(try Host.parse("localhost")))
    }

    @Test("the decision reports direct and class")
    func decisionReportsDirect() throws {
        let engine = PolicyFixtures.engine()
        let local = engine.decide(try Destination.parse(url: "http://0x7f.1/"))
        #expect(local.direct)
        #expect(local.destination.hostClass == .ip)
        #expect(local.destination.host.description == "127.0.0.1")
        let external = engine.decide(try Destination.parse(url: "http://134744072/"))
        #expect(!external.direct)
        #expect(external.destination.host.description == "8.8.8.8")
    }
}
