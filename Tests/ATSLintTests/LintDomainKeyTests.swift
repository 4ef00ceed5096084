import Testing
@testable import ATSLint
@testable import ATSPolicy

/// Exception and pin keys that can never match (R5), IP and CIDR keys (R8), pin keys (R17).
@Suite struct LintDomainKeyTests {
    typealias F = LintFixtures

    static func path(_ key: String) -> String { LintKeyPath().appending(ATSKey.exceptionDomains).appending(key).description }

    /// (key, rule, the suggested key or nil)
    static let neverMatching: [(String, LintRule, String?)] = [
        ("Example.com", .domainKeyUppercase, "example.com"),
        ("example.com:8443", .domainKeyPort, "example.com"),
        ("https://example.com", .domainKeyScheme, "example.com"),
        ("example.com/api", .domainKeyPath, "example.com"),
        ("*.example.com", .domainKeyWildcard, "example.com"),
        (".example.com", .domainKeyWildcard, "example.com"),
        ("*", .domainKeyWildcard, nil),
        ("api.*.example.com", .domainKeyWildcard, nil),
        (" example.com", .domainKeyWhitespace, "example.com"),
        ("example.com\n", .domainKeyWhitespace, "example.com"),
        ("", .domainKeyEmpty, nil),
        ("exa!mple.com", .domainKeyInvalid, nil),
        ("example..com", .domainKeyInvalid, nil),
        ("example.com..", .domainKeyInvalid, nil),
        ("[2001:db8::1]", .domainKeyInvalid, "2001:db8::1"),
        ("HTTPS://Example.com:8443/api", .domainKeyScheme, "example.com"),
        ("user@example.com", .domainKeyInvalid, "example.com"),
    ]

    @Test(arguments: neverMatching)
    func keysThatNeverMatchAreErrors(key: String, rule: LintRule, suggestion: String?) throws {
        let finding = try F.lint(exception: key, F.dict([:])).one(rule)
        #expect(finding.severity == .error)
        #expect(!finding.justification)
        #expect(finding.keyPath.description == Self.path(key))
        #expect(finding.message.contains("never matches"))
        #expect(finding.message.contains("(R5)"))
        if let suggestion {
            #expect(finding.message.contains("Use '\(suggestion)'"))
        } else {
            #expect(!finding.message.contains("Use '"))
        }
    }

    /// The linter's "never matches" agrees with the engine, and its suggestion does match.
    @Test(arguments: neverMatching.compactMap { key, _, suggestion in suggestion.map { (key, $0) } })
    func theEngineAgrees(key: String, suggestion: String) throws {
        let host = try Host.parse(suggestion)
        let destination = Destination(host: host, port: 80, scheme: .http)
        let entry = F.dict([ATSKey.exceptionAllowsInsecureHTTPLoads: F.yes, ATSKey.includesSubdomains: F.yes])
        func decide(_ key: String) -> Decision {
            let source = F.source([ATSKey.exceptionDomains: .dictionary([key: entry])])
            return DecisionEngine(policy: Policy(source)).decide(destination)
        }
        #expect(decide(key).exception == nil)
        #expect(decide(suggestion).exception?.entry.key == suggestion)
    }

    @Test(arguments: ["example.com", "localhost", "xn--bcher-kva.de", "sub.example.co.uk", "under_score.example.com",
                      "a-b.example.com"])
    func validNameKeysAreClean(key: String) {
        // localhost is direct, so its entry ends the local exemption (reported on its own, R10).
        #expect(F.lint(exception: key, F.dict([:])).filter { $0.rule != .exceptionEnforcesATS }.isEmpty)
        #expect(F.lint(exception: key, F.dict([ATSKey.exceptionAllowsInsecureHTTPLoads: F.yes]))
            .filter { $0.rule != .insecureHTTPLoads }.isEmpty)
        #expect(Self.engineMatches(key: key, host: key))
    }

    /// Whether the engine applies an entry `key` to `host`.
    static func engineMatches(key: String, host: String) -> Bool {
        guard let parsed = try? Host.parse(host) else { return false }
        let source = F.source([ATSKey.exceptionDomains: .dictionary([key: F.dict([:])])])
        let decision = DecisionEngine(policy: Policy(source)).decide(Destination(host: parsed, port: 443, scheme: .https))
        return decision.exception?.entry.key == key
    }

    @Test func aWildcardSuggestsIncludesSubdomainsUnlessTheEntryHasIt() throws {
        let without = try F.lint(exception: "*.example.com", F.dict([:])).one(.domainKeyWildcard)
        #expect(without.message.contains("Use 'example.com' with NSIncludesSubdomains=YES"))
        let with = try F.lint(exception: "*.example.com", F.dict([ATSKey.includesSubdomains: F.yes])).one(.domainKeyWildcard)
        #expect(with.message.contains("its NSIncludesSubdomains=YES covers the subdomains"))
    }

    @Test func aSuggestionThatIsAlreadyAKeySaysToMerge() throws {
        let findings = F.lint([ATSKey.exceptionDomains: .dictionary(["Example.com": F.dict([:]), "example.com": F.dict([:])])])
        let finding = try findings.one(.domainKeyUppercase)
        #expect(finding.message.contains("An entry 'example.com' already exists"))
    }

    @Test func aKeyWithManyProblemsIsOneFindingNamingThemAll() throws {
        let findings = F.lint(exception: "HTTPS://Example.com:8443/api", F.dict([:]))
        #expect(findings.count == 1)
        let message = try findings.one(.domainKeyScheme).message
        for trait in ["a scheme ('HTTPS://')", "a path ('/api')", "a port (':8443')", "uppercase letters"] {
            #expect(message.contains(trait))
        }
    }

    @Test func aTrailingDotIsLowAndSaysWhatItMatches() throws {
        let findings = F.lint(exception: "example.com.", F.dict([:]))
        let finding = try findings.one(.domainKeyTrailingDot)
        #expect(finding.severity == .low)
        #expect(finding.keyPath.description == Self.path("example.com."))
        #expect(finding.message.contains("matches only hosts spelled 'example.com.'"))
        #expect(finding.message.contains("Write 'example.com'"))
        #expect(findings.count == 1)
        #expect(Self.engineMatches(key: "example.com.", host: "example.com."))
        #expect(!Self.engineMatches(key: "example.com.", host: "example.com"))
    }

    // MARK: IP and CIDR keys (R8)

    @Test(arguments: [("10.0.0.0/33", "prefix length 33"), ("10.0.0.256/8", "'10.0.0.256' is not an IPv4 network"),
                      ("2001:db8::/129", "prefix length 129"), ("2001:db8:::/32", "is not an IPv6 address"),
                      ("010.0.0.0/8", "is not an IPv4 network")])
    func invalidCIDRKeysAreErrors(key: String, problem: String) throws {
        let findings = F.lint(exception: key, F.dict([:]))
        let finding = try findings.one(.cidrInvalid)
        #expect(finding.severity == .error)
        #expect(finding.keyPath.description == Self.path(key))
        #expect(finding.message.contains(problem))
        #expect(finding.message.contains("never matches (R8)"))
        #expect(findings.with(.ipKeyRequiresIOS17).isEmpty)
    }

    @Test func hostBitsInACIDRKeyAreLow() throws {
        let finding = try F.lint(exception: "10.0.0.1/8", F.dict([:])).one(.cidrHostBits)
        #expect(finding.severity == .low)
        #expect(finding.message.contains("read as 10.0.0.0/8"))
        #expect(F.lint(exception: "10.0.0.0/8", F.dict([:])).with(.cidrHostBits).isEmpty)
        #expect(F.lint(exception: "10/8", F.dict([:])).with(.cidrHostBits).isEmpty)
    }

    @Test(arguments: ["10.0.0.1", "10.0.0.0/8", "2001:db8::/32", "2001:db8::1", "10/8"])
    func ipKeysAreNotedUnderIOS17AndNeverMatchBefore(key: String) throws {
        let ios17 = F.lint(exception: key, F.dict([:]))
        let note = try ios17.one(.ipKeyRequiresIOS17)
        #expect(note.severity == .info)
        #expect(note.message.contains("older OS versions ignore it"))
        #expect(ios17.with(.ipKeyUnsupported).isEmpty)
        for profile in [Profile.ios9, .ios10] {
            let findings = F.lint(exception: key, F.dict([:]), profile: profile)
            let finding = try findings.one(.ipKeyUnsupported)
            #expect(finding.severity == .error)
            #expect(finding.message.contains("never matches"))
            #expect(finding.message.contains(profile.rawValue))
            #expect(findings.with(.ipKeyRequiresIOS17).isEmpty)
        }
    }

    @Test(arguments: [("010.0.0.1", "Write '10.0.0.1'"), ("127.1", "Write '127.0.0.1'"), ("1.2.3.999", nil),
                      ("0x7f.0.0.1", "Write '127.0.0.1'"), ("2001:db8:::1", nil), ("10.0.0.1.", "Write '10.0.0.1'")]
                     as [(String, String?)])
    func ipLookingKeysThatAreNotAddressesNeverMatch(key: String, fix: String?) throws {
        let findings = F.lint(exception: key, F.dict([:]))
        let finding = try findings.one(.ipKeyInvalid)
        #expect(finding.severity == .error)
        #expect(finding.message.contains("never matches (R8)"))
        if let fix { #expect(finding.message.contains(fix)) }
        #expect(findings.with(.ipKeyRequiresIOS17).isEmpty)
    }

    @Test func aResolverReadsLeadingZerosAsOctal() throws {
        let finding = try F.lint(exception: "010.0.0.1", F.dict([:])).one(.ipKeyInvalid)
        #expect(finding.message.contains("reads '010.0.0.1' as 8.0.0.1"))
    }

    @Test(arguments: ["10.0.0.1", "10.0.0.0/8", "2001:db8::/32"])
    func includesSubdomainsOnAnIPKeyIsLow(key: String) throws {
        let findings = F.lint(exception: key, F.dict([ATSKey.includesSubdomains: F.yes]))
        let finding = try findings.one(.includesSubdomainsOnIP)
        #expect(finding.severity == .low)
        #expect(finding.keyPath.description == "\(Self.path(key)).NSIncludesSubdomains")
        #expect(F.lint(exception: key, F.dict([:])).with(.includesSubdomainsOnIP).isEmpty)
        #expect(F.lint(exception: "example.com", F.dict([ATSKey.includesSubdomains: F.yes]))
            .with(.includesSubdomainsOnIP).isEmpty)
    }

    @Test(arguments: [(["10.0.0.1/8", "10.0.0.0/8"], "10.0.0.0/8", "10.0.0.0/8"),
                      (["10/8", "10.0.0.1/8"], "10.0.0.0/8", "10.0.0.1/8"),
                      (["2001:0db8::/32", "2001:db8::/32"], "2001:db8::/32", "2001:db8::/32")])
    func twoSpellingsOfOneNetworkAreAnErrorNamingTheWinner(keys: [String], canonical: String, winner: String) {
        let entries = Dictionary(uniqueKeysWithValues: keys.map { ($0, F.dict([:])) })
        let findings = F.lint([ATSKey.exceptionDomains: .dictionary(entries)]).with(.duplicateIPKey)
        #expect(findings.map(\.keyPath.description).sorted() == keys.map(Self.path).sorted())
        #expect(findings.allSatisfy { $0.severity == .error && $0.message.contains(canonical) })
        let loser = keys.first { $0 != winner }!
        #expect(findings.first { $0.keyPath.description == Self.path(loser) }?.message
            .contains("only '\(winner)' applies, so this entry is dead") == true)
        #expect(ExceptionTable.preferredKey(keys, canonical: canonical) == winner)
    }

    /// R5/R8: an exact IP key matches as canonical text only, so another spelling is dead.
    @Test(arguments: [("2001:DB8::1", "2001:db8::1"), ("2001:db8:0:0:0:0:0:1", "2001:db8::1"),
                      ("2001:0db8::1", "2001:db8::1"), ("::ffff:10.1.2.3", "10.1.2.3")])
    func nonCanonicalIPKeysNeverMatch(key: String, canonical: String) throws {
        let finding = try F.lint(exception: key, F.dict([:])).one(.ipKeyNotCanonical)
        #expect(finding.severity == .error)
        #expect(finding.message.contains("Write '\(canonical)'"))
        #expect(F.lint(exception: canonical, F.dict([:])).with(.ipKeyNotCanonical).isEmpty)
    }

    @Test func distinctAddressesAreNotDuplicates() {
        let entries: [String: PlistValue] = ["10.0.0.0/8": F.dict([:]), "10.0.0.0/16": F.dict([:]), "10.0.0.1": F.dict([:])]
        #expect(F.lint([ATSKey.exceptionDomains: .dictionary(entries)]).with(.duplicateIPKey).isEmpty)
    }

    // MARK: Pin keys (R17)

    @Test func pinKeysGetTheSameChecks() throws {
        let entry = F.dict([ATSKey.pinnedLeafIdentities: F.identities([F.digest])])
        let finding = try F.lint(pin: "*.Example.com", entry).one(.domainKeyWildcard)
        #expect(finding.keyPath.description == "NSPinnedDomains.*.Example.com")
        #expect(finding.message.contains("NSPinnedDomains key"))
        #expect(finding.message.contains("Use 'example.com'"))
        #expect(F.lint(pin: "example.com", entry).isEmpty)
    }

    @Test(arguments: ["10.0.0.1", "10.0.0.0/8", "2001:db8::1", "010.0.0.1"])
    func ipPinKeysNeverMatch(key: String) throws {
        let entry = F.dict([ATSKey.pinnedLeafIdentities: F.identities([F.digest])])
        let findings = F.lint(pin: key, entry)
        let finding = try findings.one(.pinnedIPKey)
        #expect(finding.severity == .error)
        #expect(finding.message.contains("(R17)"))
        #expect(findings.count == 1)
    }
}
