import ATSPolicy
import ATSReport
import Foundation
import Testing

/// Unused keys, and the suggested dictionary proven against every recorded destination.
@Suite struct UnusedAndSuggestionTests {
    typealias F = ReportFixtures

    private func unused(_ app: AppReport) -> [String] { app.unused.map { $0.change.keyPath.joined(separator: ".") } }

    @Test func anEntryNoRecordedLoadUsedIsUnused() throws {
        let policy = #"{"NSExceptionDomains": {"used.example.com": {"NSExceptionAllowsInsecureHTTPLoads": true}, "#
            + #""unused.example.org": {"NSExceptionAllowsInsecureHTTPLoads": true}}}"#
        let app = try F.app(policy, [F.record("http", "used.example.com", 80)])
        #expect(unused(app) == ["NSExceptionDomains.unused.example.org"])
        #expect(app.unused[0].note == "no recorded load was decided by this entry")
    }

    @Test func anEntryABuiltInShadowsIsUnusedAndSaysWhy() throws {
        let policy = #"{"NSExceptionDomains": {"icloud.com": {"NSIncludesSubdomains": true, "NSExceptionAllowsInsecureHTTPLoads": true}}}"#
        let app = try F.app(policy, [F.record("http", "setup.icloud.com", 80)])
        #expect(app.destination("http://setup.icloud.com:80")?.decision?.exception?.entry.displayName == "builtin:setup.icloud.com")
        #expect(unused(app) == ["NSExceptionDomains.icloud.com"])
        #expect(app.unused[0].note.contains("the built-in exception 'setup.icloud.com' decides setup.icloud.com before it"))
    }

    @Test func anUnusedOverrideOfABuiltInSaysRemovingItRestoresTheBuiltIn() throws {
        let app = try F.app(#"{"NSExceptionDomains": {"apple.com": {}}}"#, [F.record("https", "example.com", 443)])
        #expect(unused(app) == ["NSExceptionDomains.apple.com"])
        #expect(app.unused[0].note.contains("replaces the built-in exception 'apple.com'"))
    }

    @Test func aGlobalKeyIsUnusedOnlyWhenRemovingItChangesNoDecision() throws {
        let lines = [F.record("http", "legacy.example.com", 80)]
        // Arbitrary loads decide the cleartext load: used.
        let used = try F.app(#"{"NSAllowsArbitraryLoads": true}"#, lines)
        #expect(unused(used).isEmpty)
        // An entry decides it: arbitrary loads are left with nothing to do.
        let covered = try F.app(#"{"NSAllowsArbitraryLoads": true, "NSAllowsArbitraryLoadsForMedia": true, "#
            + #""NSExceptionDomains": {"legacy.example.com": {"NSExceptionAllowsInsecureHTTPLoads": true}}}"#, lines)
        #expect(unused(covered) == ["NSAllowsArbitraryLoads", "NSAllowsArbitraryLoadsForMedia"])
        #expect(covered.suggestion.isProven)
    }

    @Test func anUnusedPinIsReported() throws {
        let policy = #"{"NSPinnedDomains": {"pinned.example.com": {"NSPinnedLeafIdentities": []}}}"#
        let app = try F.app(policy, [F.record("https", "other.example.com", 443)])
        #expect(unused(app) == ["NSPinnedDomains.pinned.example.com"])
    }

    @Test func theSuggestionAddsTheFixesRemovesTheUnusedAndIsProven() throws {
        let policy = #"{"NSAllowsArbitraryLoadsInWebContent": true, "NSExceptionDomains": {"#
            + #""legacy.example.com": {"NSExceptionAllowsInsecureHTTPLoads": true}, "gone.example.org": {}}}"#
        let report = try F.report(policy, [
            F.record("http", "legacy.example.com", 80),
            F.record("http", "api.example.com", 80, action: "block", reason: "cleartext-http"),
            F.record("https", "old.example.com", 443, action: "block", reason: "tls-version", tls: "TLSv1.0",
                     cipher: "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA"),
            F.record("https", "www.example.com", 443, tls: "TLSv1.3", cipher: "TLS_AES_256_GCM_SHA384"),
        ])
        let app = report.apps[0]
        #expect(app.suggestion.isProven)
        #expect(report.wouldBlock, "the app's own policy still blocks two destinations")
        let dictionary = app.suggestion.source.dictionary
        #expect(dictionary["NSAllowsArbitraryLoadsInWebContent"] == nil)
        let domains = try #require(dictionary["NSExceptionDomains"]?.dictionaryValue)
        #expect(domains.keys.sorted() == ["api.example.com", "legacy.example.com", "old.example.com"])
        // The proof, done again here by the engine itself on the plist the report prints.
        let printed = try PolicyLoader.parse(data: Data(report.plist.utf8), origin: "suggested.plist")
        #expect(printed.root == .infoPlist)
        let engine = DecisionEngine(policy: Policy(printed))
        for url in ["http://legacy.example.com/", "http://api.example.com/"] {
            #expect(engine.decide(try Destination.parse(url: url)).action == .allow, "\(url)")
        }
        #expect(engine.decide(try Destination.parse(url: "https://old.example.com/")).requirements.minimumTLSVersion == .tls10)
        #expect(engine.decide(try Destination.parse(url: "https://www.example.com/")).requirements == .full,
                "a host that needed nothing keeps full ATS")
    }

    @Test func globalKeysThatOnlyCancelEachOtherAllGo() throws {
        // NSAllowsLocalNetworking and ...ForMedia (present, any value) keep ATS on and so make
        // NSAllowsArbitraryLoads=YES dead (R12); nothing recorded needs any of them, and without all
        // three ATS is on by default: the same decisions.
        let policy = #"{"NSAllowsArbitraryLoads": true, "NSAllowsLocalNetworking": true, "NSAllowsArbitraryLoadsForMedia": false}"#
        let app = try F.app(policy, [F.record("https", "api.example.com", 443, tls: "TLSv1.3", cipher: "TLS_AES_128_GCM_SHA256")])
        #expect(Set(unused(app)) == ["NSAllowsArbitraryLoads", "NSAllowsLocalNetworking", "NSAllowsArbitraryLoadsForMedia"])
        #expect(app.suggestion.isProven)
        #expect(!app.suggestion.keptUnused)
        #expect(app.suggestion.source.dictionary.isEmpty)
    }

    @Test func withoutAMatchingPolicyTheEmptyDictionaryIsUsedAndSaidSo() throws {
        let summary = F.summary([F.record("http", "api.example.com", 80, app: "com.example.unknown")])
        let report = Report(summary: summary, policies: [try F.policy("{}", origin: "a.json"), try F.policy("{}", origin: "b.json")],
                            options: EngineOptions())
        #expect(report.apps[0].policyNote?.contains("no --policy matches app 'com.example.unknown'") == true)
        #expect(report.apps[0].policy.origin == "<embedded default>")
    }

    @Test func policiesAreMatchedToAppsByIDOrFileName() throws {
        let summary = F.summary([
            F.record("http", "a.example.com", 80, app: "com.example.one"),
            F.record("http", "a.example.com", 80, policy: "/etc/atsgate/two.plist"),
        ])
        let one = ReportPolicy(id: "com.example.one", source: try F.policy(#"{"NSAllowsArbitraryLoads": true}"#).source, text: nil)
        let two = try F.policy("{}", origin: "config/two.plist")
        let report = Report(summary: summary, policies: [one, two], options: EngineOptions())
        #expect(report.apps.map(\.app) == ["/etc/atsgate/two.plist", "com.example.one"])
        #expect(report.apps[0].policy.origin == "config/two.plist")
        #expect(report.apps[0].blocked.count == 1)
        #expect(report.apps[1].blocked.isEmpty)
    }
}

extension UnusedAndSuggestionTests {
    @Test func recordsOfTheEmbeddedDefaultAreJudgedUnderItWithoutANote() throws {
        let summary = F.summary([F.record("http", "api.example.com", 80, policy: "embedded")])
        let report = Report(summary: summary, policies: [], options: EngineOptions())
        #expect(report.apps[0].policyNote == nil)
        #expect(report.apps[0].policy.origin == "<embedded default>")
        #expect(report.apps[0].blocked.count == 1)
    }
}
