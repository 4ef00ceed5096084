import ATSPolicy
import ATSReport
import Testing

/// The fix for each block, found by deciding again under a changed policy (ATS-SPEC R7-R17).
@Suite struct FixTests {
    typealias F = ReportFixtures

    private func changes(_ app: AppReport, _ url: String) throws -> [String] {
        try #require(app.destination(url)?.fix).changes.map(\.summary)
    }

    @Test func cleartextToAHostWithoutAnEntryGetsAnEntryOfItsOwn() throws {
        let app = try F.app("{}", [F.record("http", "api.example.com", 80, action: "block", reason: "cleartext-http")])
        let destination = try #require(app.destination("http://api.example.com:80"))
        #expect(destination.findings.map(\.reason) == ["cleartext-http"])
        let fix = try #require(destination.fix)
        #expect(fix.changes.map(\.summary) == ["NSExceptionAllowsInsecureHTTPLoads=YES for api.example.com"])
        #expect(fix.verified)
        #expect(fix.needsJustification, "App Review asks about insecure HTTP loads")
        #expect(fix.scope == nil)
    }

    @Test func cleartextIsJudgedUnderTheGivenPolicyNotTheLoggedAction() throws {
        // Logged as allowed (the proxy ran with another policy), blocked under this one; and the reverse.
        let app = try F.app(#"{"NSExceptionDomains": {"legacy.example.com": {"NSExceptionAllowsInsecureHTTPLoads": true}}}"#, [
            F.record("http", "api.example.com", 80, action: "allow"),
            F.record("http", "legacy.example.com", 80, action: "block", reason: "cleartext-http"),
        ])
        #expect(app.destination("http://api.example.com:80")?.isBlocked == true)
        #expect(app.destination("http://legacy.example.com:80")?.isBlocked == false)
    }

    static let mediaLog = [
        F.record("http", "a.media.example.com", 80, action: "block", reason: "cleartext-http"),
        F.record("http", "b.media.example.com", 80, action: "block", reason: "cleartext-http"),
        F.record("http", "c.media.example.com", 8080, action: "block", reason: "cleartext-http"),
        F.record("https", "api.example.com", 443, tls: "TLSv1.3", cipher: "TLS_AES_128_GCM_SHA256"),
    ]

    @Test func theFixIsOnTheExactHostAndTheParentEntryIsTheAlternative() throws {
        let app = try F.app("{}", Self.mediaLog)
        for host in ["a", "b", "c"] {
            let port = host == "c" ? 8080 : 80
            let fix = try #require(app.destination("http://\(host).media.example.com:\(port)")?.fix)
            #expect(fix.changes.map(\.summary) == ["NSExceptionAllowsInsecureHTTPLoads=YES for \(host).media.example.com"],
                    "the narrowest key: on the host itself")
            #expect(fix.verified)
            let alternative = try #require(fix.alternative, "the parent entry beside it")
            #expect(alternative.changes.map(\.summary) == ["NSIncludesSubdomains=YES for media.example.com",
                                                           "NSExceptionAllowsInsecureHTTPLoads=YES for media.example.com"])
            #expect(alternative.hosts == ["a.media.example.com", "b.media.example.com", "c.media.example.com"])
            #expect(alternative.destinations == 3)
            #expect(alternative.others == 0)
            #expect(alternative.opens.contains("media.example.com itself and every other subdomain of it"))
        }
        #expect(app.suggestion.isProven)
        #expect(app.changes.map(\.summary) == ["NSExceptionAllowsInsecureHTTPLoads=YES for a.media.example.com",
                                               "NSExceptionAllowsInsecureHTTPLoads=YES for b.media.example.com",
                                               "NSExceptionAllowsInsecureHTTPLoads=YES for c.media.example.com"],
                "the suggested dictionary opens only the hosts recorded")
    }

    @Test func consolidateSuggestsTheParentEntryInstead() throws {
        let app = try F.app("{}", Self.mediaLog, settings: ReportSettings(consolidate: true))
        #expect(app.changes.map(\.summary) == ["NSIncludesSubdomains=YES for media.example.com",
                                               "NSExceptionAllowsInsecureHTTPLoads=YES for media.example.com"], "one entry, not three")
        #expect(app.suggestion.isProven)
        // The per-destination fix stays the narrowest either way.
        #expect(try changes(app, "http://a.media.example.com:80") == ["NSExceptionAllowsInsecureHTTPLoads=YES for a.media.example.com"])
        let plist = Report(summary: F.summary(Self.mediaLog), policies: [try F.policy("{}")], options: EngineOptions(),
                           settings: ReportSettings(consolidate: true)).plist
        #expect(plist.contains("<key>media.example.com</key>"))
        #expect(!plist.contains("<key>a.media.example.com</key>"))
        let narrow = try F.report("{}", Self.mediaLog).plist
        #expect(narrow.contains("<key>a.media.example.com</key>") && !narrow.contains("<key>media.example.com</key>"))
    }

    @Test func aParentIsNotSuggestedWhenItWouldTurnOffCertificateChecksForAnotherHost() throws {
        // www.media.example.com is fine over HTTPS with full ATS; a parent entry with insecure loads would
        // turn its certificate checks off, so each host gets its own entry.
        let app = try F.app("{}", [
            F.record("http", "a.media.example.com", 80, action: "block", reason: "cleartext-http"),
            F.record("http", "b.media.example.com", 80, action: "block", reason: "cleartext-http"),
            F.record("https", "www.media.example.com", 443, tls: "TLSv1.3", cipher: "TLS_AES_128_GCM_SHA256"),
        ])
        #expect(try changes(app, "http://a.media.example.com:80") == ["NSExceptionAllowsInsecureHTTPLoads=YES for a.media.example.com"])
        #expect(try changes(app, "http://b.media.example.com:80") == ["NSExceptionAllowsInsecureHTTPLoads=YES for b.media.example.com"])
        #expect(app.destination("http://a.media.example.com:80")?.fix?.alternative == nil, "no parent, not even as an alternative")
    }

    @Test func aSharedPublicSuffixIsNeverTheParent() throws {
        let app = try F.app("{}", [
            F.record("http", "one.co.uk", 80, action: "block", reason: "cleartext-http"),
            F.record("http", "two.co.uk", 80, action: "block", reason: "cleartext-http"),
        ])
        #expect(try changes(app, "http://one.co.uk:80") == ["NSExceptionAllowsInsecureHTTPLoads=YES for one.co.uk"])
    }

    @Test(arguments: [("TLSv1.0", "TLSv1.0"), ("TLSv1.1", "TLSv1.1")])
    func anOldTLSVersionGetsTheMinimumVersionSeen(seen: String, expected: String) throws {
        let app = try F.app("{}", [F.record("https", "old.example.com", 443, action: "block", reason: "tls-version",
                                            tls: seen, cipher: "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA")])
        let fix = try #require(app.destination("https://old.example.com:443")?.fix)
        #expect(fix.changes.map(\.summary) == ["NSExceptionMinimumTLSVersion=\(expected) for old.example.com"])
        #expect(fix.needsJustification)
        #expect(fix.verified)
    }

    @Test func aSuiteWithoutForwardSecrecyNeedsForwardSecrecyOffAndNoJustification() throws {
        let app = try F.app("{}", [F.record("https", "nofs.example.com", 443, action: "block", reason: "cipher-suite",
                                            tls: "TLSv1.2", cipher: "TLS_RSA_WITH_AES_256_GCM_SHA384")])
        let fix = try #require(app.destination("https://nofs.example.com:443")?.fix)
        #expect(fix.changes.map(\.summary) == ["NSExceptionRequiresForwardSecrecy=NO for nofs.example.com"])
        #expect(!fix.needsJustification)
        #expect(fix.verified)
    }

    @Test func aHandshakeThatMeetsTheRequirementsNeedsNothingWhateverTheLogSaid() throws {
        let app = try F.app("{}", [F.record("https", "ok.example.com", 443, action: "block", reason: "tls-version",
                                            tls: "TLSv1.2", cipher: "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256")])
        #expect(app.destination("https://ok.example.com:443")?.isBlocked == false)
    }

    @Test(arguments: ["certificate-expired", "certificate-untrusted", "certificate-hostname"])
    func aCertificateFailureHasNoKeyOnlyFixTheServer(reason: String) throws {
        let app = try F.app("{}", [F.record("https", "bad.example.com", 443, action: "block", reason: reason,
                                            tls: "TLSv1.2", cipher: "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256")])
        let fix = try #require(app.destination("https://bad.example.com:443")?.fix)
        #expect(fix.changes.isEmpty)
        let advice = try #require(fix.unfixable.first?.advice)
        #expect(advice.hasPrefix("fix the server"))
        #expect(advice.contains("NSExceptionAllowsInsecureHTTPLoads=YES") && advice.contains("turns certificate checks off"))
        #expect(!app.suggestion.isProven, "a certificate failure cannot be proven away")
    }

    @Test func aDistrustedCertificateIsTheServersToFixAndNoKeyIsOffered() throws {
        let app = try F.app("{}", [F.record("https", "old-ca.example.com", 443, action: "block", reason: "certificate-distrusted",
                                            tls: "TLSv1.2", cipher: "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256")])
        let fix = try #require(app.destination("https://old-ca.example.com:443")?.fix)
        #expect(fix.changes.isEmpty)
        let advice = try #require(fix.unfixable.first?.advice)
        #expect(advice.hasPrefix("fix the server: old-ca.example.com's certificate comes from a CA that Apple distrusts"))
        #expect(advice.contains("no ATS key makes the device trust it") && !advice.contains("NSExceptionAllowsInsecureHTTPLoads"))
        #expect(app.suggestion.added.isEmpty, "no plist exception for it")
    }

    @Test func aToleratedCertificateFindingBlocksOnceCertificateChecksApply() throws {
        let line = F.record("https", "lax.example.com", 443, tls: "TLSv1.2", cipher: "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
                            extra: #","cert_tolerated":["certificate-expired"]"#)
        let lax = try F.app(#"{"NSExceptionDomains": {"lax.example.com": {"NSExceptionAllowsInsecureHTTPLoads": true}}}"#, [line])
        #expect(lax.destination("https://lax.example.com:443")?.isBlocked == false)
        let strict = try F.app("{}", [line])
        #expect(strict.destination("https://lax.example.com:443")?.findings.map(\.reason) == ["certificate-expired"])
    }

    @Test func aPinFailureNamesThePins() throws {
        let policy = #"{"NSPinnedDomains": {"pinned.example.com": {"NSPinnedLeafIdentities": [{"SPKI-SHA256-BASE64": "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}]}}}"#
        let app = try F.app(policy, [F.record("https", "pinned.example.com", 443, action: "block", reason: "certificate-pin",
                                              tls: "TLSv1.3", cipher: "TLS_AES_128_GCM_SHA256")])
        let advice = try #require(app.destination("https://pinned.example.com:443")?.fix?.unfixable.first?.advice)
        #expect(advice.hasPrefix("the pins: NSPinnedDomains entry 'pinned.example.com'"))
    }

    @Test func aHostUnderAParentEntryKeepsThatEntrysOtherSettingsInItsOwn() throws {
        let policy = #"{"NSExceptionDomains": {"example.com": {"NSIncludesSubdomains": true, "NSExceptionMinimumTLSVersion": "TLSv1.1"}}}"#
        let app = try F.app(policy, [
            F.record("http", "api.example.com", 80, action: "block", reason: "cleartext-http"),
            F.record("https", "api.example.com", 443, tls: "TLSv1.1", cipher: "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA"),
        ])
        #expect(try changes(app, "http://api.example.com:80") == [
            "NSExceptionMinimumTLSVersion=TLSv1.1 for api.example.com",
            "NSExceptionAllowsInsecureHTTPLoads=YES for api.example.com",
        ])
        #expect(app.destination("https://api.example.com:443")?.isBlocked == false)
        #expect(app.suggestion.isProven, "the TLS 1.1 load stays allowed under the new entry")
    }

    @Test func aHostWithItsOwnEntryIsFixedInThatEntry() throws {
        let policy = #"{"NSExceptionDomains": {"api.example.com": {"NSExceptionRequiresForwardSecrecy": false}}}"#
        let app = try F.app(policy, [F.record("http", "api.example.com", 80, action: "block", reason: "cleartext-http")])
        #expect(try changes(app, "http://api.example.com:80") == ["NSExceptionAllowsInsecureHTTPLoads=YES for api.example.com"])
        let entry = app.suggestion.source.dictionary["NSExceptionDomains"]?.dictionaryValue?["api.example.com"]?.dictionaryValue
        #expect(entry?["NSExceptionRequiresForwardSecrecy"] == .bool(false), "the entry's other keys stay")
    }

    @Test func aLocalDestinationUnderLocalNetworkingNoGetsTheGlobalKey() throws {
        let app = try F.app(#"{"NSAllowsLocalNetworking": false}"#,
                            [F.record("http", "printer.local", 80, action: "block", reason: "cleartext-http")])
        let fix = try #require(app.destination("http://printer.local:80")?.fix)
        #expect(fix.changes.map(\.summary) == ["NSAllowsLocalNetworking=YES"])
        #expect(!fix.needsJustification)
        #expect(fix.verified)
    }

    @Test func underIOS9ALocalDestinationNeedsAnExceptionEntry() throws {
        let app = try F.app("{}", [F.record("http", "printer.local", 80, action: "block", reason: "cleartext-http")],
                            profile: .ios9)
        #expect(try changes(app, "http://printer.local:80") == ["NSExceptionAllowsInsecureHTTPLoads=YES for printer.local"])
        #expect(app.destination("http://printer.local:80")?.fix?.verified == true)
    }

    @Test func theProxysOwnRefusalsAreBlocksNoKeyChanges() throws {
        let app = try F.app("{}", [F.record("https", "api.example.com", 8443, action: "block", reason: "port-not-allowed")])
        let destination = try #require(app.destination("https://api.example.com:8443"))
        #expect(destination.findings.map(\.isATS) == [false])
        #expect(destination.fix?.changes.isEmpty == true)
        #expect(destination.fix?.unfixable.first?.advice.contains("not an ATS decision") == true)
    }

    @Test func aDestinationTheProxyRefusedBeforeTLSIsNeitherUncheckedNorUnproven() throws {
        let app = try F.app("{}", [F.record("https", "api.example.com", 8443, action: "block", reason: "port-not-allowed",
                                            enforced: true)])
        let destination = try #require(app.destination("https://api.example.com:8443"))
        #expect(destination.notChecked == nil, "no handshake was ever to be had: it is not NOT CHECKED as well")
        #expect(app.suggestion.isProven, "a port no key changes leaves the suggested dictionary proven")
        #expect(app.suggestion.added.isEmpty)
    }

    @Test func anAllowedTunnelWithoutAHandshakeStaysNotChecked() throws {
        let app = try F.app("{}", [F.record("https", "api.example.com", 443)])
        #expect(app.destination("https://api.example.com:443")?.notChecked == "no handshake in the log")
    }

    @Test func unknownReasonsAndActionsAreCountedButNeverBlocks() throws {
        let app = try F.app("{}", [
            F.record("https", "api.example.com", 443, action: "error", reason: "server-alert"),
            F.record("https", "api.example.com", 443, action: "close", reason: "request-timeout"),
            F.record("https", "api.example.com", 443, action: "teleport", reason: "brand-new-code"),
        ])
        let destination = try #require(app.destination("https://api.example.com:443"))
        #expect(!destination.isBlocked)
        #expect(destination.traffic.reasons.count == 3)
    }
}

extension FixTests {
    @Test func localNetworkingStaysNoWhenYesWouldExemptAnotherRecordedLocalHost() throws {
        // nas.local is fine under ATS over HTTPS; NSAllowsLocalNetworking=YES would exempt it too.
        let app = try F.app(#"{"NSAllowsLocalNetworking": false}"#, [
            F.record("http", "printer.local", 80, action: "block", reason: "cleartext-http"),
            F.record("https", "nas.local", 443, tls: "TLSv1.3", cipher: "TLS_AES_128_GCM_SHA256"),
        ])
        #expect(try changes(app, "http://printer.local:80") == ["NSExceptionAllowsInsecureHTTPLoads=YES for printer.local"])
        #expect(app.suggestion.isProven)
    }
}

extension FixTests {
    @Test func anEntryReplacingABuiltInKeepsItsSubdomains() throws {
        // apple.com's built-in requires TLSv1.2 and covers its subdomains (R9); an app entry with the
        // same key for a TLS 1.1 server replaces it, so it must cover the subdomains too.
        let app = try F.app("{}", [F.record("https", "apple.com", 443, action: "block", reason: "tls-version", tls: "TLSv1.1",
                                            cipher: "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA")])
        let changes = try #require(app.destination("https://apple.com:443")?.fix).changes.map(\.summary)
        #expect(changes.first == "NSIncludesSubdomains=YES for apple.com", "\(changes)")
        #expect(changes.contains("NSExceptionMinimumTLSVersion=TLSv1.1 for apple.com"))
        let engine = DecisionEngine(policy: Policy(app.suggestion.source))
        let sub = engine.decide(try Destination.parse(url: "http://www.apple.com/"))
        #expect(sub.exception?.entry.key == "apple.com" && sub.action == .allow,
                "subdomains the built-in covered stay covered by the replacing entry")
    }
}

/// The load context comes from the record's `user_agent` (device-lab logs): media and web content are
/// decided by their own keys (R12).
@Suite struct LoadContextTests {
    typealias F = ReportFixtures
    static let media = #","user_agent":"AppleCoreMedia/1.0.0.21A329 (iPhone; U; CPU OS 17_0 like Mac OS X; en_us)""#
    static let app = #","user_agent":"Shop/1.2 CFNetwork/1490.0.4 Darwin/23.0.0""#
    static let policy = #"{"NSAllowsArbitraryLoadsForMedia": true}"#

    @Test func aMediaLoadIsAllowedByTheMediaKeyAndAnAppLoadIsNot() throws {
        let app = try F.app(Self.policy, [
            F.record("http", "video.example.com", 80, extra: Self.media),
            F.record("http", "api.example.com", 80, extra: Self.app),
        ])
        #expect(app.destination("http://video.example.com:80")?.isBlocked == false)
        #expect(app.destination("http://video.example.com:80")?.traffic.contexts == [.media])
        #expect(app.destination("http://api.example.com:80")?.isBlocked == true)
        #expect(app.unused.isEmpty, "NSAllowsArbitraryLoadsForMedia decided the media load")
        #expect(app.suggestion.source.dictionary["NSAllowsArbitraryLoadsForMedia"] == .bool(true))
        #expect(app.suggestion.isProven)
    }

    @Test func withoutMediaLoadsTheMediaKeyIsUnused() throws {
        let app = try F.app(Self.policy, [F.record("https", "api.example.com", 443, tls: "TLSv1.3",
                                                   cipher: "TLS_AES_128_GCM_SHA256", extra: Self.app)])
        #expect(app.unused.map(\.change.summary) == ["remove NSAllowsArbitraryLoadsForMedia"])
    }

    @Test func emptyAndRepeatedUserAgentsAreTheApps() throws {
        let empty = #","user_agent":"""#
        let app = try F.app(Self.policy, [
            F.record("http", "a.example.com", 80, extra: empty), F.record("http", "a.example.com", 80, extra: empty),
            F.record("http", "v.example.com", 80, extra: Self.media), F.record("http", "v.example.com", 80, extra: Self.media),
            F.record("http", "a.example.com", 80, extra: Self.app),
        ])
        #expect(app.destination("http://a.example.com:80")?.traffic.contexts == [.app])
        #expect(app.destination("http://v.example.com:80")?.traffic.contexts == [.media])
    }

    @Test func aDestinationLoadedFromTheAppAndByMediaIsJudgedInBoth() throws {
        let app = try F.app(Self.policy, [
            F.record("http", "cdn.example.com", 80, extra: Self.media),
            F.record("http", "cdn.example.com", 80, extra: Self.app),
        ])
        let destination = try #require(app.destination("http://cdn.example.com:80"))
        #expect(destination.traffic.contexts == [.app, .media])
        #expect(destination.findings.map(\.detail) == ["cleartext HTTP to cdn.example.com is not allowed"],
                "the app's load is blocked, the media one is not")
    }
}
