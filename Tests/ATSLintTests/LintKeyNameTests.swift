import Testing
@testable import ATSLint
@testable import ATSPolicy

/// Keys the engine does not read: misspelled, misplaced, legacy, obsolete, unknown (R2, R3, R16).
@Suite struct LintKeyNameTests {
    typealias F = LintFixtures

    @Test(arguments: [
        ("NSAllowsArbitraryLoadsInMedia", ATSKey.allowsArbitraryLoadsForMedia),
        ("NSAllowArbitraryLoads", ATSKey.allowsArbitraryLoads),
        ("NSAllowsArbitraryLoad", ATSKey.allowsArbitraryLoads),
        ("nsallowsarbitraryloads", ATSKey.allowsArbitraryLoads),
        ("NSAllowsArbitraryLoadsForWebContent", ATSKey.allowsArbitraryLoadsInWebContent),
        ("NSAllowsLocalNetwork", ATSKey.allowsLocalNetworking),
        ("NSExceptionDomain", ATSKey.exceptionDomains),
        ("NSExeptionDomains", ATSKey.exceptionDomains),
        ("NSPinnedDomain", ATSKey.pinnedDomains),
    ])
    func misspelledTopLevelKeysSuggestTheKey(key: String, suggestion: String) throws {
        let finding = try F.lint([key: F.yes]).one(.misspelledKey)
        #expect(finding.severity == .error)
        #expect(!finding.justification)
        #expect(finding.keyPath.description == key)
        #expect(finding.message.contains("Did you mean \(suggestion)?"))
        #expect(finding.message.contains("is ignored at the top level"))
    }

    @Test(arguments: [
        ("NSExceptionAllowInsecureHTTPLoads", ATSKey.exceptionAllowsInsecureHTTPLoads),
        ("NSIncludeSubdomains", ATSKey.includesSubdomains),
        ("NSIncludesSubDomains", ATSKey.includesSubdomains),
        ("NSExceptionRequiresForwardSecracy", ATSKey.exceptionRequiresForwardSecrecy),
        ("NSExceptionRequiresFowardSecrecy", ATSKey.exceptionRequiresForwardSecrecy),
        ("NSExceptionMinimumTLSversion", ATSKey.exceptionMinimumTLSVersion),
        ("NSExceptionMinimumTLSVerison", ATSKey.exceptionMinimumTLSVersion),
        ("NSIncludesSubdomainz", ATSKey.includesSubdomains),
    ])
    func misspelledEntryKeysSuggestTheKey(key: String, suggestion: String) throws {
        let finding = try F.lint(exception: "example.com", F.dict([key: F.yes])).one(.misspelledKey)
        #expect(finding.severity == .error)
        #expect(finding.keyPath.description == "NSExceptionDomains.example.com.\(key)")
        #expect(finding.message.contains("Did you mean \(suggestion)?"))
        #expect(!finding.message.contains("It belongs"))
    }

    @Test func aMisspelledEntryKeyAtTheTopLevelSaysWhereItBelongs() throws {
        let finding = try F.lint(["NSIncludeSubdomains": F.yes]).one(.misspelledKey)
        #expect(finding.message.contains("Did you mean NSIncludesSubdomains?"))
        #expect(finding.message.contains("It belongs in an NSExceptionDomains entry or in an NSPinnedDomains entry"))
    }

    @Test(arguments: [
        (ATSKey.includesSubdomains, "in an NSExceptionDomains entry or in an NSPinnedDomains entry"),
        (ATSKey.exceptionAllowsInsecureHTTPLoads, "in an NSExceptionDomains entry"),
        (ATSKey.pinnedLeafIdentities, "in an NSPinnedDomains entry"),
    ])
    func perDomainKeysAtTheTopLevelAreMisplaced(key: String, place: String) throws {
        let finding = try F.lint([key: F.yes]).one(.misplacedKey)
        #expect(finding.severity == .error)
        #expect(finding.keyPath.description == key)
        #expect(finding.message.contains("belongs \(place)"))
    }

    @Test(arguments: [ATSKey.allowsArbitraryLoads, ATSKey.exceptionDomains])
    func topLevelKeysInAnEntryAreMisplaced(key: String) throws {
        let finding = try F.lint(exception: "example.com", F.dict([key: F.yes])).one(.misplacedKey)
        #expect(finding.keyPath.description == "NSExceptionDomains.example.com.\(key)")
        #expect(finding.message.contains("belongs at the top level of NSAppTransportSecurity"))
        // Misplaced keys have no effect where they are.
        #expect(F.lint(exception: "example.com", F.dict([key: F.yes])).with(.arbitraryLoads).isEmpty)
    }

    @Test(arguments: KeySpelling.legacyKeys.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
    func legacyKeysAreErrorsSuggestingTheCurrentKey(key: String, replacement: String) throws {
        let finding = try F.lint(exception: "example.com", F.dict([key: F.yes])).one(.legacyKey)
        #expect(finding.severity == .error)
        #expect(finding.keyPath.description == "NSExceptionDomains.example.com.\(key)")
        #expect(finding.message.contains("Use \(replacement) instead."))
        #expect(finding.message.contains("(R2)"))
        // The legacy key is not honoured, so nothing is relaxed.
        #expect(F.lint(exception: "example.com", F.dict([key: F.yes])).with(.insecureHTTPLoads).isEmpty)
        let topLevel = try F.lint([key: F.yes]).one(.legacyKey)
        #expect(topLevel.message.contains("inside an NSExceptionDomains entry"))
    }

    @Test func aMisspelledLegacyKeyIsStillALegacyKey() throws {
        let finding = try F.lint(exception: "example.com", F.dict(["NSTemporaryExceptionAllowsInsecureHttpLoads": F.yes]))
            .one(.legacyKey)
        #expect(finding.message.contains("Use NSExceptionAllowsInsecureHTTPLoads"))
    }

    @Test func certificateTransparencyIsObsoleteAtBothLevels() throws {
        let top = try F.lint([KeySpelling.certificateTransparency: F.yes]).one(.certificateTransparencyKey)
        #expect(top.severity == .low)
        #expect(!top.justification)
        #expect(top.keyPath.description == "NSRequiresCertificateTransparency")
        #expect(top.message.contains("(R16)"))
        let entry = try F.lint(exception: "example.com", F.dict([KeySpelling.certificateTransparency: F.yes]))
            .one(.certificateTransparencyKey)
        #expect(entry.keyPath.description == "NSExceptionDomains.example.com.NSRequiresCertificateTransparency")
    }

    @Test func unknownKeysWithoutASuggestionAreMedium() throws {
        let top = try F.lint(["NSFrobnicate": F.yes]).one(.unknownKey)
        #expect(top.severity == .medium)
        #expect(top.keyPath.description == "NSFrobnicate")
        #expect(top.message.contains("not an ATS key and is ignored"))
        #expect(!top.message.contains("Did you mean"))
        let entry = try F.lint(exception: "example.com", F.dict(["Comment": .string("legacy API")])).one(.unknownKey)
        #expect(entry.message.contains(ATSKey.exceptionMinimumTLSVersion))
    }

    @Test func knownKeysAtTheirLevelAreNotReported() {
        let entry = F.dict([ATSKey.includesSubdomains: F.yes, ATSKey.exceptionRequiresForwardSecrecy: F.yes,
                            ATSKey.exceptionMinimumTLSVersion: .string("TLSv1.2")])
        let findings = F.lint([ATSKey.exceptionDomains: .dictionary(["example.com": entry]),
                               ATSKey.allowsArbitraryLoadsInWebContent: F.no])
        #expect(findings.isEmpty)
    }

    @Test(arguments: [("kitten", "sitting", 3), ("NSIncludesSubdomains", "NSIncludesSubdomains", 0),
                      ("ab", "ba", 1), ("", "abc", 3), ("Secracy", "Secrecy", 1)])
    func editDistance(a: String, b: String, distance: Int) {
        #expect(KeySpelling.editDistance(Array(a.unicodeScalars), Array(b.unicodeScalars)) == distance)
    }
}

/// Keys written one level off: a domain entry at the top level, a per-domain key beside the entries.
@Suite struct LintMisplacedKeyTests {
    typealias F = LintFixtures

    @Test func aDomainEntryAtTheTopLevelIsMisplaced() throws {
        let finding = try F.lint(["api.example.com": F.dict([ATSKey.exceptionAllowsInsecureHTTPLoads: F.yes])])
            .one(.misplacedKey)
        #expect(finding.keyPath.description == "api.example.com")
        #expect(finding.message.contains("belong inside NSExceptionDomains"))
        // A scalar with a dotted name is just unknown.
        #expect(try F.lint(["com.example.setting": F.yes]).one(.unknownKey).severity == .medium)
    }

    @Test(arguments: [
        (ATSKey.includesSubdomains, nil), ("NSIncludeSubdomains", ATSKey.includesSubdomains),
        ("NSTemporaryExceptionAllowsInsecureHTTPLoads", ATSKey.exceptionAllowsInsecureHTTPLoads),
    ] as [(String, String?)])
    func anEntryKeyBesideTheEntriesIsMisplaced(key: String, meant: String?) throws {
        let findings = F.lint([ATSKey.exceptionDomains: .dictionary([key: F.yes, "example.com": F.dict([:])])])
        let finding = try findings.one(.misplacedKey)
        #expect(finding.keyPath.description == "NSExceptionDomains.\(key)")
        #expect(finding.message.contains("read as a domain name"))
        #expect(finding.message.contains("belongs in an NSExceptionDomains entry"))
        if let meant { #expect(finding.message.contains("Did you mean \(meant)?")) }
        // One finding for the key, not a string of domain-key and not-a-dictionary findings.
        #expect(findings.count == 1)
    }

    @Test func aPinKeyBesideThePinsIsMisplaced() throws {
        let findings = F.lint([ATSKey.pinnedDomains: .dictionary([ATSKey.pinnedLeafIdentities: F.identities([F.digest])])])
        let finding = try findings.one(.misplacedKey)
        #expect(finding.message.contains("belongs in an NSPinnedDomains entry"))
        #expect(findings.count == 1)
    }

    @Test func anUppercaseDomainIsNotMistakenForAKey() throws {
        #expect(try F.lint(exception: "NSExample.com", F.dict([:])).one(.domainKeyUppercase).keyPath.description
                == "NSExceptionDomains.NSExample.com")
    }

    @Test func misspelledNSAppTransportSecurityInAnInfoPlistIsAnError() throws {
        let source = try F.parseXML(F.xmlPlist("""
            <key>CFBundleIdentifier</key><string>com.example</string>
            <key>NSAppTransportSecurty</key><dict><key>NSAllowsArbitraryLoads</key><true/></dict>
            """))
        let finding = try Linter().lint(source).one(.misspelledKey)
        #expect(finding.keyPath.description == "NSAppTransportSecurty")
        #expect(finding.message.contains("Did you mean 'NSAppTransportSecurity'?"))
        let correct = try F.parseXML(F.xmlPlist("""
            <key>CFBundleIdentifier</key><string>com.example</string>
            <key>NSAppTransportSecurity</key><dict/>
            """))
        #expect(Linter().lint(correct).isEmpty)
    }
}
