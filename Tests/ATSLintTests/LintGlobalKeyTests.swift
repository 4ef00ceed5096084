import Testing
@testable import ATSLint
@testable import ATSPolicy

/// Top-level keys: arbitrary loads and the keys that override them (R11, R12), value types (R1).
@Suite struct LintGlobalKeyTests {
    typealias F = LintFixtures

    @Test func emptyDictionaryIsClean() {
        #expect(F.lint([:]).isEmpty)
    }

    @Test(arguments: Profile.allCases)
    func arbitraryLoadsYesIsHighWithJustification(profile: Profile) throws {
        let findings = F.lint([ATSKey.allowsArbitraryLoads: F.yes], profile: profile)
        let finding = try findings.one(.arbitraryLoads)
        #expect(finding.id == "arbitrary-loads")
        #expect(finding.severity == .high)
        #expect(finding.justification)
        #expect(finding.keyPath.description == "NSAllowsArbitraryLoads")
        #expect(finding.message.contains("(R12"))
        #expect(findings.with(.arbitraryLoadsIgnored).isEmpty)
    }

    @Test(arguments: [nil, F.no] as [PlistValue?])
    func arbitraryLoadsAbsentOrNoIsClean(value: PlistValue?) {
        var dictionary: [String: PlistValue] = [:]
        dictionary[ATSKey.allowsArbitraryLoads] = value
        #expect(F.lint(dictionary).isEmpty)
    }

    @Test func arbitraryLoadsInAnInfoPlistHasThePrefix() throws {
        let source = F.source([ATSKey.allowsArbitraryLoads: F.yes], root: .infoPlist)
        let finding = try Linter().lint(source).one(.arbitraryLoads)
        #expect(finding.keyPath.description == "NSAppTransportSecurity.NSAllowsArbitraryLoads")
    }

    /// R12: any value of these keys, even NO or a string, makes NSAllowsArbitraryLoads dead on iOS 10+.
    @Test(arguments: [
        (ATSKey.allowsLocalNetworking, F.yes), (ATSKey.allowsLocalNetworking, F.no),
        (ATSKey.allowsArbitraryLoadsForMedia, F.no), (ATSKey.allowsArbitraryLoadsForMedia, F.yes),
        (ATSKey.allowsArbitraryLoadsInWebContent, PlistValue.string("YES")),
    ])
    func arbitraryLoadsIsIgnoredWhenAnOverridingKeyIsPresent(key: String, value: PlistValue) throws {
        for profile in [Profile.ios10, .ios17] {
            let findings = F.lint([ATSKey.allowsArbitraryLoads: F.yes, key: value], profile: profile)
            let finding = try findings.one(.arbitraryLoadsIgnored)
            #expect(finding.severity == .error)
            #expect(finding.justification)
            #expect(finding.keyPath.description == "NSAllowsArbitraryLoads")
            #expect(finding.message.contains(key))
            #expect(finding.message.contains("ignored"))
            #expect(findings.with(.arbitraryLoads).isEmpty)
        }
    }

    @Test func underIOS9TheOverridingKeysDoNotExistSoArbitraryLoadsIsInEffect() throws {
        let findings = F.lint([ATSKey.allowsArbitraryLoads: F.yes, ATSKey.allowsLocalNetworking: F.yes,
                               ATSKey.allowsArbitraryLoadsForMedia: F.yes], profile: .ios9)
        #expect(try findings.one(.arbitraryLoads).severity == .high)
        #expect(findings.with(.arbitraryLoadsIgnored).isEmpty)
        #expect(findings.with(.arbitraryLoadsForMedia).isEmpty)
        #expect(findings.with(.localNetworking).isEmpty)
        let notInProfile = findings.with(.keyNotInProfile)
        #expect(notInProfile.map(\.keyPath.description).sorted()
                == ["NSAllowsArbitraryLoadsForMedia", "NSAllowsLocalNetworking"])
        #expect(notInProfile.allSatisfy { $0.severity == .info && !$0.justification })
    }

    @Test(arguments: [
        (ATSKey.allowsArbitraryLoadsForMedia, LintRule.arbitraryLoadsForMedia, "media"),
        (ATSKey.allowsArbitraryLoadsInWebContent, LintRule.arbitraryLoadsInWebContent, "web content"),
    ])
    func contextArbitraryLoadsYesIsMediumWithJustification(key: String, rule: LintRule, context: String) throws {
        let finding = try F.lint([key: F.yes]).one(rule)
        #expect(finding.severity == .medium)
        #expect(finding.justification)
        #expect(finding.keyPath.description == key)
        #expect(finding.message.contains(context))
        #expect(F.lint([key: F.no]).isEmpty)
    }

    @Test func localNetworkingYesIsInfoWithoutJustification() throws {
        let findings = F.lint([ATSKey.allowsLocalNetworking: F.yes])
        let finding = try findings.one(.localNetworking)
        #expect(finding.severity == .info)
        #expect(!finding.justification)
        #expect(finding.keyPath.description == "NSAllowsLocalNetworking")
        #expect(findings.count == 1)
    }

    @Test func localNetworkingNoRevokesTheExemption() throws {
        let findings = F.lint([ATSKey.allowsLocalNetworking: F.no])
        let finding = try findings.one(.localNetworkingRevoked)
        #expect(finding.severity == .low)
        #expect(!finding.justification)
        #expect(finding.message.contains("(R11)"))
        #expect(findings.with(.localNetworking).isEmpty)
    }

    /// R1 gives a non-boolean value presence in R12 only: it disables arbitrary loads but does not revoke
    /// the local exemption (R11), which only a real NO does.
    @Test func localNetworkingAsAStringIsNotABooleanButKeepsTheExemption() throws {
        let findings = F.lint([ATSKey.allowsLocalNetworking: .string("YES")])
        let type = try findings.one(.notABoolean)
        #expect(type.severity == .error)
        #expect(type.message.contains("is a string (\"YES\"), not a boolean, and is ignored"))
        #expect(type.message.contains("only a real NO revokes the local exemption (R11)"))
        #expect(findings.with(.localNetworkingRevoked).isEmpty)
        #expect(try F.lint([ATSKey.allowsLocalNetworking: .bool(false)]).one(.localNetworkingRevoked).severity == .low)
    }

    @Test(arguments: [PlistValue.string("YES"), .integer(1), .real(1.5), .data(.init([1])), .array([]), .null])
    func nonBooleanTopLevelValuesAreErrors(value: PlistValue) throws {
        let findings = F.lint([ATSKey.allowsArbitraryLoads: value])
        let finding = try findings.one(.notABoolean)
        #expect(finding.severity == .error)
        #expect(!finding.justification)
        #expect(finding.keyPath.description == "NSAllowsArbitraryLoads")
        #expect(finding.message.contains("is \(withArticle(value.typeName))"))
        #expect(finding.message.contains("default NO"))
        #expect(findings.with(.arbitraryLoads).isEmpty)
    }

    @Test func booleanValuesAreNotReportedAsNonBoolean() {
        let findings = F.lint([ATSKey.allowsArbitraryLoadsForMedia: F.no, ATSKey.allowsArbitraryLoadsInWebContent: F.no])
        #expect(findings.isEmpty)
    }

    @Test func pinnedDomainsDoNotExistUnderIOS9() throws {
        let pins: PlistValue = .dictionary(["example.com": .dictionary([ATSKey.pinnedLeafIdentities: F.identities([F.digest])])])
        let finding = try F.lint([ATSKey.pinnedDomains: pins], profile: .ios9).one(.keyNotInProfile)
        #expect(finding.keyPath.description == "NSPinnedDomains")
        #expect(F.lint([ATSKey.pinnedDomains: pins], profile: .ios17).isEmpty)
    }

    @Test(arguments: Profile.allCases)
    func arbitraryLoadsIsReportedOnceBesideWebContent(profile: Profile) {
        let findings = F.lint([ATSKey.allowsArbitraryLoads: F.yes, ATSKey.allowsArbitraryLoadsInWebContent: F.yes],
                              profile: profile)
        let arbitrary = findings.with(.arbitraryLoads) + findings.with(.arbitraryLoadsIgnored)
        #expect(arbitrary.count == 1)
        #expect(arbitrary.first?.rule == (profile == .ios9 ? .arbitraryLoads : .arbitraryLoadsIgnored))
    }
}
