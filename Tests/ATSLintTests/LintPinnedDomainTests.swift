import Testing
@testable import ATSLint
@testable import ATSPolicy

/// NSPinnedDomains entries (R17).
@Suite struct LintPinnedDomainTests {
    typealias F = LintFixtures
    static let entryPath = "NSPinnedDomains.example.com"

    @Test(arguments: [
        F.dict([ATSKey.pinnedLeafIdentities: F.identities([F.digest])]),
        F.dict([ATSKey.pinnedCAIdentities: F.identities([F.digest, F.digest])]),
        F.dict([ATSKey.pinnedCAIdentities: F.identities([F.digest]), ATSKey.pinnedLeafIdentities: F.identities([F.digest]),
                ATSKey.includesSubdomains: F.no]),
    ])
    func wellFormedPinsAreClean(entry: PlistValue) {
        #expect(F.lint(pin: "example.com", entry).isEmpty)
    }

    @Test func anEntryWithoutIdentitiesPinsNothing() throws {
        let finding = try F.lint(pin: "example.com", F.dict([ATSKey.includesSubdomains: F.yes])).one(.pinNoIdentities)
        #expect(finding.severity == .error)
        #expect(finding.keyPath.description == Self.entryPath)
        #expect(finding.message.contains("pins nothing"))
    }

    @Test(arguments: [ATSKey.pinnedCAIdentities, ATSKey.pinnedLeafIdentities])
    func anIdentityListThatIsNotAnArrayIsIgnored(key: String) throws {
        let entry = F.dict([key: .dictionary([ATSKey.spkiSHA256: .string(F.digest)])])
        let finding = try F.lint(pin: "example.com", entry).one(.pinIdentitiesNotArray)
        #expect(finding.severity == .error)
        #expect(finding.keyPath.description == "\(Self.entryPath).\(key)")
        #expect(finding.message.contains("not an array"))
    }

    @Test func anEmptyIdentityArrayFailsEveryConnection() throws {
        let finding = try F.lint(pin: "example.com", F.dict([ATSKey.pinnedCAIdentities: .array([])])).one(.pinIdentitiesEmpty)
        #expect(finding.severity == .error)
        #expect(finding.keyPath.description == "\(Self.entryPath).NSPinnedCAIdentities")
        #expect(finding.message.contains("is empty"))
        #expect(finding.message.contains("fail the pin check"))
    }

    @Test(arguments: [
        (PlistValue.string("x"), "NSPinnedLeafIdentities[0]", "not a dictionary"),
        (.dictionary([:]), "NSPinnedLeafIdentities[0]", "has no SPKI-SHA256-BASE64"),
        (.dictionary([ATSKey.spkiSHA256: .data(.init(repeating: 1, count: 32))]),
         "NSPinnedLeafIdentities[0].SPKI-SHA256-BASE64", "not a base64 string"),
        (.dictionary([ATSKey.spkiSHA256: .string("not base64!")]),
         "NSPinnedLeafIdentities[0].SPKI-SHA256-BASE64", "not valid base64"),
        (.dictionary([ATSKey.spkiSHA256: .string("AAAA")]),
         "NSPinnedLeafIdentities[0].SPKI-SHA256-BASE64", "decodes to 3 bytes"),
    ])
    func invalidIdentitiesAreIgnored(identity: PlistValue, path: String, problem: String) throws {
        let findings = F.lint(pin: "example.com", F.dict([ATSKey.pinnedLeafIdentities: .array([identity])]))
        let finding = try findings.one(.pinIdentityInvalid)
        #expect(finding.severity == .error)
        #expect(finding.keyPath.description == "\(Self.entryPath).\(path)")
        #expect(finding.message.contains(problem))
        // The only identity is invalid, so nothing can match.
        #expect(try findings.one(.pinIdentitiesEmpty).message.contains("has no valid identity"))
    }

    @Test func oneValidIdentityIsEnoughForTheArray() throws {
        let identities: PlistValue = .array([.string("x"), .dictionary([ATSKey.spkiSHA256: .string(F.digest)])])
        let findings = F.lint(pin: "example.com", F.dict([ATSKey.pinnedLeafIdentities: identities]))
        #expect(try findings.one(.pinIdentityInvalid).keyPath.description == "\(Self.entryPath).NSPinnedLeafIdentities[0]")
        #expect(findings.with(.pinIdentitiesEmpty).isEmpty)
    }

    @Test func whiteSpaceInADigestIsPointedOut() throws {
        let spaced = String(F.digest.prefix(20)) + "\n" + String(F.digest.dropFirst(20))
        let finding = try F.lint(pin: "example.com", F.dict([ATSKey.pinnedLeafIdentities: F.identities([spaced])]))
            .one(.pinIdentityInvalid)
        #expect(finding.message.contains("Remove the white space"))
    }

    @Test func includesSubdomainsInAPinCoversOneLevel() throws {
        let entry = F.dict([ATSKey.includesSubdomains: F.yes, ATSKey.pinnedLeafIdentities: F.identities([F.digest])])
        let finding = try F.lint(pin: "example.com", entry).one(.pinIncludesSubdomains)
        #expect(finding.severity == .info)
        #expect(finding.keyPath.description == "\(Self.entryPath).NSIncludesSubdomains")
        #expect(finding.message.contains("immediate subdomains only"))
        #expect(finding.message.contains("not a.b.example.com"))
    }

    @Test func nonBooleanIncludesSubdomainsInAPinIsAnError() throws {
        let entry = F.dict([ATSKey.includesSubdomains: .string("YES"), ATSKey.pinnedLeafIdentities: F.identities([F.digest])])
        let findings = F.lint(pin: "example.com", entry)
        #expect(try findings.one(.notABoolean).keyPath.description == "\(Self.entryPath).NSIncludesSubdomains")
        #expect(findings.with(.pinIncludesSubdomains).isEmpty)
    }

    @Test func pinnedDomainsAndEntriesThatAreNotDictionaries() throws {
        #expect(try F.lint([ATSKey.pinnedDomains: .array([])]).one(.notADictionary).keyPath.description == "NSPinnedDomains")
        #expect(try F.lint(pin: "example.com", .string("x")).one(.notADictionary).keyPath.description == Self.entryPath)
    }

    @Test func unknownKeysInAPinEntryAndInAnIdentity() throws {
        let identity: PlistValue = .dictionary(["SPKI-SHA256-Base64": .string(F.digest)])
        let entry = F.dict([ATSKey.pinnedLeafIdentities: .array([identity]),
                            ATSKey.exceptionAllowsInsecureHTTPLoads: F.yes, "NSPinnedCAIdentity": .array([])])
        let findings = F.lint(pin: "example.com", entry)
        let misspelled = findings.with(.misspelledKey)
        #expect(misspelled.map(\.keyPath.description).sorted() == [
            "\(Self.entryPath).NSPinnedCAIdentity",
            "\(Self.entryPath).NSPinnedLeafIdentities[0].SPKI-SHA256-Base64",
        ])
        #expect(misspelled.contains { $0.message.contains("Did you mean SPKI-SHA256-BASE64?") })
        let misplaced = try findings.one(.misplacedKey)
        #expect(misplaced.keyPath.description == "\(Self.entryPath).NSExceptionAllowsInsecureHTTPLoads")
        #expect(misplaced.message.contains("belongs in an NSExceptionDomains entry"))
    }
}
