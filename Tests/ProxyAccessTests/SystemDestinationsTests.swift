import ATSPolicy
import Foundation
import Testing
import ProxyAccess

/// The system-destinations table: the shipped data (its source and date, the services the article
/// names), matching by name, suffix, port and address range, and the operator's `--system-dest`.
@Suite struct SystemDestinationsTests {
    static let apple = SystemDestinations.apple

    @Test func theShippedTableSaysWhereItComesFromAndWhen() {
        #expect(Self.apple.source.contains("101555") && Self.apple.source.contains("enterprise networks"))
        #expect(Self.apple.date.wholeMatch(of: /\d{4}-\d{2}-\d{2}/) != nil, "\(Self.apple.date)")
        #expect(Self.apple.entries.count > 50)
    }

    struct Row: Sendable, CustomStringConvertible {
        var host: String?
        var address: String?
        var port: UInt16
        var service: String?
        var description: String { "\(host ?? "-") \(address ?? "-"):\(port)" }
    }

    static let rows: [Row] = [
        // APNs by name on its ports, and by Apple's block on the push ports only.
        Row(host: "1-courier.push.apple.com", port: 5223, service: "Apple Push Notifications"),
        Row(host: "1-courier.push.apple.com", port: 443, service: "Apple Push Notifications"),
        Row(host: "courier.push.apple.com.", port: 2197, service: "Apple Push Notifications"),
        Row(host: nil, address: "17.57.146.20", port: 5223, service: "Apple Push Notifications (Apple's address block)"),
        Row(host: "17.57.146.20", port: 5223, service: "Apple Push Notifications (Apple's address block)"),
        Row(host: nil, address: "17.57.146.20", port: 443, service: nil),
        Row(host: "apps.example.com", address: "17.1.2.3", port: 443, service: nil),
        // Exact names on their ports; the captive probe over cleartext and TLS.
        Row(host: "captive.apple.com", port: 80, service: "Device setup: captive-portal detection"),
        Row(host: "captive.apple.com", port: 443, service: "Device setup: captive-portal detection"),
        Row(host: "captive.apple.com", port: 8080, service: nil),
        Row(host: "mesu.apple.com", port: 443, service: "Software update: the update catalogue"),
        Row(host: "ocsp.apple.com", port: 80, service: "Certificate validation"),
        // Suffixes cover the name itself and names under it, not names that merely end alike.
        Row(host: "gateway.icloud.com", port: 443, service: "iCloud"),
        Row(host: "icloud.com", port: 443, service: "iCloud"),
        Row(host: "p42-content.icloud-content.com", port: 443, service: "iCloud"),
        Row(host: "noticloud.com", port: 443, service: nil),
        Row(host: "icloud.com.example", port: 443, service: nil),
        // The app's own servers, and apple.com itself, stay the app's.
        Row(host: "api.example.com", port: 443, service: nil),
        Row(host: "apple.com", port: 443, service: nil),
        Row(host: "developer.apple.com", port: 443, service: nil),
    ]

    @Test(arguments: rows)
    func aDestinationIsTheSystemsByNamePortOrRange(_ row: Row) throws {
        let host = try row.host.map { try Host.parse($0) }
        let address = row.address.flatMap { IPAddress.parseStrict(Substring($0)) }
        #expect(Self.apple.match(host: host, address: address, port: row.port)?.service == row.service)
    }

    struct Operator: Sendable, CustomStringConvertible {
        var text: String
        var shown: String?
        var description: String { text }
    }

    static let operatorEntries: [Operator] = [
        Operator(text: "telemetry.lab.example", shown: "telemetry.lab.example"),
        Operator(text: ".mdm.lab.example:443", shown: ".mdm.lab.example:443"),
        Operator(text: "198.18.7.0/24:5223", shown: "198.18.7.0/24:5223"),
        Operator(text: "198.18.7.9", shown: "198.18.7.9"),
        Operator(text: "[2001:db8::/32]:5223", shown: "[2001:db8::/32]:5223"),
        Operator(text: "2001:db8::/32", shown: "2001:db8::/32"),
        Operator(text: "[::1]:80", shown: "[::1]:80"),
        Operator(text: "", shown: nil),
        Operator(text: "..x", shown: nil),
        Operator(text: "host:0", shown: nil),
        Operator(text: "host:70000", shown: nil),
        Operator(text: "host:https", shown: nil),
        Operator(text: "bad name!", shown: nil),
        Operator(text: "198.18.7.0/33", shown: nil),
    ]

    @Test(arguments: operatorEntries)
    func anOperatorsEntryIsANameSuffixOrRangeWithAPort(_ entry: Operator) {
        let parsed = try? SystemDestinations.parseOperatorEntry(entry.text)
        #expect(parsed?.description == entry.shown)
        if entry.shown == nil {
            #expect(throws: SystemDestinationError.self) { try SystemDestinations.parseOperatorEntry(entry.text) }
        }
    }

    @Test func anOperatorsEntryJoinsTheTableWithItsPort() throws {
        var table = SystemDestinations.apple
        table.add(try SystemDestinations.parseOperatorEntry(".mdm.lab.example:8443"))
        table.add(try SystemDestinations.parseOperatorEntry("198.18.7.0/24"))
        #expect(table.match(host: try Host.parse("a.mdm.lab.example"), address: nil, port: 8443)?.service == "operator (--system-dest)")
        #expect(table.match(host: try Host.parse("a.mdm.lab.example"), address: nil, port: 443) == nil)
        #expect(table.match(host: nil, address: IPAddress.parseStrict("198.18.7.200"), port: 1)?.service == "operator (--system-dest)")
        #expect(table.match(host: try Host.parse("captive.apple.com"), address: nil, port: 80) != nil, "the shipped entries stay")
    }

    @Test func aBrokenTableNamesTheEntryAndKey() {
        let text = #"{"source": "s", "date": "2026-11-27", "destinations": [{"match": "ok.example", "service": "a"}, {"match": "bad name", "service": "b"}]}"#
        #expect(throws: SystemDestinationError(text: "bad name", why: "destinations[1].match is not a name, .suffix or CIDR")) {
            try SystemDestinations.parse(data: Data(text.utf8))
        }
    }

    @Test func recordModeTellsTheSystemsTrafficApartAndJudgeModeLeavesItToTheApp() throws {
        let record = SystemTrafficRules()
        let judge = SystemTrafficRules(mode: .judge)
        let captive = "CaptiveNetworkSupport-407.0.1 wispr"
        let probe = record.classify(method: "GET", path: "/hotspot-detect.html", userAgent: captive, contentType: nil,
                                    host: try Host.parse("captive.apple.com"), address: nil, port: 80)
        #expect(probe?.kind == .captiveProbe && probe?.isCertificateFetch == false)
        #expect(judge.classify(method: "GET", path: "/hotspot-detect.html", userAgent: captive, contentType: nil,
                               host: try Host.parse("captive.apple.com"), address: nil, port: 80) == nil)
        // By the table without a telling User-Agent (the transparent path's TLS has none).
        let push = record.classify(tunnelTo: try Host.parse("1-courier.push.apple.com"), address: nil, port: 5223, userAgent: nil)
        #expect(push?.kind == .destination && push?.message.contains("Apple Push Notifications") == true)
        #expect(judge.classify(tunnelTo: try Host.parse("1-courier.push.apple.com"), address: nil, port: 5223, userAgent: nil) == nil)
        // A certificate fetch is the device's in both modes: ATS never judges trustd.
        for rules in [record, judge] {
            let fetch = rules.classify(method: "GET", path: "/ca.crt", userAgent: "com.apple.trustd/3.0", contentType: nil,
                                       host: try Host.parse("certs.example.com"), address: nil, port: 80)
            #expect(fetch?.kind == .trustd && fetch?.isCertificateFetch == true)
        }
        // A host outside the table stays the app's.
        #expect(record.classify(tunnelTo: try Host.parse("api.example.com"), address: nil, port: 443, userAgent: "Lab/1 CFNetwork/1") == nil)
    }
}
