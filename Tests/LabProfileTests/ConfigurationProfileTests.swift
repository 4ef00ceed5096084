import ATSPolicy
import Foundation
import Testing
import TestSupport
@testable import LabProfile

/// The profile builder: each shape a lab asks for is a valid profile by Apple's reference (checked on
/// the value and again on the XML parsed back by PropertyListSerialization), with the values the
/// device needs in the keys it reads them from.
@Suite struct ConfigurationProfileTests {
    static let identifier = try! ProfileIdentifier(parsing: "com.example.lab")
    static let server = try! ProxyServer(parsing: "atsgate.lab.example:3128")
    static let pac = try! PACURL(parsing: "http://atsgate.lab.example:3128/proxy.pac")
    static let root = RootCertificate(der: [0x30, 0x82, 0x01, 0x0A], fileName: "lab-ca.cer", name: "atsgate lab CA")
    static let second = RootCertificate(der: [0x30, 0x03, 0x02, 0x01, 0x01], fileName: "old-ca.cer", name: "old lab CA")

    static let shapes: [(String, ConfigurationProfile)] = [
        ("global manual, login, two roots", ConfigurationProfile(
            identifier: identifier, proxy: .manual(server, credentials: try! ProxyCredentials(user: "lab", password: "s3cret")),
            carrier: .global(captiveLoginAllowed: false), roots: [root, second], organization: "Example Lab")),
        ("global manual, user only", ConfigurationProfile(
            identifier: identifier, proxy: .manual(server, credentials: try! ProxyCredentials(user: "lab", password: nil)),
            carrier: .global(captiveLoginAllowed: true))),
        ("global auto", ConfigurationProfile(
            identifier: identifier, proxy: .auto(pac, fallbackAllowed: false), carrier: .global(captiveLoginAllowed: false),
            roots: [root], displayName: "Lab proxy", description: "Set up by the lab.")),
        ("wifi manual", ConfigurationProfile(
            identifier: identifier, proxy: .manual(server, credentials: try! ProxyCredentials(user: "lab", password: "s3cret")),
            carrier: .wifi(try! WiFiNetwork(ssid: "DeviceLab", security: .wpa2, password: "wifi-pass", hidden: true)))),
        ("wifi auto, open network", ConfigurationProfile(
            identifier: identifier, proxy: .auto(pac, fallbackAllowed: true),
            carrier: .wifi(try! WiFiNetwork(ssid: "Open Lab", security: .none, password: nil, hidden: false)), roots: [root])),
    ]

    @Test(arguments: shapes.map(\.0))
    func everyShapeIsAValidProfile(name: String) throws {
        let profile = try #require(Self.shapes.first { $0.0 == name }?.1)
        let value = profile.plist()
        #expect(ProfileSchema.problems(value) == [])
        let xml = try profile.xml()
        #expect(ProfileSchema.problems(xml: xml) == [])
        #expect(String(decoding: xml, as: UTF8.self).hasPrefix("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE plist"))
        #expect(xml.last == UInt8(ascii: "\n"))
    }

    /// Parsed back, the XML is the value that was built: nothing lost or retyped on the way out.
    @Test(arguments: shapes.map(\.0))
    func theXMLIsTheValue(name: String) throws {
        let profile = try #require(Self.shapes.first { $0.0 == name }?.1)
        let uuids = (0..<8).map { _ in UUID() }
        func sequence() -> () -> UUID {
            var next = 0
            return { defer { next += 1 }; return uuids[next] }
        }
        let value = profile.plist(newUUID: sequence())
        let xml = try profile.xml(newUUID: sequence())
        var format = PropertyListSerialization.PropertyListFormat.xml
        let back = try PropertyListDecoder().decode(PlistValue.self, from: xml, format: &format)
        #expect(back == value)
    }

    @Test func globalManualProxy() throws {
        let top = try dictionary(Self.shapes[0].1.plist())
        #expect(top["PayloadType"] == .string("Configuration"))
        #expect(top["PayloadVersion"] == .integer(1))
        #expect(top["PayloadIdentifier"] == .string("com.example.lab"))
        #expect(top["PayloadScope"] == .string("System"))
        #expect(top["PayloadOrganization"] == .string("Example Lab"))
        #expect(top["PayloadDisplayName"] == .string("atsgate proxy atsgate.lab.example:3128"))
        let description = try #require(top["PayloadDescription"]?.stringValue)
        #expect(description.contains("atsgate.lab.example:3128 as user lab"))
        #expect(description.contains("atsgate lab CA, old lab CA"))
        #expect(!description.contains("s3cret"))
        let payloads = try #require(top["PayloadContent"]?.arrayValue).map(dictionary)
        #expect(payloads.map { $0["PayloadType"]?.stringValue } == ["com.apple.security.root", "com.apple.security.root",
                                                                    "com.apple.proxy.http.global"])
        #expect(payloads.map { $0["PayloadIdentifier"]?.stringValue } == ["com.example.lab.ca.1", "com.example.lab.ca.2",
                                                                          "com.example.lab.proxy"])
        #expect(payloads[0]["PayloadContent"] == .data(Data([0x30, 0x82, 0x01, 0x0A])))
        #expect(payloads[0]["PayloadCertificateFileName"] == .string("lab-ca.cer"))
        #expect(payloads[0]["PayloadDisplayName"] == .string("atsgate lab CA"))
        #expect(payloads[1]["PayloadContent"] == .data(Data([0x30, 0x03, 0x02, 0x01, 0x01])))
        let proxy = payloads[2]
        #expect(proxy["ProxyType"] == .string("Manual"))
        #expect(proxy["ProxyServer"] == .string("atsgate.lab.example"))
        #expect(proxy["ProxyServerPort"] == .integer(3128))
        #expect(proxy["ProxyUsername"] == .string("lab"))
        #expect(proxy["ProxyPassword"] == .string("s3cret"))
        #expect(proxy["ProxyCaptiveLoginAllowed"] == .bool(false))
        #expect(proxy["ProxyPACURL"] == nil)
        #expect(payloads.allSatisfy { $0["PayloadOrganization"] == .string("Example Lab") })
        #expect(Self.shapes[0].1.holdsPassword)
    }

    @Test func userWithoutPasswordAndCaptiveLogin() throws {
        let top = try dictionary(Self.shapes[1].1.plist())
        let proxy = try dictionary(try #require(top["PayloadContent"]?.arrayValue?.last))
        #expect(proxy["ProxyUsername"] == .string("lab"))
        #expect(proxy["ProxyPassword"] == nil)
        #expect(proxy["ProxyCaptiveLoginAllowed"] == .bool(true))
        #expect(top["PayloadOrganization"] == nil)
        #expect(!Self.shapes[1].1.holdsPassword)
    }

    @Test func globalAutoProxy() throws {
        let top = try dictionary(Self.shapes[2].1.plist())
        #expect(top["PayloadDisplayName"] == .string("Lab proxy"))
        #expect(top["PayloadDescription"] == .string("Set up by the lab."))
        let proxy = try dictionary(try #require(top["PayloadContent"]?.arrayValue?.last))
        #expect(proxy["ProxyType"] == .string("Auto"))
        #expect(proxy["ProxyPACURL"] == .string("http://atsgate.lab.example:3128/proxy.pac"))
        #expect(proxy["ProxyPACFallbackAllowed"] == .bool(false))
        for key in ["ProxyServer", "ProxyServerPort", "ProxyUsername", "ProxyPassword"] {
            #expect(proxy[key] == nil, "\(key) has no place under Auto")
        }
    }

    @Test func wifiCarriesTheProxyAndNoGlobalPayload() throws {
        let top = try dictionary(Self.shapes[3].1.plist())
        #expect(top["PayloadDisplayName"] == .string("DeviceLab through atsgate"))
        let payloads = try #require(top["PayloadContent"]?.arrayValue).map(dictionary)
        #expect(payloads.count == 1)
        let wifi = payloads[0]
        #expect(wifi["PayloadType"] == .string("com.apple.wifi.managed"))
        #expect(wifi["PayloadIdentifier"] == .string("com.example.lab.wifi"))
        #expect(wifi["SSID_STR"] == .string("DeviceLab"))
        #expect(wifi["EncryptionType"] == .string("WPA2"))
        #expect(wifi["Password"] == .string("wifi-pass"))
        #expect(wifi["HIDDEN_NETWORK"] == .bool(true))
        #expect(wifi["AutoJoin"] == .bool(true))
        #expect(wifi["ProxyType"] == .string("Manual"))
        #expect(wifi["ProxyServer"] == .string("atsgate.lab.example"))
        #expect(wifi["ProxyServerPort"] == .integer(3128))
        #expect(wifi["ProxyUsername"] == .string("lab"))
        #expect(wifi["ProxyPassword"] == .string("s3cret"))
        #expect(wifi["ProxyCaptiveLoginAllowed"] == nil, "not a Wi-Fi payload key")

        let open = try dictionary(Self.shapes[4].1.plist())
        let openWifi = try dictionary(try #require(open["PayloadContent"]?.arrayValue?.last))
        #expect(openWifi["EncryptionType"] == .string("None"))
        #expect(openWifi["Password"] == nil)
        #expect(openWifi["ProxyType"] == .string("Auto"))
        #expect(openWifi["ProxyPACFallbackAllowed"] == .bool(true))
        #expect(!Self.shapes[4].1.holdsPassword)
        #expect(Self.shapes[3].1.holdsPassword)
    }

    /// One fresh UUID for the profile and each payload, uppercase version 4, new on every build.
    @Test func uuidsAreFreshAndUnique() throws {
        let profile = Self.shapes[0].1
        let first = uuids(in: profile.plist())
        let second = uuids(in: profile.plist())
        #expect(first.count == 4)
        #expect(Set(first).count == 4)
        #expect(Set(first).isDisjoint(with: second))
        for uuid in first + second {
            #expect(uuid.wholeMatch(of: /[0-9A-F]{8}-[0-9A-F]{4}-4[0-9A-F]{3}-[89AB][0-9A-F]{3}-[0-9A-F]{12}/) != nil, "\(uuid)")
        }
    }

    /// The checker the tests rely on finds each kind of mistake: a test of the profile can fail.
    @Test(arguments: [
        ("ProxyServerPort", PlistValue.string("3128"), "ProxyServerPort is string, the reference says integer"),
        ("ProxyCaptiveLoginAllowed", .integer(1), "ProxyCaptiveLoginAllowed is integer, the reference says boolean"),
        ("ProxyType", .string("Automatic"), "\"Automatic\", not one of Manual, Auto"),
        ("PayloadVersion", .integer(2), "PayloadVersion is 2"),
        ("ProxyUser", .string("lab"), "key ProxyUser is not in Apple's reference"),
        ("PayloadUUID", .string("7ec8f48b-eec9-44db-9258-110ee882c0cf"), "not an uppercase RFC 4122 version 4 UUID"),
        ("PayloadUUID", .string("7EC8F48B-EEC9-14DB-9258-110EE882C0CF"), "not an uppercase RFC 4122 version 4 UUID"),
        ("PayloadIdentifier", .string("com.example.lab.ca.1"), "PayloadIdentifiers repeat"),
        ("ProxyServer", nil, "Manual without ProxyServer"),
        ("PayloadType", nil, "PayloadType missing is not one of"),
    ] as [(String, PlistValue?, String)])
    func theSchemaCheckFindsMistakes(key: String, value: PlistValue?, problem: String) throws {
        guard case .dictionary(var top) = Self.shapes[0].1.plist(),
              case .array(var payloads)? = top["PayloadContent"],
              case .dictionary(var proxy) = payloads[2] else { Issue.record("not a profile"); return }
        proxy[key] = value
        payloads[2] = .dictionary(proxy)
        top["PayloadContent"] = .array(payloads)
        let problems = ProfileSchema.problems(.dictionary(top))
        #expect(problems.contains { $0.contains(problem) }, "\(problems)")
    }

    @Test func theSchemaCheckFindsTopLevelMistakes() throws {
        guard case .dictionary(var top) = Self.shapes[2].1.plist() else { Issue.record("not a profile"); return }
        top["PayloadType"] = .string("configuration")
        top["PayloadScope"] = .string("Device")
        top["PayloadRemovalDisallowed"] = .string("true")
        top["PayloadContent"] = .array([.dictionary(["PayloadType": .string("com.apple.proxy.http.global")])] + (top["PayloadContent"]?.arrayValue ?? []))
        top["PayloadUUID"] = nil
        let problems = ProfileSchema.problems(.dictionary(top))
        for words in ["PayloadType is \"configuration\"", "PayloadScope is \"Device\"",
                      "PayloadRemovalDisallowed is string, the reference says boolean", "top level: required key PayloadUUID is missing",
                      "2 payloads of type com.apple.proxy.http.global", "PayloadContent[0] (com.apple.proxy.http.global): required key PayloadUUID"] {
            #expect(problems.contains { $0.contains(words) }, "\(words) not in \(problems)")
        }
        #expect(ProfileSchema.problems(xml: Data("<plist><dict><key>a</key></plist>".utf8)).count == 1)
    }

    private func dictionary(_ value: PlistValue) throws -> [String: PlistValue] {
        try #require(value.dictionaryValue)
    }

    private func uuids(in value: PlistValue) -> [String] {
        guard let top = value.dictionaryValue else { return [] }
        return [top["PayloadUUID"]?.stringValue].compactMap { $0 }
            + (top["PayloadContent"]?.arrayValue ?? []).compactMap { $0.dictionaryValue?["PayloadUUID"]?.stringValue }
    }
}
