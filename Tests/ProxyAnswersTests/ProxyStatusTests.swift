import ATSPolicy
import Foundation
import POSIX
import Testing
@testable import HTTP1
@testable import DecisionLog
@testable import ProxyAnswers

/// Proxy-Status (RFC 9209) as the proxy writes it: every reason has an error type of the RFC's
/// registry, and the README's table says the same as the code. The field's syntax is checked by a
/// real Structured Field Values parser in the CLI tests (ProxyStatusDaemonTests).
@Suite struct ProxyStatusTests {
    /// The registry of RFC 9209 section 2.3 (IANA "HTTP Proxy Error Types").
    static let registry: Set<String> = [
        "dns_timeout", "dns_error", "destination_not_found", "destination_unavailable", "destination_ip_prohibited",
        "destination_ip_unroutable", "connection_refused", "connection_terminated", "connection_timeout",
        "connection_read_timeout", "connection_write_timeout", "connection_limit_reached", "tls_protocol_error",
        "tls_certificate_error", "tls_alert_received", "http_request_error", "http_request_denied",
        "http_response_incomplete", "http_response_header_section_size", "http_response_header_size",
        "http_response_body_size", "http_response_trailer_section_size", "http_response_trailer_size",
        "http_response_transfer_coding", "http_response_content_coding", "http_response_timeout",
        "http_upgrade_failed", "http_protocol_error", "proxy_internal_response", "proxy_internal_error",
        "proxy_configuration_error", "proxy_loop_detected",
    ]

    @Test(arguments: Reason.allCases)
    func everyReasonHasARegisteredErrorType(reason: Reason) {
        #expect(Self.registry.contains(reason.proxyErrorType.rawValue), "\(reason.rawValue)")
    }

    @Test func everyTypeTheProxyUsesIsRegistered() {
        for type in ProxyErrorType.allCases { #expect(Self.registry.contains(type.rawValue), "\(type)") }
    }

    /// docs/proxy.md's "Proxy-Status" table: one row per reason, its error type as the code has it.
    @Test func theProxyPageMapsEveryReasonToItsProxyStatus() throws {
        let readme = try String(contentsOfFile: URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("docs/proxy.md").path, encoding: .utf8)
        let section = try #require(readme.range(of: "<!-- proxy-status-table -->"), "docs/proxy.md has the table's marker")
        var rows: [String: String] = [:]
        for line in readme[section.upperBound...].split(separator: "\n").dropFirst(2) {
            guard line.hasPrefix("|") else { break }
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            let reasons = cells[0].matches(of: /`([a-z0-9-]+)`/).map { String($0.1) }
            let type = try #require(cells[1].firstMatch(of: /`([a-z_]+)`/).map { String($0.1) }, "\(line)")
            for reason in reasons { rows[reason] = type }
        }
        for reason in Reason.allCases {
            #expect(rows[reason.rawValue] == reason.proxyErrorType.rawValue,
                    "README's Proxy-Status table: \(reason.rawValue) -> \(rows[reason.rawValue] ?? "missing")")
        }
        #expect(Set(rows.keys) == Set(Reason.allCases.map(\.rawValue)), "no row names a reason that does not exist")
    }

    @Test func detailsNameTheReasonAndForATSTheRule() {
        #expect(ProxyStatus.details(.ats(.cleartextHTTP), rule: "R10") == "cleartext-http R10")
        #expect(ProxyStatus.details(.ats(.certificatePin), rule: nil) == "certificate-pin")
        #expect(ProxyStatus.details(.dnsNXDomain, rule: "R12") == "dns-nxdomain", "the proxy's own reasons have no rule")
        #expect(ProxyStatus.details(.ats(.portNotAllowed), rule: "R12") == "port-not-allowed",
                "nor do its access rules, whatever the destination's lookup said")
        #expect(ProxyStatus.details(.ats(.clientNotAllowed), rule: "R12") == "client-not-allowed")
    }

    @Test func theFieldIsOneMemberWithItsParameters() throws {
        let name = ProxyName.atsgate
        #expect(ProxyStatus.bare.value(name: name) == "atsgate")
        let failure = ProxyStatus(error: .dnsError, details: "dns-nxdomain", rcode: "NXDOMAIN")
        #expect(failure.value(name: name) == #"atsgate; error=dns_error; rcode="NXDOMAIN"; details="dns-nxdomain""#)
        let parent = ProxyStatus(error: .connectionRefused, details: "parent-refused", nextHop: "10.0.0.8:3128",
                                 receivedStatus: 403)
        #expect(parent.value(name: try ProxyName("lab proxy \"3\"")) ==
                #""lab proxy \"3\""; error=connection_refused; next-hop="10.0.0.8:3128"; received-status=403; details="parent-refused""#)
    }

    @Test func aNameIsATokenWhenItCanBeAndAStringOtherwise() throws {
        #expect(try ProxyName("atsgate-lab3").member == "atsgate-lab3")
        #expect(try ProxyName("proxy.lab.example:3128").member == "proxy.lab.example:3128")
        #expect(try ProxyName("3rd-floor").member == #""3rd-floor""#, "a token starts with a letter or *")
        #expect(try ProxyName(#"a\b"#).member == #""a\\b""#)
        #expect(throws: ProxyNameError.self) { try ProxyName("") }
        #expect(throws: ProxyNameError.self) { try ProxyName("caf\u{e9}") }
        #expect(throws: ProxyNameError.self) { try ProxyName("a\tb") }
    }

    @Test func anSFStringNeverCarriesWhatItCannotHold() {
        #expect(StructuredField.string("d\u{e9}j\u{e0}\n") == #""d??j???""#)
    }

    @Test func theRFCTypesFollowTheVerdict() throws {
        let record = DecisionRecord(time: 0, client: SocketAddress(ip: .v4(0x7F00_0001), port: 1), method: "GET")
        #expect(ProxyStatus(.serve(contentType: "x", body: "", includeBody: true), record: record).error == .proxyInternalResponse)
        #expect(ProxyStatus(.challenge(message: "m"), record: record).details == "auth-required")
        var redirected = record
        redirected.decision = DecisionEngine(policy: .empty)
            .decide(try Destination.parse(url: "http://a.example/"), context: .app)
        #expect(ProxyStatus(.redirect(location: "https://a.example/"), record: redirected).details == "upgrade R12",
                "a redirect's record is the action upgrade with no reason, and so are its details")
        #expect(ProxyStatus(.throttle(message: "m", retryAfter: 3), record: record).error == .httpRequestError)
        var viaParent = record
        viaParent.parent = "squid.lab:3128"
        let refused = ProxyStatus(.fail(.parentRefused, status: 502, message: "m", answer: NextHopAnswer(receivedStatus: 403)),
                                  record: viaParent)
        #expect(refused == ProxyStatus(error: .connectionRefused, details: "parent-refused", nextHop: "squid.lab:3128",
                                       receivedStatus: 403))
        #expect(ProxyStatus(.fail(.upstreamRefused, status: 502, message: "m"), record: viaParent).nextHop == nil,
                "only a parent's failure names the parent")
    }
}
