import Testing
import Foundation
@testable import ATSPolicy

/// The decision tables: every rule R1-R13 under each profile (ios9, ios10, ios17) and context
/// (app, media, web), for http and https, written from ATS-SPEC.md rather than from the engine.
///
/// A scenario is a policy, a destination and the expected outcome of a plain-HTTP load per profile and
/// context; each scenario expands to 18 rows (3 profiles x 3 contexts x http/https). For https the
/// expectation is the same except that the action is always `allow` with no reason (INTERFACE.md).
@Suite("Decision tables (R1-R13)")
struct DecisionTableTests {
    typealias F = PolicyFixtures
    static let yes = F.yes
    static let no = F.no

    static let arbitrary = ATSKey.allowsArbitraryLoads
    static let media = ATSKey.allowsArbitraryLoadsForMedia
    static let web = ATSKey.allowsArbitraryLoadsInWebContent
    static let localNetworking = ATSKey.allowsLocalNetworking

    // MARK: Expectations

    /// The expected outcome of a plain-HTTP load.
    struct Expect: Sendable, Equatable, CustomStringConvertible {
        var ats: ATSState
        var action: Action
        var reason: BlockReason?
        var requirements: Requirements
        /// The `exception` field: the key, `builtin:KEY`, or nil.
        var exception: String?
        var match: ExceptionMatchKind?
        var rule: String
        var direct: Bool

        var description: String {
            "\(ats.rawValue)/\(action.rawValue)/\(exception ?? "-")/\(rule)/direct=\(direct)"
        }

        /// ATS on by the global keys (R12, R13).
        static func on(direct: Bool = false) -> Expect {
            Expect(ats: .on, action: .block, reason: .cleartextHTTP, requirements: .full, exception: nil,
                   match: nil, rule: "R12", direct: direct)
        }

        /// ATS off by the global keys (R12, R13).
        static func off(direct: Bool = false) -> Expect {
            Expect(ats: .off, action: .allow, reason: nil, requirements: .none, exception: nil, match: nil,
                   rule: "R12", direct: direct)
        }

        /// A direct destination exempt under R11.
        static let exempt = Expect(ats: .exempt, action: .allow, reason: nil, requirements: .none, exception: nil,
                                   match: nil, rule: "R11", direct: true)

        /// An exception entry decided (R10); HTTP is allowed iff the entry allows it.
        static func entry(_ key: String, _ match: ExceptionMatchKind, http: Bool = false, tls: TLSVersion = .tls12,
                          fs: Bool = true, rule: String = "R7", direct: Bool = false) -> Expect {
            Expect(ats: .exception, action: http ? .allow : .block, reason: http ? nil : .cleartextHTTP,
                   requirements: F.entryRequirements(http: http, tls: tls, fs: fs), exception: key, match: match,
                   rule: rule, direct: direct)
        }

        /// A built-in entry (R9): HTTP allowed, forward secrecy not required, all include subdomains.
        static func builtin(_ key: String, _ match: ExceptionMatchKind, tls: TLSVersion = .tls12) -> Expect {
            entry("builtin:\(key)", match, http: true, tls: tls, fs: false, rule: "R9")
        }
    }

    struct Scenario: Sendable {
        var name: String
        var policy: [String: PlistValue]
        /// The authority of the URL: `api.example.com`, `[::1]`, `10.1.2.3:8080`.
        var authority: String
        var builtins = true
        var localNetworks = EngineOptions.defaultLocalNetworks
        var expect: @Sendable (Profile, LoadContext) -> Expect

        init(_ name: String, _ policy: [String: PlistValue], _ authority: String, builtins: Bool = true,
             localNetworks: [IPNetwork] = EngineOptions.defaultLocalNetworks,
             _ expect: @escaping @Sendable (Profile, LoadContext) -> Expect) {
            self.name = name
            self.policy = policy
            self.authority = authority
            self.builtins = builtins
            self.localNetworks = localNetworks
            self.expect = expect
        }

        /// The same outcome for every profile and context.
        init(_ name: String, _ policy: [String: PlistValue], _ authority: String, builtins: Bool = true,
             all expect: Expect) {
            self.init(name, policy, authority, builtins: builtins) { _, _ in expect }
        }

        /// Per profile, the same in every context.
        init(_ name: String, _ policy: [String: PlistValue], _ authority: String, builtins: Bool = true,
             localNetworks: [IPNetwork] = EngineOptions.defaultLocalNetworks,
             ios9: Expect, ios10: Expect, ios17: Expect) {
            self.init(name, policy, authority, builtins: builtins, localNetworks: localNetworks) { profile, _ in
                switch profile {
                case .ios9: ios9
                case .ios10: ios10
                case .ios17: ios17
                }
            }
        }
    }

    struct Row: Sendable, CustomTestStringConvertible {
        var scenario: Scenario
        var scheme: Scheme
        var profile: Profile
        var context: LoadContext
        var url: String { "\(scheme.rawValue)://\(scenario.authority)/" }
        var testDescription: String {
            "\(scenario.name): \(url) \(profile.rawValue)/\(context.rawValue)"
        }
    }

    // MARK: Scenarios

    static let publicHost = "api.example.com"

    /// R1, R2, R12, R13 on a public name (never direct, never exempt).
    static let globalScenarios: [Scenario] = [
        Scenario("empty dictionary: full ATS", [:], publicHost, all: .on()),
        Scenario("NSAllowsArbitraryLoads YES", [arbitrary: yes], publicHost, all: .off()),
        Scenario("NSAllowsArbitraryLoads NO", [arbitrary: no], publicHost, all: .on()),
        Scenario("R1: NSAllowsArbitraryLoads string YES is ignored", [arbitrary: F.str("YES")], publicHost, all: .on()),
        Scenario("R1: NSAllowsArbitraryLoads integer 1 is ignored", [arbitrary: .integer(1)], publicHost, all: .on()),
        Scenario("R1: NSAllowsArbitraryLoads real 1 is ignored", [arbitrary: .real(1)], publicHost, all: .on()),
        Scenario("R1: NSAllowsArbitraryLoads date is ignored", [arbitrary: .date(.init(timeIntervalSince1970: 0))],
                 publicHost, all: .on()),
        Scenario("R1: NSAllowsArbitraryLoads dictionary is ignored", [arbitrary: .dictionary([:])], publicHost,
                 all: .on()),

        // R12 line 1: ForMedia YES switches ATS off for media only; its presence keeps ATS on elsewhere
        // even with NSAllowsArbitraryLoads (ios10/ios17). ios9 knows only NSAllowsArbitraryLoads.
        Scenario("AAL YES + ForMedia YES", [arbitrary: yes, media: yes], publicHost) { profile, context in
            profile == .ios9 || context == .media ? .off() : .on()
        },
        Scenario("AAL YES + ForMedia NO", [arbitrary: yes, media: no], publicHost) { profile, _ in
            profile == .ios9 ? .off() : .on()
        },
        Scenario("AAL YES + ForMedia string YES (present, ignored value)", [arbitrary: yes, media: F.str("YES")],
                 publicHost) { profile, _ in
            profile == .ios9 ? .off() : .on()
        },
        Scenario("ForMedia YES alone", [media: yes], publicHost) { profile, context in
            profile != .ios9 && context == .media ? .off() : .on()
        },
        Scenario("ForMedia string YES alone", [media: F.str("YES")], publicHost, all: .on()),
        Scenario("AAL NO + ForMedia YES", [arbitrary: no, media: yes], publicHost) { profile, context in
            profile != .ios9 && context == .media ? .off() : .on()
        },

        // R12 line 2: InWebContent.
        Scenario("AAL YES + InWebContent YES", [arbitrary: yes, web: yes], publicHost) { profile, context in
            profile == .ios9 || context == .web ? .off() : .on()
        },
        Scenario("AAL YES + InWebContent NO", [arbitrary: yes, web: no], publicHost) { profile, _ in
            profile == .ios9 ? .off() : .on()
        },
        Scenario("AAL YES + InWebContent integer 0", [arbitrary: yes, web: .integer(0)], publicHost) { profile, _ in
            profile == .ios9 ? .off() : .on()
        },
        Scenario("InWebContent YES alone", [web: yes], publicHost) { profile, context in
            profile != .ios9 && context == .web ? .off() : .on()
        },

        // R12 line 3: NSAllowsLocalNetworking present (any value) keeps ATS on, ignoring AAL.
        Scenario("AAL YES + NSAllowsLocalNetworking YES", [arbitrary: yes, localNetworking: yes], publicHost) {
            profile, _ in profile == .ios9 ? .off() : .on()
        },
        Scenario("AAL YES + NSAllowsLocalNetworking NO", [arbitrary: yes, localNetworking: no], publicHost) {
            profile, _ in profile == .ios9 ? .off() : .on()
        },
        Scenario("AAL YES + NSAllowsLocalNetworking string", [arbitrary: yes, localNetworking: F.str("YES")],
                 publicHost) { profile, _ in
            profile == .ios9 ? .off() : .on()
        },
        Scenario("NSAllowsLocalNetworking YES alone", [localNetworking: yes], publicHost, all: .on()),

        // R12 order: the context lines come before the presence lines.
        Scenario("all four keys YES", [arbitrary: yes, media: yes, web: yes, localNetworking: yes], publicHost) {
            profile, context in
            profile == .ios9 || context != .app ? .off() : .on()
        },
        Scenario("NSAllowsLocalNetworking YES + ForMedia YES", [localNetworking: yes, media: yes], publicHost) {
            profile, context in
            profile != .ios9 && context == .media ? .off() : .on()
        },
        Scenario("ForMedia YES + InWebContent YES", [media: yes, web: yes], publicHost) { profile, context in
            profile != .ios9 && context != .app ? .off() : .on()
        },
        Scenario("AAL YES + ForMedia YES + InWebContent NO", [arbitrary: yes, media: yes, web: no], publicHost) {
            profile, context in
            profile == .ios9 || context == .media ? .off() : .on()
        },

        // R2: keys that are not honoured are neither values nor "present".
        Scenario("R2: NSAllowsArbitraryLoadsInMedia is not a key (AAL honoured)",
                 [arbitrary: yes, "NSAllowsArbitraryLoadsInMedia": yes], publicHost, all: .off()),
        Scenario("R2: NSAllowsArbitraryLoadsInMedia alone does nothing", ["NSAllowsArbitraryLoadsInMedia": yes],
                 publicHost, all: .on()),
        Scenario("R2: NSRequiresCertificateTransparency is not a key",
                 [arbitrary: yes, "NSRequiresCertificateTransparency": yes], publicHost, all: .off()),
        Scenario("R2: NSTemporaryExceptionAllowsInsecureHTTPLoads in an entry is not honoured",
                 F.ats(exceptions: [publicHost: F.entry(extra: ["NSTemporaryExceptionAllowsInsecureHTTPLoads": yes,
                                                                "NSThirdPartyExceptionAllowsInsecureHTTPLoads": yes])]),
                 publicHost, all: .entry(publicHost, .exact)),
        Scenario("lowercase key spelling is not the key", ["nsallowsarbitraryloads": yes], publicHost, all: .on()),
    ]

    /// R6c and R11: the local exemption per profile.
    static let localScenarios: [Scenario] = {
        var scenarios: [Scenario] = []
        // Local and unqualified names, and local-network addresses: exempt under ios10/ios17, not ios9.
        for host in ["printer", "localhost", "foo.local", "foo.local.", "192.168.1.10", "10.0.0.1", "172.16.5.4",
                     "169.254.1.1", "127.0.0.1", "0x7f.1", "2130706433", "[::1]", "[fe80::1]", "[fd12::1]",
                     "[::ffff:192.168.0.1]", "printer:631"] {
            scenarios.append(Scenario("R11 direct, empty dictionary", [:], host,
                                      ios9: .on(direct: true), ios10: .exempt, ios17: .exempt))
            scenarios.append(Scenario("R11 direct, NSAllowsLocalNetworking YES", [localNetworking: yes], host,
                                      ios9: .on(direct: true), ios10: .exempt, ios17: .exempt))
            scenarios.append(Scenario("R11 direct, NSAllowsLocalNetworking NO revokes", [localNetworking: no], host,
                                      ios9: .on(direct: true), ios10: .on(direct: true), ios17: .on(direct: true)))
            // ios9 honours AAL; ios10/17 keep ATS on because NSAllowsLocalNetworking is present (R12).
            scenarios.append(Scenario("R11 direct, NSAllowsLocalNetworking NO + AAL YES",
                                      [localNetworking: no, arbitrary: yes], host,
                                      ios9: .off(direct: true), ios10: .on(direct: true), ios17: .on(direct: true)))
            // R11 comes before R12: the exemption stands in every context, whatever the global keys.
            scenarios.append(Scenario("R11 direct, AAL YES + ForMedia YES", [arbitrary: yes, media: yes], host) {
                profile, context in
                profile == .ios9 ? .off(direct: true) : .exempt
            })
            scenarios.append(Scenario("R11 direct, InWebContent YES", [web: yes], host) { profile, context in
                profile == .ios9 ? .on(direct: true) : .exempt
            })
        }
        // External addresses: not direct under ios17 (not exempt); ios10 counts every IP literal as direct.
        for host in ["8.8.8.8", "134744072", "172.32.0.1", "[2001:db8::1]", "[::ffff:8.8.8.8]", "[fec0::1]"] {
            scenarios.append(Scenario("R11 external IP, empty dictionary", [:], host,
                                      ios9: .on(), ios10: .exempt, ios17: .on()))
            scenarios.append(Scenario("R11 external IP, AAL YES", [arbitrary: yes], host,
                                      ios9: .off(), ios10: .exempt, ios17: .off()))
            scenarios.append(Scenario("R11 external IP, NSAllowsLocalNetworking YES", [localNetworking: yes], host,
                                      ios9: .on(), ios10: .exempt, ios17: .on()))
            scenarios.append(Scenario("R11 external IP, NSAllowsLocalNetworking NO", [localNetworking: no], host,
                                      ios9: .on(), ios10: .on(direct: true), ios17: .on()))
        }
        // R6b's letter: a trailing dot makes a dotted (public) name, never direct.
        for host in ["printer.", "localhost.", "example.com"] {
            scenarios.append(Scenario("R11 public name", [:], host, all: .on()))
        }
        // R11 with a non-boolean NSAllowsLocalNetworking: R1 gives such a value presence in R12 only, so
        // it does not revoke the exemption (Apple's evaluator treats it as absent); only a real NO does.
        scenarios.append(Scenario("R11 direct, NSAllowsLocalNetworking string YES", [localNetworking: F.str("YES")],
                                  "printer", ios9: .on(direct: true), ios10: .exempt, ios17: .exempt))
        scenarios.append(Scenario("R11 direct, NSAllowsLocalNetworking string NO", [localNetworking: F.str("NO")],
                                  "printer", ios9: .on(direct: true), ios10: .exempt, ios17: .exempt))
        // Configured local networks replace the default list (R6c).
        let custom = [F.network("203.0.113.0/24")]
        scenarios.append(Scenario("R6c custom network, inside", [:], "203.0.113.5", localNetworks: custom,
                                  ios9: .on(direct: true), ios10: .exempt, ios17: .exempt))
        scenarios.append(Scenario("R6c custom network, default network no longer local", [:], "192.168.1.10",
                                  localNetworks: custom, ios9: .on(), ios10: .exempt, ios17: .on()))
        scenarios.append(Scenario("R6c custom network, names unaffected", [:], "printer.local", localNetworks: custom,
                                  ios9: .on(direct: true), ios10: .exempt, ios17: .exempt))
        return scenarios
    }()

    /// R5, R7 and R10 with name keys.
    static let nameScenarios: [Scenario] = {
        let exceptions: [String: PlistValue] = [
            "example.com": F.entry(subdomains: yes, insecureHTTP: yes, minimumTLS: F.str("TLSv1.1"), forwardSecrecy: no),
            "api.example.com": F.entry(),
            "secure.example.com": F.entry(subdomains: yes, minimumTLS: F.str("TLSv1.3")),
            "plain.org": F.entry(insecureHTTP: yes),
        ]
        let policy = F.ats(exceptions: exceptions)
        let example = Expect.entry("example.com", .subdomain, http: true, tls: .tls11, fs: false)
        let secure = Expect.entry("secure.example.com", .subdomain, tls: .tls13)
        var scenarios: [Scenario] = [
            Scenario("R7 exact entry", policy, "example.com",
                     all: .entry("example.com", .exact, http: true, tls: .tls11, fs: false)),
            Scenario("R7 subdomain of an entry with NSIncludesSubdomains", policy, "www.example.com", all: example),
            Scenario("R7 deep subdomain", policy, "a.b.c.example.com", all: example),
            Scenario("R7 uppercase host is lowercased first", policy, "WWW.Example.COM", all: example),
            Scenario("R7 exact {} entry applies without NSIncludesSubdomains", policy, "api.example.com",
                     all: .entry("api.example.com", .exact)),
            Scenario("R7 parent without NSIncludesSubdomains is skipped, grandparent applies", policy,
                     "v2.api.example.com", all: example),
            Scenario("R7 most specific entry wins", policy, "secure.example.com",
                     all: .entry("secure.example.com", .exact, tls: .tls13)),
            Scenario("R7 most specific entry wins for its subdomains", policy, "x.secure.example.com", all: secure),
            Scenario("R7 most specific entry wins, several levels down", policy, "a.b.secure.example.com", all: secure),
            Scenario("R7 exact entry without subdomains", policy, "plain.org",
                     all: .entry("plain.org", .exact, http: true)),
            Scenario("R7 parent without NSIncludesSubdomains, nothing above", policy, "www.plain.org", all: .on()),
            Scenario("R7 label boundary: notexample.com is not a subdomain", policy, "notexample.com", all: .on()),
            Scenario("R5 trailing-dot host does not match the dotless key", policy, "example.com.", all: .on()),
            Scenario("R7 port does not matter", policy, "api.example.com:8080", all: .entry("api.example.com", .exact)),
        ]

        // Apple's example: an empty entry re-enables full ATS for one host of an arbitrary-loads app.
        let arbitraryApp = F.ats([arbitrary: yes], exceptions: ["secure.example.org": F.entry()])
        scenarios += [
            Scenario("R10 {} entry in an arbitrary-loads app", arbitraryApp, "secure.example.org",
                     all: .entry("secure.example.org", .exact)),
            Scenario("R10 {} entry: other hosts follow AAL", arbitraryApp, "other.example.org", all: .off()),
            Scenario("R10 {} entry without NSIncludesSubdomains: subdomains follow AAL", arbitraryApp,
                     "www.secure.example.org", all: .off()),
        ]

        // R10: an entry alone decides; context, global keys and the local exemption are ignored.
        scenarios += [
            Scenario("R10 entry beats ForMedia/InWebContent YES",
                     F.ats([arbitrary: yes, media: yes, web: yes], exceptions: ["cdn.example.net": F.entry()]),
                     "cdn.example.net", all: .entry("cdn.example.net", .exact)),
            Scenario("R10 entry beats the local exemption", F.ats(exceptions: ["printer": F.entry()]), "printer",
                     all: .entry("printer", .exact, direct: true)),
            Scenario("R10 entry for a local name under ios9", F.ats(exceptions: ["printer": F.entry(insecureHTTP: yes)]),
                     "printer", all: .entry("printer", .exact, http: true, direct: true)),
            Scenario("R10 entry beats NSAllowsLocalNetworking NO",
                     F.ats([localNetworking: no], exceptions: ["local": F.entry(subdomains: yes, insecureHTTP: yes)]),
                     "nas.local", all: .entry("local", .subdomain, http: true, direct: true)),
            Scenario("R10 entry with AAL NO", F.ats([arbitrary: no], exceptions: ["old.example": F.entry(insecureHTTP: yes)]),
                     "old.example", all: .entry("old.example", .exact, http: true)),
        ]

        // R5: a trailing dot is significant.
        let dotted = F.ats(exceptions: ["example.net.": F.entry(subdomains: yes, insecureHTTP: yes)])
        scenarios += [
            Scenario("R5 trailing-dot key matches the trailing-dot host", dotted, "example.net.",
                     all: .entry("example.net.", .exact, http: true)),
            Scenario("R5 trailing-dot key covers trailing-dot subdomains", dotted, "www.example.net.",
                     all: .entry("example.net.", .subdomain, http: true)),
            Scenario("R5 trailing-dot key does not match the dotless host", dotted, "example.net", all: .on()),
            Scenario("R5 trailing-dot key does not cover dotless subdomains", dotted, "www.example.net", all: .on()),
        ]

        // R5: keys with uppercase letters, a port, a scheme, a path or a wildcard never match.
        let badKeys = F.ats(exceptions: [
            "Example.net": F.entry(subdomains: yes, insecureHTTP: yes),
            "EXAMPLE.ORG": F.entry(subdomains: yes, insecureHTTP: yes),
            "example.info:8080": F.entry(subdomains: yes, insecureHTTP: yes),
            "*.example.biz": F.entry(subdomains: yes, insecureHTTP: yes),
            "*.example.biz.": F.entry(subdomains: yes, insecureHTTP: yes),
            "http://example.co": F.entry(subdomains: yes, insecureHTTP: yes),
            "example.tv/path": F.entry(subdomains: yes, insecureHTTP: yes),
            " example.me": F.entry(subdomains: yes, insecureHTTP: yes),
        ])
        for host in ["example.net", "www.example.net", "example.org", "example.info:8080", "example.info",
                     "www.example.biz", "example.biz", "example.co", "example.tv", "example.me"] {
            scenarios.append(Scenario("R5 malformed key never matches", badKeys, host, all: .on()))
        }

        // R3: non-boolean per-domain values keep the defaults; non-dictionary entries are ignored.
        let typed = F.ats(exceptions: [
            "strings.example": F.entry(subdomains: F.str("YES"), insecureHTTP: F.str("YES"), forwardSecrecy: F.str("NO")),
            "ints.example": F.entry(subdomains: .integer(1), insecureHTTP: .integer(1), forwardSecrecy: .integer(0)),
            "ignored.example": .string("NSExceptionAllowsInsecureHTTPLoads"),
            "array.example": .array([yes]),
        ])
        scenarios += [
            Scenario("R3 string values are ignored", typed, "strings.example",
                     all: .entry("strings.example", .exact)),
            Scenario("R3 string NSIncludesSubdomains does not include subdomains", typed, "www.strings.example",
                     all: .on()),
            Scenario("R3 integer values are ignored", typed, "ints.example", all: .entry("ints.example", .exact)),
            Scenario("R3 integer NSIncludesSubdomains does not include subdomains", typed, "www.ints.example",
                     all: .on()),
            Scenario("R3 a string entry is ignored", typed, "ignored.example", all: .on()),
            Scenario("R3 an array entry is ignored", typed, "array.example", all: .on()),
            Scenario("R3 explicit NO values",
                     F.ats(exceptions: ["no.example": F.entry(subdomains: no, insecureHTTP: no, forwardSecrecy: yes)]),
                     "no.example", all: .entry("no.example", .exact)),
            Scenario("R3 NSExceptionRequiresForwardSecrecy NO alone",
                     F.ats(exceptions: ["rsa.example": F.entry(forwardSecrecy: no)]),
                     "rsa.example", all: .entry("rsa.example", .exact, fs: false)),
            Scenario("R7 a TLD entry with subdomains covers every name under it",
                     F.ats(exceptions: ["test": F.entry(subdomains: yes, insecureHTTP: yes)]),
                     "a.b.test", all: .entry("test", .subdomain, http: true)),
        ]
        return scenarios
    }()

    /// R4: exactly the four version strings; anything else is TLSv1.2.
    static let versionScenarios: [Scenario] = {
        let cases: [(PlistValue, TLSVersion)] = [
            (F.str("TLSv1.0"), .tls10), (F.str("TLSv1.1"), .tls11), (F.str("TLSv1.2"), .tls12),
            (F.str("TLSv1.3"), .tls13),
            (F.str("TLSV1.3"), .tls12), (F.str("tlsv1.0"), .tls12), (F.str("TLSv1.4"), .tls12),
            (F.str("TLSv1.00"), .tls12), (F.str("TLSv1"), .tls12), (F.str("TLSv1.0 "), .tls12),
            (F.str(" TLSv1.0"), .tls12), (F.str("1.0"), .tls12), (F.str(""), .tls12), (F.str("DTLSv1.0"), .tls12),
            (F.str("SSLv3"), .tls12), (.integer(10), .tls12), (.real(1.0), .tls12), (yes, .tls12),
        ]
        return cases.map { value, version in
            Scenario("R4 NSExceptionMinimumTLSVersion \(value.shortDescription) -> \(version.rawValue)",
                     F.ats(exceptions: ["v.example": F.entry(insecureHTTP: no, minimumTLS: value)]), "v.example",
                     all: .entry("v.example", .exact, tls: version))
        }
    }()

    /// R8: IP and CIDR keys, ios17 only.
    static let ipScenarios: [Scenario] = {
        let policy = F.ats(exceptions: [
            "10.0.0.0/8": F.entry(insecureHTTP: yes, minimumTLS: F.str("TLSv1.0")),
            "10.1.0.0/16": F.entry(insecureHTTP: yes, minimumTLS: F.str("TLSv1.1")),
            "10.1.2.3": F.entry(),
            "8.8.8.8": F.entry(insecureHTTP: yes),
            "198.51/16": F.entry(insecureHTTP: yes, forwardSecrecy: no),
            "2001:db8::/32": F.entry(insecureHTTP: yes),
            "2001:db8:1::/48": F.entry(),
            "2001:db8:2::5": F.entry(insecureHTTP: yes, minimumTLS: F.str("TLSv1.3")),
            // NSIncludesSubdomains has no effect on IP keys: "2.3.4" is a name key and never covers 1.2.3.4.
            "2.3.4": F.entry(subdomains: yes, insecureHTTP: yes),
            "dns.google": F.entry(subdomains: yes, insecureHTTP: yes),
            "203.0.113.7": F.entry(subdomains: yes, insecureHTTP: yes),
        ])
        /// An IP entry under ios17; under ios10 every IP is direct and exempt; under ios9 the global rules.
        func ip(_ name: String, _ host: String, direct: Bool, ios17: Expect) -> Scenario {
            Scenario(name, policy, host, ios9: .on(direct: direct), ios10: .exempt, ios17: ios17)
        }
        return [
            ip("R8 CIDR /8", "10.9.9.9", direct: true,
               ios17: .entry("10.0.0.0/8", .cidr, http: true, tls: .tls10, rule: "R8", direct: true)),
            ip("R8 longest prefix /16 beats /8", "10.1.9.9", direct: true,
               ios17: .entry("10.1.0.0/16", .cidr, http: true, tls: .tls11, rule: "R8", direct: true)),
            ip("R8 exact key beats every prefix", "10.1.2.3", direct: true,
               ios17: .entry("10.1.2.3", .exact, rule: "R8", direct: true)),
            ip("R8 /16 neighbour of the exact key", "10.1.2.4", direct: true,
               ios17: .entry("10.1.0.0/16", .cidr, http: true, tls: .tls11, rule: "R8", direct: true)),
            ip("R8 exact external address", "8.8.8.8", direct: false,
               ios17: .entry("8.8.8.8", .exact, http: true, rule: "R8")),
            ip("R8 numeric spelling matches the canonical key", "134744072", direct: false,
               ios17: .entry("8.8.8.8", .exact, http: true, rule: "R8")),
            ip("R8 hex spelling matches the canonical key", "0x8.0x8.0x8.0x8", direct: false,
               ios17: .entry("8.8.8.8", .exact, http: true, rule: "R8")),
            ip("R8 IPv4-mapped host matches the IPv4 key", "[::ffff:8.8.8.8]", direct: false,
               ios17: .entry("8.8.8.8", .exact, http: true, rule: "R8")),
            ip("R8 10/8-style padding (198.51/16)", "198.51.100.1", direct: false,
               ios17: .entry("198.51/16", .cidr, http: true, fs: false, rule: "R8")),
            ip("R8 IPv6 CIDR /32", "[2001:db8:ff::1]", direct: false,
               ios17: .entry("2001:db8::/32", .cidr, http: true, rule: "R8")),
            ip("R8 IPv6 longest prefix /48", "[2001:db8:1::1]", direct: false,
               ios17: .entry("2001:db8:1::/48", .cidr, rule: "R8")),
            ip("R8 IPv6 exact key, any spelling of the host", "[2001:DB8:2:0:0:0:0:5]", direct: false,
               ios17: .entry("2001:db8:2::5", .exact, http: true, tls: .tls13, rule: "R8")),
            ip("R8 no matching key", "8.8.4.4", direct: false, ios17: .on()),
            ip("R8 no matching key, local address is exempt", "192.168.1.1", direct: true, ios17: .exempt),
            ip("R8 a name key never covers an address (no subdomain walk for IPs)", "1.2.3.4", direct: false,
               ios17: .on()),
            ip("R8 a name key for a resolver name never covers its address", "[2001:4860:4860::8888]", direct: false,
               ios17: .on()),
            ip("R8 NSIncludesSubdomains on an IP key has no effect on other addresses", "203.0.113.70",
               direct: false, ios17: .on()),
            ip("R8 NSIncludesSubdomains on an IP key: the address itself", "203.0.113.7", direct: false,
               ios17: .entry("203.0.113.7", .exact, http: true, rule: "R8")),
            // An IP key never covers a name (the name that resolves to it included).
            Scenario("R8 a name is never covered by an IP key", policy, "dns.google",
                     all: .entry("dns.google", .exact, http: true)),
        ]
    }()

    /// R8 with IP keys that are not in canonical text.
    ///
    /// R5 makes keys exact strings and R8 matches an exact IP key as canonical text, as Apple's evaluator
    /// does (it looks exact address keys up as strings): `2001:DB8::1`, `2001:db8:0:0:0:0:0:2`,
    /// `2001:0db8::3` and `::ffff:192.0.2.1` never match (lint reports them with the canonical form).
    static let canonicalKeyScenarios: [Scenario] = {
        let policy = F.ats(exceptions: [
            "2001:DB8::1": F.entry(insecureHTTP: yes),
            "2001:db8:0:0:0:0:0:2": F.entry(insecureHTTP: yes),
            "2001:0db8::3": F.entry(insecureHTTP: yes),
            "::ffff:192.0.2.1": F.entry(insecureHTTP: yes),
            "2001:db8::4": F.entry(insecureHTTP: yes),
            "010.0.0.9": F.entry(insecureHTTP: yes),
            "192.0.2.9.": F.entry(insecureHTTP: yes),
        ])
        var scenarios = ["[2001:db8::1]", "[2001:db8::2]", "[2001:db8::3]", "192.0.2.1"].map { host in
            Scenario("R8 non-canonical IP key never matches", policy, host, ios9: .on(), ios10: .exempt, ios17: .on())
        }
        scenarios.append(Scenario("R8 canonical IPv6 key matches any spelling of the address", policy,
                                  "[2001:DB8:0::4]", ios9: .on(), ios10: .exempt,
                                  ios17: .entry("2001:db8::4", .exact, http: true, rule: "R8")))
        scenarios.append(Scenario("R8 IPv4 key with a leading zero never matches", policy, "10.0.0.9",
                                  ios9: .on(direct: true), ios10: .exempt, ios17: .exempt))
        scenarios.append(Scenario("R8 IPv4 key with a trailing dot never matches", policy, "192.0.2.9",
                                  ios9: .on(), ios10: .exempt, ios17: .on()))
        // CIDR keys are parsed (R8 pads 10/8); a CIDR key with host bits set is read as its network
        // (lint reports it). The spec does not say; Apple's evaluator masks the same way.
        scenarios.append(Scenario("R8 CIDR key with host bits", F.ats(exceptions: ["192.0.2.77/24": F.entry(insecureHTTP: yes)]),
                                  "192.0.2.5", ios9: .on(), ios10: .exempt,
                                  ios17: .entry("192.0.2.77/24", .cidr, http: true, rule: "R8")))
        scenarios.append(Scenario("R8 10/8 is padded to 10.0.0.0/8", F.ats(exceptions: ["10/8": F.entry(insecureHTTP: yes)]),
                                  "10.200.1.1", ios9: .on(direct: true), ios10: .exempt,
                                  ios17: .entry("10/8", .cidr, http: true, rule: "R8", direct: true)))
        scenarios.append(Scenario("R8 invalid CIDR key never matches", F.ats(exceptions: ["192.0.2.0/33": F.entry(insecureHTTP: yes)]),
                                  "192.0.2.5", ios9: .on(), ios10: .exempt, ios17: .on()))
        scenarios.append(Scenario("R8 /0 covers every IPv4 address, longer prefixes still win",
                                  F.ats(exceptions: ["0.0.0.0/0": F.entry(insecureHTTP: yes), "8.8.0.0/16": F.entry()]),
                                  "8.8.8.8", ios9: .on(), ios10: .exempt, ios17: .entry("8.8.0.0/16", .cidr, rule: "R8")))
        scenarios.append(Scenario("R8 /0 covers every IPv4 address",
                                  F.ats(exceptions: ["0.0.0.0/0": F.entry(insecureHTTP: yes), "8.8.0.0/16": F.entry()]),
                                  "9.9.9.9", ios9: .on(), ios10: .exempt,
                                  ios17: .entry("0.0.0.0/0", .cidr, http: true, rule: "R8")))
        scenarios.append(Scenario("R8 an IPv4 /0 never covers IPv6",
                                  F.ats(exceptions: ["0.0.0.0/0": F.entry(insecureHTTP: yes)]),
                                  "[2001:db8::9]", ios9: .on(), ios10: .exempt, ios17: .on()))
        return scenarios
    }()

    /// R9: built-in exceptions.
    static let builtinScenarios: [Scenario] = {
        var scenarios: [Scenario] = [
            Scenario("R9 apple.com", [:], "apple.com", all: .builtin("apple.com", .exact)),
            Scenario("R9 csd4.apple.com via apple.com", [:], "csd4.apple.com", all: .builtin("apple.com", .subdomain)),
            Scenario("R9 ls.apple.com TLSv1.0", [:], "ls.apple.com", all: .builtin("ls.apple.com", .exact, tls: .tls10)),
            Scenario("R9 subdomain of ls.apple.com: most specific built-in", [:], "gsp.ls.apple.com",
                     all: .builtin("ls.apple.com", .subdomain, tls: .tls10)),
            Scenario("R9 gs.apple.com", [:], "gs.apple.com", all: .builtin("gs.apple.com", .exact, tls: .tls10)),
            Scenario("R9 geo.apple.com", [:], "x.geo.apple.com", all: .builtin("geo.apple.com", .subdomain, tls: .tls10)),
            Scenario("R9 is.autonavi.com", [:], "m.is.autonavi.com",
                     all: .builtin("is.autonavi.com", .subdomain, tls: .tls10)),
            Scenario("R9 apple-mapkit.com", [:], "apple-mapkit.com",
                     all: .builtin("apple-mapkit.com", .exact, tls: .tls10)),
            Scenario("R9 setup.icloud.com TLSv1.2", [:], "p01-setup.setup.icloud.com",
                     all: .builtin("setup.icloud.com", .subdomain)),
            Scenario("R9 icloud.com is not built in", [:], "icloud.com", all: .on()),
            Scenario("R9 autonavi.com is not built in", [:], "autonavi.com", all: .on()),
            Scenario("R9 look-alike apple.com.evil.example", [:], "apple.com.evil.example", all: .on()),
            Scenario("R9 look-alike notapple.com", [:], "notapple.com", all: .on()),
            Scenario("R9 built-ins decide over NSAllowsLocalNetworking and context keys",
                     [localNetworking: no, media: yes, web: yes], "csd4.apple.com",
                     all: .builtin("apple.com", .subdomain)),
        ]
        // --no-builtin-exceptions.
        scenarios += [
            Scenario("R9 built-ins off: csd4.apple.com", [:], "csd4.apple.com", builtins: false, all: .on()),
            Scenario("R9 built-ins off: ls.apple.com", [:], "ls.apple.com", builtins: false, all: .on()),
            Scenario("R9 built-ins off: an app entry still applies",
                     F.ats(exceptions: ["ls.apple.com": F.entry(insecureHTTP: yes)]), "ls.apple.com", builtins: false,
                     all: .entry("ls.apple.com", .exact, http: true)),
        ]
        // An app entry with the same key replaces the built-in entirely; the walk runs over the merged table.
        let replaced = F.ats(exceptions: ["apple.com": F.entry()])
        scenarios += [
            Scenario("R9 app apple.com without subdomains: apple.com itself", replaced, "apple.com",
                     all: .entry("apple.com", .exact)),
            Scenario("R9 app apple.com without subdomains: csd4.apple.com falls to the global rules", replaced,
                     "csd4.apple.com", all: .on()),
            Scenario("R9 app apple.com without subdomains: ls.apple.com keeps its built-in", replaced,
                     "ls.apple.com", all: .builtin("ls.apple.com", .exact, tls: .tls10)),
            Scenario("R9 app apple.com without subdomains: under ls.apple.com", replaced, "a.ls.apple.com",
                     all: .builtin("ls.apple.com", .subdomain, tls: .tls10)),
            Scenario("R9 app apple.com without subdomains, AAL YES", F.ats([arbitrary: yes], exceptions: ["apple.com": F.entry()]),
                     "csd4.apple.com", all: .off()),
            Scenario("R9 app apple.com with subdomains replaces the built-in for csd4",
                     F.ats(exceptions: ["apple.com": F.entry(subdomains: yes)]), "csd4.apple.com",
                     all: .entry("apple.com", .subdomain)),
            Scenario("R9 app ls.apple.com without subdomains: its subdomains walk on to built-in apple.com",
                     F.ats(exceptions: ["ls.apple.com": F.entry()]), "gsp.ls.apple.com",
                     all: .builtin("apple.com", .subdomain)),
            Scenario("R9 app ls.apple.com without subdomains: ls.apple.com itself",
                     F.ats(exceptions: ["ls.apple.com": F.entry()]), "ls.apple.com",
                     all: .entry("ls.apple.com", .exact)),
            // R3: an app value that is not a dictionary is ignored, so the built-in stays.
            Scenario("R9 app apple.com that is not a dictionary leaves the built-in",
                     F.ats(exceptions: ["apple.com": .string("no")]), "csd4.apple.com",
                     all: .builtin("apple.com", .subdomain)),
            Scenario("R9 app Apple.com (uppercase) does not replace the built-in",
                     F.ats(exceptions: ["Apple.com": F.entry()]), "csd4.apple.com",
                     all: .builtin("apple.com", .subdomain)),
        ]
        return scenarios
    }()

    static let allScenarios = globalScenarios + localScenarios + nameScenarios + versionScenarios + ipScenarios
        + canonicalKeyScenarios + builtinScenarios

    static let rows: [Row] = allScenarios.flatMap { scenario in
        [Scheme.http, .https].flatMap { scheme in
            Profile.allCases.flatMap { profile in
                LoadContext.allCases.map { Row(scenario: scenario, scheme: scheme, profile: profile, context: $0) }
            }
        }
    }

    // MARK: The table test

    @Test("decision table", arguments: rows)
    func decide(_ row: Row) throws {
        let scenario = row.scenario
        let engine = F.engine(scenario.policy, profile: row.profile, builtins: scenario.builtins,
                              localNetworks: scenario.localNetworks)
        let decision = engine.decide(try Destination.parse(url: row.url), context: row.context)
        var expected = scenario.expect(row.profile, row.context)
        if row.scheme == .https {
            // INTERFACE.md: an https load is allowed; the requirements apply to its handshake.
            expected.action = .allow
            expected.reason = nil
        }
        #expect(decision.ats == expected.ats)
        #expect(decision.action == expected.action)
        #expect(decision.reason == expected.reason)
        #expect(decision.requirements == expected.requirements)
        #expect(decision.exception?.entry.displayName == expected.exception)
        if let match = expected.match { #expect(decision.exception?.kind == match) }
        #expect(decision.rule == expected.rule)
        #expect(decision.direct == expected.direct)
        #expect(decision.context == row.context)
        #expect(decision.profile == row.profile)
        #expect(decision.upgradeVia == nil)

        // Section 7: a block's sentence names the host and the key that would allow the load.
        let message = decision.message
        #expect(message.contains(decision.destination.host.description))
        if decision.action == .block {
            #expect(message.hasPrefix("cleartext HTTP to \(decision.destination.host) is not allowed: "))
            #expect(message.contains("NSExceptionAllowsInsecureHTTPLoads"), "\(message)")
        }
    }
}

/// Actions per cleartext mode, R13/R14 requirements, R17 pins and the block sentences.
@Suite("Decisions: actions, requirements, pins, messages")
struct DecisionDetailTests {
    typealias F = PolicyFixtures

    func decide(_ url: String, _ dictionary: [String: PlistValue] = [:], profile: Profile = .ios17,
                context: LoadContext = .app, cleartext: CleartextMode = .block,
                builtins: Bool = true) throws -> Decision {
        try F.engine(dictionary, profile: profile, builtins: builtins, cleartext: cleartext)
            .decide(Destination.parse(url: url), context: context)
    }

    // MARK: Section 7: cleartext modes

    struct ModeCase: Sendable, CustomTestStringConvertible {
        var url: String
        var policy: [String: PlistValue]
        var mode: CleartextMode
        var action: Action
        var reason: BlockReason?
        var upgradeVia: CleartextMode?
        var testDescription: String { "\(mode.rawValue) \(url) \(policy.keys.sorted())" }
    }

    static let modeCases: [ModeCase] = {
        let aal: [String: PlistValue] = [ATSKey.allowsArbitraryLoads: F.yes]
        let entry = F.ats(exceptions: ["api.example.com": F.entry()])
        return [
            // Cleartext forbidden: block (403), upgrade (carried over HTTPS), redirect (308).
            ModeCase(url: "http://api.example.com/", policy: [:], mode: .block, action: .block, reason: .cleartextHTTP),
            ModeCase(url: "http://api.example.com/", policy: [:], mode: .upgrade, action: .upgrade,
                     upgradeVia: .upgrade),
            // Ambiguity: section 7 lists only allow/block/upgrade; a redirect is reported as `upgrade` with
            // upgradeVia = redirect, and no reason.
            ModeCase(url: "http://api.example.com/", policy: [:], mode: .redirect, action: .upgrade,
                     upgradeVia: .redirect),
            ModeCase(url: "http://api.example.com/", policy: entry, mode: .upgrade, action: .upgrade,
                     upgradeVia: .upgrade),
            ModeCase(url: "http://api.example.com/", policy: entry, mode: .redirect, action: .upgrade,
                     upgradeVia: .redirect),
            // Cleartext allowed: every mode allows.
            ModeCase(url: "http://api.example.com/", policy: aal, mode: .block, action: .allow),
            ModeCase(url: "http://api.example.com/", policy: aal, mode: .upgrade, action: .allow),
            ModeCase(url: "http://api.example.com/", policy: aal, mode: .redirect, action: .allow),
            ModeCase(url: "http://api.example.com/", policy: F.ats(exceptions: ["example.com": F.entry(subdomains: F.yes, insecureHTTP: F.yes)]),
                     mode: .upgrade, action: .allow),
            ModeCase(url: "http://api.example.com/", policy: F.ats(exceptions: ["example.com": F.entry(subdomains: F.yes, insecureHTTP: F.yes)]),
                     mode: .redirect, action: .allow),
            ModeCase(url: "http://csd4.apple.com/", policy: [:], mode: .upgrade, action: .allow),
            // https is always allowed.
            ModeCase(url: "https://api.example.com/", policy: [:], mode: .block, action: .allow),
            ModeCase(url: "https://api.example.com/", policy: [:], mode: .upgrade, action: .allow),
            ModeCase(url: "https://api.example.com/", policy: [:], mode: .redirect, action: .allow),
            ModeCase(url: "https://api.example.com/", policy: entry, mode: .block, action: .allow),
        ]
    }()

    @Test("cleartext modes", arguments: modeCases)
    func cleartextMode(_ row: ModeCase) throws {
        for profile in Profile.allCases {
            for context in LoadContext.allCases {
                let decision = try decide(row.url, row.policy, profile: profile, context: context, cleartext: row.mode)
                #expect(decision.action == row.action, "\(profile) \(context)")
                #expect(decision.reason == row.reason, "\(profile) \(context)")
                #expect(decision.upgradeVia == row.upgradeVia, "\(profile) \(context)")
            }
        }
    }

    @Test("an exempt local destination is never upgraded; under ios9 it is")
    func exemptNotUpgraded() throws {
        for profile in [Profile.ios10, .ios17] {
            #expect(try decide("http://printer.local/", profile: profile, cleartext: .upgrade).action == .allow)
        }
        let ios9 = try decide("http://printer.local/", profile: .ios9, cleartext: .upgrade)
        #expect(ios9.action == .upgrade)
        #expect(ios9.upgradeVia == .upgrade)
    }

    @Test("upgrade and redirect keep the host's requirements")
    func upgradeRequirements() throws {
        let policy = F.ats(exceptions: ["api.example.com": F.entry(minimumTLS: F.str("TLSv1.3"), forwardSecrecy: F.no)])
        let upgraded = try decide("http://api.example.com/", policy, cleartext: .upgrade)
        #expect(upgraded.requirements == F.entryRequirements(http: false, tls: .tls13, fs: false))
        #expect(upgraded.message.contains("upgraded to HTTPS"))
        let redirected = try decide("http://api.example.com/", policy, cleartext: .redirect)
        #expect(redirected.message.contains("redirected to HTTPS"))
    }

    // MARK: R13

    @Test("R13: ATS on and ATS off")
    func r13() {
        #expect(Requirements.full == Requirements(cleartextAllowed: false, minimumTLSVersion: .tls12,
                                                  forwardSecrecy: true, certificateChecks: true))
        #expect(Requirements.none == Requirements(cleartextAllowed: true, minimumTLSVersion: nil,
                                                  forwardSecrecy: false, certificateChecks: false))
    }

    // MARK: R14

    @Test("R14: cipher policy from the requirements", arguments: [
        (Requirements.full, CipherPolicy.forwardSecrecy),
        (Requirements.none, .any),
        (F.entryRequirements(http: false, tls: .tls12, fs: true), .forwardSecrecy),
        (F.entryRequirements(http: false, tls: .tls10, fs: false), .forwardSecrecyOrRSA),
        (F.entryRequirements(http: true, tls: .tls12, fs: false), .any),
        // Forward secrecy required wins even when cleartext is allowed.
        (F.entryRequirements(http: true, tls: .tls12, fs: true), .forwardSecrecy),
    ])
    func r14(_ requirements: Requirements, _ expected: CipherPolicy) {
        #expect(requirements.cipherPolicy == expected)
    }

    @Test("R14 through decisions")
    func r14Decisions() throws {
        #expect(try decide("https://api.example.com/").requirements.cipherPolicy == .forwardSecrecy)
        #expect(try decide("https://api.example.com/", [ATSKey.allowsArbitraryLoads: F.yes])
            .requirements.cipherPolicy == .any)
        // Built-ins: HTTP allowed, no forward secrecy: unrestricted.
        #expect(try decide("https://csd4.apple.com/").requirements.cipherPolicy == .any)
        let rsa = F.ats(exceptions: ["api.example.com": F.entry(forwardSecrecy: F.no)])
        #expect(try decide("https://api.example.com/", rsa).requirements.cipherPolicy == .forwardSecrecyOrRSA)
    }

    // MARK: R17

    static let digest = Data(repeating: 0xAB, count: 32).base64EncodedString()
    static let otherDigest = Data(repeating: 0xCD, count: 32).base64EncodedString()

    static func identities(_ values: [String]) -> PlistValue {
        .array(values.map { .dictionary([ATSKey.spkiSHA256: .string($0)]) })
    }

    static let pins: [String: PlistValue] = F.ats(pins: [
        "example.com": .dictionary([
            ATSKey.includesSubdomains: F.yes,
            ATSKey.pinnedCAIdentities: identities([digest, otherDigest]),
        ]),
        "exact.org": .dictionary([
            ATSKey.pinnedLeafIdentities: identities([digest, "not base64!", Data(count: 16).base64EncodedString()]),
        ]),
        "both.net": .dictionary([
            ATSKey.includesSubdomains: .string("YES"),
            ATSKey.pinnedCAIdentities: identities([digest]),
            ATSKey.pinnedLeafIdentities: identities([otherDigest]),
        ]),
        "a.example.com": .string("not a dictionary"),
    ])

    @Test("R17: pinned-domain lookup", arguments: [
        ("example.com", "example.com"),
        ("api.example.com", "example.com"),      // immediate parent with NSIncludesSubdomains
        ("a.example.com", "example.com"),        // its own value is not a dictionary, so the parent's
        ("v1.api.example.com", nil),             // the grandparent does not apply
        ("exact.org", "exact.org"),
        ("www.exact.org", nil),                  // no NSIncludesSubdomains
        ("both.net", "both.net"),
        ("www.both.net", nil),                   // R1: a string is not YES
        ("EXAMPLE.COM", "example.com"),
        ("example.com.", nil),
        ("other.com", nil),
        ("93.184.216.34", nil),
    ] as [(String, String?)])
    func pinLookup(_ host: String, _ key: String?) throws {
        let decision = try decide("https://\(host)/", Self.pins)
        #expect(decision.pin?.key == key)
    }

    @Test("R17: identities are decoded, invalid ones dropped")
    func pinIdentities() throws {
        let policy = F.policy(Self.pins)
        let example = try #require(policy.pinnedDomains["example.com"])
        #expect(example.includesSubdomains)
        #expect(example.caIdentities == [Data(repeating: 0xAB, count: 32), Data(repeating: 0xCD, count: 32)])
        #expect(example.leafIdentities == nil)
        let exact = try #require(policy.pinnedDomains["exact.org"])
        #expect(!exact.includesSubdomains)
        #expect(exact.leafIdentities == [Data(repeating: 0xAB, count: 32)])
        #expect(exact.caIdentities == nil)
        let both = try #require(policy.pinnedDomains["both.net"])
        #expect(both.caIdentities?.count == 1 && both.leafIdentities?.count == 1)
    }

    @Test("R17: pins are independent of exceptions and of ATS state")
    func pinsIndependent() throws {
        var dictionary = Self.pins
        dictionary[ATSKey.allowsArbitraryLoads] = F.yes
        let decision = try decide("http://api.example.com/", dictionary)
        #expect(decision.ats == .off)
        #expect(decision.pin?.key == "example.com")
    }

    // MARK: Section 7 sentences

    @Test("the spec's example sentence, exactly")
    func specExample() throws {
        let decision = try decide("http://api.example.com/v1")
        #expect(decision.action == .block)
        #expect(decision.message == "cleartext HTTP to api.example.com is not allowed: no NSExceptionDomains entry"
            + " allows it (add NSExceptionAllowsInsecureHTTPLoads=YES for api.example.com)")
    }

    struct MessageCase: Sendable, CustomTestStringConvertible {
        var name: String
        var url: String
        var policy: [String: PlistValue]
        var profile: Profile = .ios17
        var context: LoadContext = .app
        /// Fragments the sentence must contain: the cause and the key that would change the outcome.
        var fragments: [String]
        var testDescription: String { name }
    }

    static let messageCases: [MessageCase] = [
        MessageCase(name: "entry without NSExceptionAllowsInsecureHTTPLoads", url: "http://api.example.com/",
                    policy: F.ats(exceptions: ["example.com": F.entry(subdomains: F.yes)]),
                    fragments: ["NSExceptionDomains entry 'example.com'", "NSExceptionAllowsInsecureHTTPLoads=YES"]),
        MessageCase(name: "local destination with NSAllowsLocalNetworking NO", url: "http://printer.local/",
                    policy: [ATSKey.allowsLocalNetworking: F.no],
                    fragments: ["printer.local", "NSAllowsLocalNetworking",
                                "NSExceptionAllowsInsecureHTTPLoads=YES for printer.local"]),
        MessageCase(name: "AAL ignored because of ForMedia", url: "http://api.example.com/",
                    policy: [ATSKey.allowsArbitraryLoads: F.yes, ATSKey.allowsArbitraryLoadsForMedia: F.yes],
                    fragments: ["NSAllowsArbitraryLoads=YES is ignored", "NSAllowsArbitraryLoadsForMedia",
                                "NSExceptionAllowsInsecureHTTPLoads=YES"]),
        MessageCase(name: "AAL ignored because of InWebContent", url: "http://api.example.com/",
                    policy: [ATSKey.allowsArbitraryLoads: F.yes, ATSKey.allowsArbitraryLoadsInWebContent: F.no],
                    fragments: ["NSAllowsArbitraryLoads=YES is ignored", "NSAllowsArbitraryLoadsInWebContent"]),
        MessageCase(name: "AAL ignored because of NSAllowsLocalNetworking", url: "http://api.example.com/",
                    policy: [ATSKey.allowsArbitraryLoads: F.yes, ATSKey.allowsLocalNetworking: F.yes],
                    fragments: ["NSAllowsArbitraryLoads=YES is ignored", "NSAllowsLocalNetworking"]),
        MessageCase(name: "R1: AAL is a string", url: "http://api.example.com/",
                    policy: [ATSKey.allowsArbitraryLoads: .string("YES")],
                    fragments: ["NSAllowsArbitraryLoads is a string", "\"YES\"", "not a boolean"]),
        MessageCase(name: "R1: AAL is an integer", url: "http://api.example.com/",
                    policy: [ATSKey.allowsArbitraryLoads: .integer(1)],
                    fragments: ["NSAllowsArbitraryLoads is an integer (1)"]),
        MessageCase(name: "ios9 unqualified name", url: "http://printer/", policy: [:], profile: .ios9,
                    fragments: ["ios9", "an unqualified host needs an NSExceptionDomains entry"]),
        MessageCase(name: "ios9 local address", url: "http://10.0.0.1/", policy: [:], profile: .ios9,
                    fragments: ["ios9", "an ip host needs an NSExceptionDomains entry"]),
        MessageCase(name: "ios9 local name", url: "http://nas.local/", policy: [:], profile: .ios9,
                    fragments: ["ios9", "a local host needs an NSExceptionDomains entry"]),
        MessageCase(name: "media key only affects its context", url: "http://api.example.com/",
                    policy: [ATSKey.allowsArbitraryLoadsForMedia: F.yes], context: .web,
                    fragments: ["NSAllowsArbitraryLoadsForMedia", "NSExceptionAllowsInsecureHTTPLoads=YES"]),
        MessageCase(name: "CIDR entry", url: "http://10.1.2.3/",
                    policy: F.ats(exceptions: ["10.0.0.0/8": F.entry()]),
                    fragments: ["NSExceptionDomains entry '10.0.0.0/8' contains 10.1.2.3",
                                "NSExceptionAllowsInsecureHTTPLoads=YES"]),
        MessageCase(name: "app entry replacing a built-in", url: "http://apple.com/",
                    policy: F.ats(exceptions: ["apple.com": F.entry()]),
                    fragments: ["NSExceptionDomains entry 'apple.com'", "NSExceptionAllowsInsecureHTTPLoads=YES"]),
        // Allowed loads name the key that would enforce ATS.
        MessageCase(name: "exempt", url: "http://printer.local/", policy: [:],
                    fragments: ["exempt", "NSAllowsLocalNetworking=NO"]),
        MessageCase(name: "built-in", url: "http://csd4.apple.com/", policy: [:],
                    fragments: ["built-in exception 'apple.com'", "an app entry 'apple.com' would replace it"]),
        MessageCase(name: "arbitrary loads", url: "http://api.example.com/",
                    policy: [ATSKey.allowsArbitraryLoads: F.yes],
                    fragments: ["NSAllowsArbitraryLoads=YES turns ATS off", "NSExceptionDomains entry for api.example.com"]),
        MessageCase(name: "media context", url: "http://api.example.com/",
                    policy: [ATSKey.allowsArbitraryLoadsForMedia: F.yes], context: .media,
                    fragments: ["NSAllowsArbitraryLoadsForMedia=YES turns ATS off for media"]),
        MessageCase(name: "https under an entry", url: "https://api.example.com/",
                    policy: F.ats(exceptions: ["api.example.com": F.entry(minimumTLS: F.str("TLSv1.3"))]),
                    fragments: ["TLSv1.3 or later", "NSExceptionMinimumTLSVersion"]),
        MessageCase(name: "https by default", url: "https://api.example.com/", policy: [:],
                    fragments: ["TLSv1.2 or later", "forward secrecy", "certificate checks"]),
    ]

    @Test("sentences name the cause and the key", arguments: messageCases)
    func sentences(_ row: MessageCase) throws {
        let message = try decide(row.url, row.policy, profile: row.profile, context: row.context).message
        for fragment in row.fragments {
            #expect(message.contains(fragment), "\(message)")
        }
    }

    // MARK: Decision bookkeeping

    @Test("a block always has a reason, other actions never")
    func reasonOnlyForBlock() throws {
        for url in ["http://api.example.com/", "https://api.example.com/", "http://printer/", "http://csd4.apple.com/"] {
            for mode in CleartextMode.allCases {
                let decision = try decide(url, cleartext: mode)
                #expect((decision.action == .block) == (decision.reason != nil), "\(url) \(mode)")
            }
        }
    }

    @Test("the engine is pure: the same input gives the same decision")
    func deterministic() throws {
        let engine = F.engine(F.ats([ATSKey.allowsArbitraryLoads: F.yes],
                                    exceptions: ["secure.example.org": F.entry()]))
        let destination = try Destination.parse(url: "http://secure.example.org/")
        let first = engine.decide(destination)
        for _ in 0..<3 {
            let again = engine.decide(destination)
            #expect(again.action == first.action)
            #expect(again.message == first.message)
        }
    }
}
