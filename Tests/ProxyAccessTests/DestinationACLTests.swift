import ATSPolicy
import Testing
@testable import ProxyAccess

/// The destination ACL as a decision table: client (on the proxy host or not), the host as named, the
/// address about to be connected to, the rules; the outcome and the words of the refusal.
@Suite struct DestinationACLTests {
    static let lan = IPAddress.v4(0xC612_0002)       // 198.18.0.2, a device on the lab's network
    static let loopbackClient = IPAddress.v4(0x7F00_0001)
    static let proxyAddress = IPAddress.v4(0xC612_0001) // 198.18.0.1, where the proxy listens

    static func address(_ text: String) -> IPAddress {
        guard case .address(let address)? = try? Host.parse(text) else { fatalError("not an address: \(text)") }
        return address
    }

    static func patterns(_ texts: [String]) -> [DestinationPattern] {
        texts.map { DestinationPattern(parsing: Substring($0))! }
    }

    static func acl(allow: [String] = [], deny: [String] = [], route: (allow: [String], deny: [String])? = nil) -> DestinationACL {
        DestinationACL(rules: DestinationRules(allow: patterns(allow), deny: patterns(deny)),
                       route: route.map { (DestinationRules(allow: patterns($0.allow), deny: patterns($0.deny)), "client:198.18.0.0/15=lab") },
                       ownAddresses: [(proxyAddress, "the proxy listens on 198.18.0.1:3128")])
    }

    /// Every default-denied class, by the spellings a client may use (the classifier reads them all
    /// as the address they are), refused to a LAN client and allowed to a loopback one.
    @Test(arguments: [
        ("127.0.0.1", "127.0.0.0/8"), ("127.8.9.10", "127.0.0.0/8"), ("2130706433", "127.0.0.0/8"),
        ("0x7f.1", "127.0.0.0/8"), ("0177.0.0.1", "127.0.0.0/8"), ("127.1", "127.0.0.0/8"),
        ("[::ffff:127.0.0.1]", "127.0.0.0/8"), ("[::ffff:7f00:1]", "127.0.0.0/8"), ("[::1]", "::1"),
        ("0.0.0.0", "0.0.0.0/8"), ("0", "0.0.0.0/8"), ("[::]", ":: (unspecified"), ("[::ffff:0.0.0.0]", "0.0.0.0/8"),
        ("169.254.169.254", "169.254.0.0/16"), ("[::ffff:169.254.169.254]", "169.254.0.0/16"),
        ("[fe80::1]", "fe80::/10"), ("[febf::1]", "fe80::/10"), ("224.0.0.1", "224.0.0.0/4"),
        ("239.255.255.250", "224.0.0.0/4"), ("[ff02::1]", "ff00::/8"), ("255.255.255.255", "255.255.255.255"),
        ("[fd00:ec2::254]", "fd00:ec2::254"), ("198.18.0.1", "this proxy's own address"),
    ])
    func defaultDeniedForClientsOffTheHost(spelling: String, rule: String) throws {
        let address = Self.address(spelling)
        let denial = try #require(Self.acl().check(name: nil, address: address, client: Self.lan))
        #expect(denial.rule.contains(rule), "\(denial.rule)")
        #expect(denial.opener == "--allow-dest \(address)")
        #expect(denial.message.contains("--allow-dest \(address) opens it"), "\(denial.message)")
        #expect(Self.acl().check(name: nil, address: address, client: Self.loopbackClient) == nil,
                "a loopback client keeps the host's reach")
        #expect(Self.acl().check(name: nil, address: address, client: .v6(1)) == nil)
        #expect(Self.acl().check(name: nil, address: address, client: Self.proxyAddress) == nil,
                "a client on one of the host's own addresses is on the host")
    }

    @Test(arguments: ["10.1.2.3", "172.16.0.1", "192.168.50.20", "198.18.0.3", "[fc00::1]", "[fd12::1]",
                      "93.184.216.34", "[2001:db8::1]", "126.255.255.255", "128.0.0.1", "169.253.0.1", "223.255.255.255",
                      "[fe7f::1]", "[fec0::1]", "[::2]", "[::ffff:10.0.0.1]"])
    func privateAndPublicRangesStayReachable(spelling: String) {
        #expect(Self.acl().check(name: nil, address: Self.address(spelling), client: Self.lan) == nil)
    }

    @Test func aNameIsJudgedByTheAddressItResolvedTo() throws {
        let denial = try #require(Self.acl().check(name: "localhost", address: .v4(0x7F00_0001), client: Self.lan))
        #expect(denial.target == "localhost (127.0.0.1)")
        #expect(denial.message == "destination localhost (127.0.0.1) is not allowed for clients off the proxy host: "
                + "127.0.0.0/8 (loopback: the proxy host itself); --allow-dest 127.0.0.1, or --allow-dest localhost "
                + "for whatever it resolves to, opens it")
        #expect(Self.acl().check(name: "printer.lab", address: .v4(0xC0A8_3214), client: Self.lan) == nil)
    }

    /// (allow, deny, name, address, client) -> the rule that refused, or nil.
    @Test(arguments: [
        // An allow opens a default denial: by CIDR, by address, by name, by suffix.
        ([ "169.254.169.254"], [String](), nil as String?, "169.254.169.254", DestinationACLTests.lan, nil as String?),
        (["127.0.0.0/8"], [], "internal.lab", "127.0.0.1", DestinationACLTests.lan, nil),
        (["internal.lab"], [], "internal.lab", "127.0.0.1", DestinationACLTests.lan, nil),
        ([".lab"], [], "a.internal.lab", "127.0.0.1", DestinationACLTests.lan, nil),
        ([".lab"], [], "lab", "127.0.0.1", DestinationACLTests.lan, nil),
        ([".lab"], [], "notlab", "127.0.0.1", DestinationACLTests.lan, "127.0.0.0/8 (loopback: the proxy host itself)"),
        (["internal.lab"], [], "other.lab", "127.0.0.1", DestinationACLTests.lan, "127.0.0.0/8 (loopback: the proxy host itself)"),
        (["internal.lab"], [], nil, "127.0.0.1", DestinationACLTests.lan, "127.0.0.0/8 (loopback: the proxy host itself)"),
        // An explicit deny wins over an allow, and holds for loopback clients too.
        (["10.0.0.0/8"], ["10.9.0.0/16"], nil, "10.9.1.1", DestinationACLTests.lan, "--deny-dest 10.9.0.0/16"),
        ([], ["10.9.0.0/16"], nil, "10.9.1.1", DestinationACLTests.loopbackClient, "--deny-dest 10.9.0.0/16"),
        (["db.corp.example"], [".corp.example"], "db.corp.example", "10.1.1.1", DestinationACLTests.lan, "--deny-dest .corp.example"),
        ([], ["db.corp.example"], "db.corp.example.", "10.1.1.1", DestinationACLTests.lan, "--deny-dest db.corp.example"),
        ([], [".corp.example"], "corp.example", "10.1.1.1", DestinationACLTests.lan, "--deny-dest .corp.example"),
        ([], [".corp.example"], "xcorp.example", "10.1.1.1", DestinationACLTests.lan, nil),
        ([], ["192.0.2.7"], "anything.example", "192.0.2.7", DestinationACLTests.lan, "--deny-dest 192.0.2.7"),
        ([], ["2001:db8::/32"], nil, "[2001:db8::5]", DestinationACLTests.lan, "--deny-dest 2001:db8::/32"),
        // A deny of a v4 range covers its mapped spelling.
        ([], ["10.0.0.0/8"], nil, "[::ffff:10.1.2.3]", DestinationACLTests.lan, "--deny-dest 10.0.0.0/8"),
        // Nothing given: loopback clients reach everything.
        ([], [], nil, "169.254.169.254", DestinationACLTests.loopbackClient, nil),
        ([], [], "localhost", "::1", DestinationACLTests.loopbackClient, nil),
    ])
    func rulesInOrder(allow: [String], deny: [String], name: String?, address: String, client: IPAddress, refusedBy: String?) {
        let denial = Self.acl(allow: allow, deny: deny).check(name: name, address: Self.address(address), client: client)
        #expect(denial?.rule == refusedBy, "\(denial?.message ?? "allowed")")
        if let denial, refusedBy?.hasPrefix("--deny-dest") == true {
            #expect(denial.opener == nil)
            #expect(denial.message.hasSuffix("denies it (an explicit deny wins over every allow)"), "\(denial.message)")
        }
    }

    @Test func aRouteAddsItsOwnRulesToTheGlobalOnes() throws {
        let acl = Self.acl(allow: [], deny: ["10.9.0.0/16"], route: (allow: ["169.254.169.254"], deny: [".corp.example"]))
        #expect(acl.check(name: nil, address: Self.address("169.254.169.254"), client: Self.lan) == nil)
        let byRoute = try #require(acl.check(name: "db.corp.example", address: Self.address("10.1.1.1"), client: Self.lan))
        #expect(byRoute.rule == "deny-dest=.corp.example of --route client:198.18.0.0/15=lab")
        let global = try #require(acl.check(name: nil, address: Self.address("10.9.0.1"), client: Self.lan))
        #expect(global.rule == "--deny-dest 10.9.0.0/16")
        let withoutRoute = Self.acl(deny: ["10.9.0.0/16"])
        #expect(withoutRoute.check(name: nil, address: Self.address("169.254.169.254"), client: Self.lan) != nil)
    }

    @Test func throughAParentOnlyTheNameOrLiteralIsChecked() throws {
        let acl = Self.acl(deny: [".corp.example"])
        #expect(acl.check(host: try Host.parse("db.corp.example"), client: Self.lan)?.rule == "--deny-dest .corp.example")
        #expect(acl.check(host: try Host.parse("localhost"), client: Self.lan) == nil, "the parent resolves names")
        #expect(acl.check(host: try Host.parse("0x7f.1"), client: Self.lan)?.rule == "127.0.0.0/8 (loopback: the proxy host itself)")
    }

    @Test func ownAddressesOfAWildcardListenerAreEveryInterfaceAddress() throws {
        let acl = DestinationACL(rules: DestinationRules(), ownAddresses: [
            (.v4(0x0A00_0005), "the proxy listens on 0.0.0.0:3128"), (.v4(0xC612_0001), "the proxy listens on 0.0.0.0:3128"),
            (.v6(0x2001_0DB8 << 96 | 7), "the admin listener is on [2001:db8::7]:9090"),
        ])
        let denial = try #require(acl.check(name: nil, address: .v4(0x0A00_0005), client: Self.lan))
        #expect(denial.rule == "10.0.0.5 is this proxy's own address (the proxy listens on 0.0.0.0:3128)")
        #expect(acl.check(name: nil, address: .v6(0x2001_0DB8 << 96 | 7), client: Self.lan)?.rule.contains("admin") == true)
        #expect(acl.check(name: nil, address: .v4(0x0A00_0006), client: Self.lan) == nil)
        #expect(acl.isOnHost(.v4(0x0A00_0005)))
        #expect(!acl.isOnHost(.v4(0x0A00_0006)))
    }

    @Test(arguments: [
        ("10.0.0.0/8", "10.0.0.0/8"), ("10/8", "10.0.0.0/8"), ("192.0.2.7", "192.0.2.7"), ("[::1]", "::1"),
        ("::1/128", "::1"), ("fe80::/10", "fe80::/10"), ("Printer.LAB", "printer.lab"), (".Corp.Example", ".corp.example"),
        ("0x7f.1", "127.0.0.1"), ("2130706433", "127.0.0.1"), ("name.lab.", "name.lab"), ("localhost", "localhost"),
    ])
    func patternsAreReadAsTheClassifierReadsHosts(text: String, canonical: String) throws {
        #expect(try #require(DestinationPattern(parsing: Substring(text))).description == canonical)
    }

    @Test(arguments: ["", ".", "..lab", "10.0.0.0/33", "a b", "http://x", ".10.0.0.1", "api.127.0.0.1", "[::1", "x/8"])
    func malformedPatternsAreRefused(text: String) {
        #expect(DestinationPattern(parsing: Substring(text)) == nil)
    }

    @Test func routeOptionsAreParsedAfterTheID() throws {
        let parsed = try Route.parse("client:198.18.0.0/15=com.example.lab,allow-dest=169.254.169.254,deny-dest=.corp.example").get()
        #expect(parsed.id == "com.example.lab")
        #expect(parsed.name == "client:198.18.0.0/15=com.example.lab")
        #expect(parsed.destinations.allow.map(\.description) == ["169.254.169.254"])
        #expect(parsed.destinations.deny.map(\.description) == [".corp.example"])
        #expect(try Route.parse("user:ann=lab").get().destinations.isEmpty)
        #expect(throws: RouteError.self) { try Route.parse("user:ann=lab,parent=x").get() }
        #expect(throws: RouteError.self) { try Route.parse("user:ann=lab,deny-dest=10.0.0.0/99").get() }
        #expect(throws: RouteError.self) { try Route.parse("planet:mars=lab").get() }
    }
}
