import Testing
@testable import ATSLint
@testable import ATSPolicy

/// NSExceptionDomains entries: values (R1, R3, R4, R10, R14), built-ins (R9) and what an entry means
/// beside the global keys (R10).
@Suite struct LintExceptionEntryTests {
    typealias F = LintFixtures
    static let entryPath = "NSExceptionDomains.example.com"

    /// Defaults written out, TLSv1.2/1.3 and forward secrecy YES are not findings (known analysers get
    /// these wrong).
    @Test(arguments: [
        F.dict([:]),
        F.dict([ATSKey.includesSubdomains: F.yes]),
        F.dict([ATSKey.exceptionMinimumTLSVersion: .string("TLSv1.2")]),
        F.dict([ATSKey.exceptionMinimumTLSVersion: .string("TLSv1.3")]),
        F.dict([ATSKey.exceptionRequiresForwardSecrecy: F.yes]),
        F.dict([ATSKey.exceptionAllowsInsecureHTTPLoads: F.no, ATSKey.includesSubdomains: F.no]),
    ])
    func defaultsAreNotFindings(entry: PlistValue) {
        #expect(F.lint(exception: "example.com", entry).isEmpty)
    }

    @Test func insecureHTTPLoadsYesIsMediumWithJustification() throws {
        let findings = F.lint(exception: "example.com", F.dict([ATSKey.exceptionAllowsInsecureHTTPLoads: F.yes]))
        let finding = try findings.one(.insecureHTTPLoads)
        #expect(finding.id == "insecure-http-loads")
        #expect(finding.severity == .medium)
        #expect(finding.justification)
        #expect(finding.keyPath.description == "\(Self.entryPath).NSExceptionAllowsInsecureHTTPLoads")
        #expect(finding.message.contains("cleartext HTTP to 'example.com'"))
        #expect(findings.count == 1)
    }

    @Test(arguments: ["TLSv1.0", "TLSv1.1"])
    func minimumTLSBelow12IsMediumWithJustification(version: String) throws {
        let finding = try F.lint(exception: "example.com",
                                 F.dict([ATSKey.exceptionMinimumTLSVersion: .string(version)])).one(.weakMinimumTLSVersion)
        #expect(finding.severity == .medium)
        #expect(finding.justification)
        #expect(finding.keyPath.description == "\(Self.entryPath).NSExceptionMinimumTLSVersion")
        #expect(finding.message.contains(version))
    }

    /// R4: anything but the four exact strings falls back to TLSv1.2; suggest the version meant.
    @Test(arguments: [
        (PlistValue.string("TLSV1.3"), "\"TLSv1.3\""), (.string("tlsv1.0"), "\"TLSv1.0\""),
        (.string("1.2"), "\"TLSv1.2\""), (.string("TLSv1.00"), "\"TLSv1.0\""), (.string("TLS 1.1"), "\"TLSv1.1\""),
        (.real(1.2), "\"TLSv1.2\""), (.string("TLSv1.4"), nil), (.integer(12), nil), (.string(""), nil),
        (.bool(true), nil),
    ] as [(PlistValue, String?)])
    func invalidMinimumTLSIsAnErrorThatFallsBackTo12(value: PlistValue, suggestion: String?) throws {
        let findings = F.lint(exception: "example.com", F.dict([ATSKey.exceptionMinimumTLSVersion: value]))
        let finding = try findings.one(.invalidMinimumTLSVersion)
        #expect(finding.severity == .error)
        #expect(!finding.justification)
        #expect(finding.keyPath.description == "\(Self.entryPath).NSExceptionMinimumTLSVersion")
        #expect(finding.message.contains("stays TLSv1.2 (R4)"))
        if let suggestion {
            #expect(finding.message.contains("Write \(suggestion)"))
        } else {
            #expect(!finding.message.contains("Write \""))
        }
        #expect(findings.with(.weakMinimumTLSVersion).isEmpty)
    }

    @Test func forwardSecrecyNoIsMediumWithoutJustification() throws {
        let finding = try F.lint(exception: "example.com",
                                 F.dict([ATSKey.exceptionRequiresForwardSecrecy: F.no])).one(.forwardSecrecyDisabled)
        #expect(finding.severity == .medium)
        #expect(!finding.justification)
        #expect(finding.keyPath.description == "\(Self.entryPath).NSExceptionRequiresForwardSecrecy")
    }

    /// Absent NSExceptionRequiresForwardSecrecy means YES (R3), even next to relaxing keys.
    @Test func absentForwardSecrecyIsNotReported() {
        let findings = F.lint(exception: "example.com",
                              F.dict([ATSKey.exceptionAllowsInsecureHTTPLoads: F.yes,
                                      ATSKey.exceptionMinimumTLSVersion: .string("TLSv1.0")]))
        #expect(findings.with(.forwardSecrecyDisabled).isEmpty)
        #expect(Set(findings.ids) == ["insecure-http-loads", "weak-minimum-tls-version"])
    }

    @Test(arguments: [
        (ATSKey.includesSubdomains, PlistValue.string("YES"), "NO"),
        (ATSKey.exceptionAllowsInsecureHTTPLoads, .integer(1), "NO"),
        (ATSKey.exceptionRequiresForwardSecrecy, .string("NO"), "YES"),
    ])
    func nonBooleanEntryValuesAreErrors(key: String, value: PlistValue, defaultValue: String) throws {
        let findings = F.lint(exception: "example.com", F.dict([key: value]))
        let finding = try findings.one(.notABoolean)
        #expect(finding.severity == .error)
        #expect(finding.keyPath.description == "\(Self.entryPath).\(key)")
        #expect(finding.message.contains("is \(withArticle(value.typeName)) (\(value.shortDescription)), not a boolean, and is ignored"))
        #expect(finding.message.contains("keeps its default \(defaultValue)"))
        // The ignored value has no effect, so the relaxations it meant are not reported.
        #expect(findings.with(.insecureHTTPLoads).isEmpty)
        #expect(findings.with(.forwardSecrecyDisabled).isEmpty)
    }

    @Test(arguments: [PlistValue.array([]), .string("example.com"), .bool(true)])
    func exceptionDomainsThatIsNotADictionaryIsIgnored(value: PlistValue) throws {
        let finding = try F.lint([ATSKey.exceptionDomains: value]).one(.notADictionary)
        #expect(finding.severity == .error)
        #expect(finding.keyPath.description == "NSExceptionDomains")
        #expect(finding.message.contains("(R3)"))
    }

    @Test func anEntryThatIsNotADictionaryIsIgnored() throws {
        let finding = try F.lint(exception: "example.com", F.yes).one(.notADictionary)
        #expect(finding.severity == .error)
        #expect(finding.keyPath.description == Self.entryPath)
        #expect(finding.message.contains("is a boolean (YES), not a dictionary"))
        #expect(F.lint(exception: "example.com", F.dict([:])).with(.notADictionary).isEmpty)
    }

    @Test(arguments: ExceptionEntry.builtins.map(\.key))
    func anEntryForABuiltinReplacesIt(key: String) throws {
        let finding = try F.lint(exception: key, F.dict([:])).one(.replacesBuiltin)
        #expect(finding.severity == .info)
        #expect(!finding.justification)
        #expect(finding.keyPath.description == "NSExceptionDomains.\(key)")
        #expect(finding.message.contains("(R9)"))
        #expect(finding.message.contains("fall back to the global rules"))
        let withSubdomains = try F.lint(exception: key, F.dict([ATSKey.includesSubdomains: F.yes])).one(.replacesBuiltin)
        #expect(!withSubdomains.message.contains("fall back"))
    }

    @Test func aSubdomainOfABuiltinDoesNotReplaceIt() {
        #expect(F.lint(exception: "www.example.com", F.dict([:])).with(.replacesBuiltin).isEmpty)
        #expect(F.lint(exception: "api.apple.com", F.dict([ATSKey.exceptionAllowsInsecureHTTPLoads: F.yes]))
            .with(.replacesBuiltin).isEmpty)
    }

    /// R10: an empty entry in an arbitrary-loads app means full ATS for that host.
    @Test func anEmptyEntryInAnArbitraryLoadsAppReenablesATS() throws {
        let findings = F.lint(exception: "example.com", F.dict([:]), topLevel: [ATSKey.allowsArbitraryLoads: F.yes])
        let finding = try findings.one(.exceptionEnforcesATS)
        #expect(finding.severity == .info)
        #expect(!finding.justification)
        #expect(finding.keyPath.description == Self.entryPath)
        #expect(finding.message.contains("NSAllowsArbitraryLoads=YES"))
        #expect(finding.message.contains("cleartext HTTP is blocked"))
        #expect(finding.message.contains("(R10)"))
    }

    @Test func anEntryThatAllowsHTTPInAnArbitraryLoadsAppIsNotReportedAsEnforcing() {
        let findings = F.lint(exception: "example.com", F.dict([ATSKey.exceptionAllowsInsecureHTTPLoads: F.yes]),
                              topLevel: [ATSKey.allowsArbitraryLoads: F.yes])
        #expect(findings.with(.exceptionEnforcesATS).isEmpty)
    }

    @Test func anEmptyEntryWithoutArbitraryLoadsChangesNothingToReport() {
        #expect(F.lint(exception: "example.com", F.dict([:])).isEmpty)
        // NSAllowsLocalNetworking makes NSAllowsArbitraryLoads dead, so the entry re-enables nothing.
        let dead = F.lint(exception: "example.com", F.dict([:]),
                          topLevel: [ATSKey.allowsArbitraryLoads: F.yes, ATSKey.allowsLocalNetworking: F.yes])
        #expect(dead.with(.exceptionEnforcesATS).isEmpty)
    }

    @Test func anEntryForALocalNameEndsItsExemption() throws {
        let finding = try F.lint(exception: "printer.local", F.dict([:])).one(.exceptionEnforcesATS)
        #expect(finding.message.contains("direct (local) destination"))
        #expect(finding.message.contains("(R11)"))
        // ios9 has no local exemption to end.
        #expect(F.lint(exception: "printer.local", F.dict([:]), profile: .ios9).isEmpty)
    }

    @Test func anEntryUnderABuiltinEndsItsCleartext() throws {
        let finding = try F.lint(exception: "maps.ls.apple.com", F.dict([:])).one(.exceptionEnforcesATS)
        #expect(finding.message.contains("built-in exception 'ls.apple.com'"))
    }

    @Test func mediaOnlyRelaxationNamesTheContext() throws {
        let finding = try F.lint(exception: "example.com", F.dict([:]),
                                 topLevel: [ATSKey.allowsArbitraryLoadsForMedia: F.yes]).one(.exceptionEnforcesATS)
        #expect(finding.message.contains("media loads"))
    }
}

/// exception-enforces-ats against brute force: an engine rebuilt without each entry.
@Suite struct LintEnforcementAgreementTests {
    typealias F = LintFixtures

    static let entries: [String: PlistValue] = [
        "example.com": F.dict([ATSKey.includesSubdomains: F.yes, ATSKey.exceptionAllowsInsecureHTTPLoads: F.yes]),
        "a.example.com": F.dict([:]),
        "b.a.example.com": F.dict([ATSKey.exceptionMinimumTLSVersion: .string("TLSv1.0")]),
        "plain.org": F.dict([ATSKey.exceptionAllowsInsecureHTTPLoads: F.yes]),
        "x.plain.org": F.dict([:]),
        "maps.ls.apple.com": F.dict([:]),
        "printer.local": F.dict([:]),
        "nas": F.dict([ATSKey.includesSubdomains: F.yes]),
        "10.0.0.0/8": F.dict([ATSKey.exceptionAllowsInsecureHTTPLoads: F.yes]),
        "10.1.0.0/16": F.dict([:]),
        "8.8.8.8": F.dict([:]),
        "gs.apple.com": F.dict([ATSKey.includesSubdomains: F.no]),
        "www.gs.apple.com": F.dict([:]),
    ]

    static let topLevels: [[String: PlistValue]] = [
        [:], [ATSKey.allowsArbitraryLoads: F.yes], [ATSKey.allowsArbitraryLoadsForMedia: F.yes],
        [ATSKey.allowsLocalNetworking: F.no], [ATSKey.allowsArbitraryLoads: F.yes, ATSKey.allowsLocalNetworking: F.yes],
    ]

    @Test(arguments: Profile.allCases)
    func theLinterAgreesWithAnEngineRebuiltWithoutTheEntry(profile: Profile) throws {
        var reportedAtAll: Set<String> = []
        for topLevel in Self.topLevels {
            var dictionary = topLevel
            dictionary[ATSKey.exceptionDomains] = .dictionary(Self.entries)
            let reported = Set(F.lint(dictionary, profile: profile).with(.exceptionEnforcesATS).map(\.keyPath.description))
            let policy = Policy(F.source(dictionary))
            let options = EngineOptions(profile: profile)
            var expected: Set<String> = []
            for key in Self.entries.keys where !ExceptionEntry.builtins.contains(where: { $0.key == key }) {
                let host: Host
                if let network = IPNetwork.parse(Substring(key)) {
                    host = .address(network.network.address)
                } else {
                    host = try Host.parse(key)
                }
                var reduced = policy
                reduced.exceptionDomains[key] = nil
                let with = DecisionEngine(policy: policy, options: options)
                let without = DecisionEngine(policy: reduced, options: options)
                let destination = Destination(host: host, port: 80, scheme: .http)
                let enforces = LoadContext.allCases.contains { context in
                    let decided = with.decide(destination, context: context)
                    return decided.exception?.entry.key == key && !decided.requirements.cleartextAllowed
                        && without.decide(destination, context: context).requirements.cleartextAllowed
                }
                if enforces { expected.insert("NSExceptionDomains.\(key)") }
            }
            #expect(reported == expected, "\(topLevel)")
            reportedAtAll.formUnion(reported)
        }
        // Not vacuous: parents, built-ins, arbitrary loads and the local exemption all show up.
        #expect(reportedAtAll.isSuperset(of: ["NSExceptionDomains.a.example.com", "NSExceptionDomains.x.plain.org",
                                              "NSExceptionDomains.maps.ls.apple.com"]))
        if profile != .ios9 { #expect(reportedAtAll.contains("NSExceptionDomains.printer.local")) }
        if profile == .ios17 { #expect(reportedAtAll.isSuperset(of: ["NSExceptionDomains.10.1.0.0/16", "NSExceptionDomains.8.8.8.8"])) }
    }
}
