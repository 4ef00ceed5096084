import Testing
@testable import ATSPolicy

/// Address parsing for keys (strict, inet_pton) and for hosts (resolver, inet_aton), CIDR (R8), containment.
@Suite("IP addresses and networks")
struct IPAddressTests {
    // MARK: Strict parsing (NSExceptionDomains keys)

    @Test("strict parsing accepts inet_pton text", arguments: [
        ("10.0.0.1", "10.0.0.1"), ("0.0.0.0", "0.0.0.0"), ("255.255.255.255", "255.255.255.255"),
        ("192.0.2.1", "192.0.2.1"), ("::1", "::1"), ("2001:DB8::1", "2001:db8::1"),
        ("2001:db8:0:0:0:0:0:1", "2001:db8::1"), ("::ffff:10.0.0.1", "10.0.0.1"), ("::", "::"),
    ])
    func strictAccepts(_ text: String, _ canonical: String) throws {
        let address = try #require(IPAddress.parseStrict(text[...]))
        #expect(address.description == canonical)
    }

    @Test("strict parsing rejects what only a resolver accepts", arguments: [
        "010.0.0.1", "10.0.1", "10.1", "2130706433", "0x7f.0.0.1", "0x7f000001", "10.0.0.256", "10.0.0.1.",
        "1.2.3.4.5", "1.2.3.04", "", " 1.2.3.4", "1.2.3.4 ", "1.2.3.+4", "1.2.3.-0", "1..3.4", "a.b.c.d",
        "1234.1.1.1", "fe80::1%eth0", ":::", "1::2::3", "[::1]", "::+1", "::-0",
    ])
    func strictRejects(_ text: String) {
        #expect(IPAddress.parseStrict(text[...]) == nil)
    }

    // MARK: Resolver parsing (hosts)

    @Test("resolver parsing reads inet_aton spellings", arguments: [
        ("2130706433", "127.0.0.1"), ("0x7f.1", "127.0.0.1"), ("0177.0.0.1", "127.0.0.1"), ("127.1", "127.0.0.1"),
        ("127.0.1", "127.0.0.1"), ("0x7f000001", "127.0.0.1"), ("127.0.0.1.", "127.0.0.1"),
        ("134744072", "8.8.8.8"), ("0", "0.0.0.0"), ("00", "0.0.0.0"), ("0x0", "0.0.0.0"),
        ("4294967295", "255.255.255.255"), ("0xffffffff", "255.255.255.255"), ("037777777777", "255.255.255.255"),
        ("1.0x10.0100.4", "1.16.64.4"), ("192.168.0x101", "192.168.1.1"), ("10.0.0.1", "10.0.0.1"),
        ("::ffff:127.0.0.1", "127.0.0.1"), ("2001:db8::1", "2001:db8::1"),
    ])
    func resolverAccepts(_ text: String, _ canonical: String) throws {
        let address = try #require(IPAddress.parseResolverHost(text[...]))
        #expect(address.description == canonical)
    }

    @Test("resolver parsing rejects invalid numbers", arguments: [
        "1.2.3.256", "1.2.3.4.5", "0x1.0x100.1.1", "08.1.1.1", "09", "4294967296", "0x100000000",
        "1.16777216", "1.2.65536", "256.1", "1..2", "", ".", "1.2.3.4..", "a.b", "0xg",
        "1.2.3.+4", "1.2.3. 4",
    ])
    func resolverRejects(_ text: String) {
        #expect(IPAddress.parseResolverHost(text[...]) == nil)
    }

    /// `0x` alone is 0 (WHATWG, glibc's inet_aton); a single trailing dot is allowed as URL parsers allow it.
    @Test("resolver edge spellings")
    func resolverEdges() {
        #expect(IPAddress.parseResolverHost("0x"[...])?.description == "0.0.0.0")
        #expect(IPAddress.parseResolverHost("1.2.3.4."[...])?.description == "1.2.3.4")
    }

    @Test("IPv4-mapped addresses are the IPv4 address; other IPv6 stays IPv6")
    func mapped() throws {
        #expect(IPAddress.parseStrict("::ffff:192.0.2.1"[...]) == .v4(0xC000_0201))
        #expect(IPAddress.parseStrict("::ffff:c000:201"[...]) == .v4(0xC000_0201))
        // IPv4-compatible (deprecated) and NAT64 addresses are not mapped addresses.
        #expect(IPAddress.parseStrict("::192.0.2.1"[...]) == .v6(0xC000_0201))
        #expect(IPAddress.parseStrict("64:ff9b::192.0.2.1"[...])?.isIPv4 == false)
    }

    @Test("RFC 5952 text", arguments: [
        ("2001:DB8:0:0:0:0:0:1", "2001:db8::1"),
        ("2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1"),
        ("2001:0:0:1:0:0:0:1", "2001:0:0:1::1"),
        ("2001:db8:0:1:1:1:1:1", "2001:db8:0:1:1:1:1:1"),
        ("0:0:0:0:0:0:0:1", "::1"),
        ("1:0:0:0:0:0:0:0", "1::"),
        ("0:0:0:0:0:0:0:0", "::"),
        ("2001:0DB8:00AB:0000:0000:0000:0000:0C0D", "2001:db8:ab::c0d"),
        ("1:0:0:2:0:0:0:3", "1:0:0:2::3"),
        ("0:0:1:0:0:0:1:0", "0:0:1::1:0"),
        ("1:0:0:0:1:0:0:0", "1::1:0:0:0"),
    ])
    func rfc5952(_ text: String, _ expected: String) throws {
        #expect(try #require(IPAddress.parseStrict(text[...])).description == expected)
    }

    // MARK: CIDR

    struct CIDRCase: Sendable, CustomTestStringConvertible {
        var text: String
        var network: String
        var padded: Bool
        var hostBits: Bool
        var testDescription: String { text }
    }

    @Test("CIDR parsing", arguments: [
        CIDRCase(text: "10.0.0.0/8", network: "10.0.0.0/8", padded: false, hostBits: false),
        CIDRCase(text: "10/8", network: "10.0.0.0/8", padded: true, hostBits: false),
        CIDRCase(text: "172.16/12", network: "172.16.0.0/12", padded: true, hostBits: false),
        CIDRCase(text: "192.168.1/24", network: "192.168.1.0/24", padded: true, hostBits: false),
        CIDRCase(text: "10.0.0.1/8", network: "10.0.0.0/8", padded: false, hostBits: true),
        CIDRCase(text: "10.1/8", network: "10.0.0.0/8", padded: true, hostBits: true),
        CIDRCase(text: "198.51.100.7/32", network: "198.51.100.7/32", padded: false, hostBits: false),
        CIDRCase(text: "0.0.0.0/0", network: "0.0.0.0/0", padded: false, hostBits: false),
        CIDRCase(text: "1.2.3.4/0", network: "0.0.0.0/0", padded: false, hostBits: true),
        CIDRCase(text: "2001:db8::/32", network: "2001:db8::/32", padded: false, hostBits: false),
        CIDRCase(text: "2001:db8::1/64", network: "2001:db8::/64", padded: false, hostBits: true),
        CIDRCase(text: "fe80::/10", network: "fe80::/10", padded: false, hostBits: false),
        CIDRCase(text: "::1/128", network: "::1/128", padded: false, hostBits: false),
        CIDRCase(text: "::/0", network: "::/0", padded: false, hostBits: false),
    ])
    func cidrParses(_ row: CIDRCase) throws {
        let parsed = try #require(IPNetwork.parse(row.text[...]))
        #expect(parsed.network.description == row.network)
        #expect(parsed.wasPadded == row.padded)
        #expect(parsed.hadHostBits == row.hostBits)
    }

    @Test("invalid CIDR", arguments: [
        "10.0.0.0/33", "2001:db8::/129", "10.0.0.0", "10.0.0.0/", "/8", "10.0.0.0/-1", "10.0.0.0/+8",
        "10.0.0.0/ 8", "10.0.0.0/8/8", "10.0.0.0/1000", "10.0.0.0.0/8", "010.0.0.0/8", "0x0a/8", "a.b.c.d/8",
        "256/8", "10..0/8", "fe80::%eth0/10", "2001:db8/32", "example.com/8", "10.0.0.0/0x8",
    ])
    func cidrRejects(_ text: String) {
        #expect(IPNetwork.parse(text[...]) == nil)
    }

    @Test("containment")
    func containment() throws {
        func address(_ text: String) throws -> IPAddress { try #require(IPAddress.parseResolverHost(text[...])) }
        let ten = PolicyFixtures.network("10.0.0.0/8")
        #expect(ten.contains(try address("10.0.0.0")))
        #expect(ten.contains(try address("10.255.255.255")))
        #expect(!ten.contains(try address("11.0.0.0")))
        #expect(!ten.contains(try address("9.255.255.255")))
        // A mapped address is IPv4 and is contained; a plain IPv6 address never is.
        #expect(ten.contains(try address("::ffff:10.1.2.3")))
        #expect(!ten.contains(try address("::a01:203")))

        let twelve = PolicyFixtures.network("172.16.0.0/12")
        #expect(twelve.contains(try address("172.31.255.255")))
        #expect(!twelve.contains(try address("172.32.0.0")))

        let all4 = PolicyFixtures.network("0.0.0.0/0")
        #expect(all4.contains(try address("255.255.255.255")))
        #expect(!all4.contains(try address("::")))
        let all6 = PolicyFixtures.network("::/0")
        #expect(all6.contains(try address("2001:db8::1")))
        #expect(!all6.contains(try address("0.0.0.0")))

        let linkLocal = PolicyFixtures.network("fe80::/10")
        #expect(linkLocal.contains(try address("febf:ffff::1")))
        #expect(!linkLocal.contains(try address("fec0::")))
        let host32 = PolicyFixtures.network("198.51.100.7/32")
        #expect(host32.contains(try address("198.51.100.7")))
        #expect(!host32.contains(try address("198.51.100.6")))
        let host128 = PolicyFixtures.network("::1/128")
        #expect(host128.contains(try address("::1")))
        #expect(!host128.contains(try address("::")))
    }

    @Test("the default local networks are R6c's list")
    func defaultLocalNetworks() {
        #expect(EngineOptions.defaultLocalNetworks.map(\.description) == [
            "127.0.0.0/8", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16",
            "::1/128", "fe80::/10", "fc00::/7",
        ])
    }
}
