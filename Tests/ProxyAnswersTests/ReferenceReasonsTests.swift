import ATSPolicy
import DecisionLog
import ProxyAnswers
import Testing
import TestSupport

/// docs/reference/reasons.md against `Reason.allCases`: every code the proxy can log is on the page
/// and every code on the page is one it can log, with the Proxy-Status type the code sends.
@Suite struct ReferenceReasonsTests {
    private static let rows = Result { try ReferencePage("docs/reference/reasons.md").table("reasons") }

    @Test func everyReasonCodeIsOnThePageAndNothingElseIs() throws {
        let documented = try Self.rows.get().map(\.name)
        let code = Reason.allCases.map(\.rawValue)
        #expect(Set(code).subtracting(documented).sorted() == [], "in Reason.allCases, not in reasons.md")
        #expect(Set(documented).subtracting(code).sorted() == [], "in reasons.md, not in Reason.allCases")
        #expect(documented.count == Set(documented).count, "a code listed twice")
    }

    @Test func eachReasonsProxyStatusTypeIsTheOneTheProxySends() throws {
        for row in try Self.rows.get() {
            guard let reason = Reason(rawValue: row.name) else { continue }
            #expect(ReferencePage.unquoted(row["Proxy-Status"] ?? "") == reason.proxyErrorType.rawValue,
                    "reasons.md line \(row.line): \(row.name)")
        }
    }

    @Test func aRuleIsNamedExactlyForTheReasonsAnATSRuleDecides() throws {
        for row in try Self.rows.get() {
            guard let reason = Reason(rawValue: row.name) else { continue }
            let names = (row["rule"] ?? "") != "—"
            #expect(names == reason.isATSRule, "reasons.md line \(row.line): \(row.name) \(reason.isATSRule ? "needs" : "names no") rule")
        }
    }

    @Test func theActionsOfFailuresAndAccessRulesAreTheOnesTheRecordsSay() throws {
        for row in try Self.rows.get() {
            guard let reason = Reason(rawValue: row.name) else { continue }
            if reason.isFailure { #expect(row["action"] == "error", "reasons.md line \(row.line): \(row.name) is a failure") }
            // An access rule blocks by default; an option may let it through (`--transparent-other allow`).
            if reason.enforcedInReportMode {
                #expect(row["action"]?.hasPrefix("block") == true, "reasons.md line \(row.line): \(row.name)")
            }
            if reason.isATSRule { #expect(row["action"] == "block", "reasons.md line \(row.line): \(row.name)") }
        }
    }
}

/// docs/reference/ats-rules.md, where the code's "ATS-SPEC Rn" citations point: a section for every
/// rule a record can name, and reason codes that exist.
@Suite struct ReferenceRulesTests {
    private static let page = Result { try ReferencePage("docs/reference/ats-rules.md") }

    /// The rules the page has a section (`<a id="rN">`) for.
    private static func sections(_ page: ReferencePage) -> [String] {
        page.text.matches(of: /<a id="(r[0-9]+a?)"><\/a>/).map { String($0.1).uppercased().replacing("A", with: "a") }
    }

    @Test func everyRuleFromR1ToR18AndEveryRuleARecordNamesHasASection() throws {
        let documented = Self.sections(try Self.page.get())
        let expected = (1...13).map { "R\($0)" } + RuleID.allCases.map(\.rawValue)
        #expect(documented == expected)
    }

    @Test func theReasonsEachRuleCitesAreCodesTheProxyLogsAndEveryATSReasonIsCited() throws {
        let page = try Self.page.get()
        let codes = Set(Reason.allCases.map(\.rawValue))
        var cited: Set<String> = []
        for line in page.text.split(separator: "\n\n").filter({ $0.hasPrefix("Reasons:") }) {
            for match in line.matches(of: /`([a-z0-9-]+)`/) {
                let code = String(match.1)
                #expect(codes.contains(code), "ats-rules.md cites `\(code)`, which is no reason code")
                cited.insert(code)
            }
        }
        let uncited = Reason.allCases.filter { $0.isATSRule && !cited.contains($0.rawValue) }.map(\.rawValue)
        #expect(uncited == [], "ATS reasons no rule of ats-rules.md cites")
    }

    @Test func theRulesInReasonsMdHaveSections() throws {
        let sections = Set(Self.sections(try Self.page.get()))
        for row in try ReferencePage("docs/reference/reasons.md").table("reasons") {
            for match in (row["rule"] ?? "").matches(of: /R[0-9]+a?/) {
                #expect(sections.contains(String(match.0)), "reasons.md line \(row.line) names \(match.0)")
            }
        }
    }
}
