import Foundation
import Testing
@testable import ATSPolicy

/// INTERFACE.md's `check` fields, as `Decision.jsonFields` renders them.
@Suite("Decision JSON fields (INTERFACE.md)")
struct DecisionJSONTests {
    typealias F = PolicyFixtures

    func fields(_ url: String, _ dictionary: [String: PlistValue] = [:], profile: Profile = .ios17,
                context: LoadContext = .app, cleartext: CleartextMode = .block) throws -> [String: JSONValue] {
        let decision = try F.engine(dictionary, profile: profile, cleartext: cleartext)
            .decide(Destination.parse(url: url), context: context)
        let pairs = decision.jsonFields
        #expect(Set(pairs.map(\.0)).count == pairs.count, "no duplicate field")
        return Dictionary(uniqueKeysWithValues: pairs)
    }

    func requirements(_ value: JSONValue?) -> [String: JSONValue] {
        guard case .object(let pairs)? = value else { return [:] }
        return Dictionary(uniqueKeysWithValues: pairs)
    }

    /// INTERFACE.md's example, field for field (`url` is added by `check` itself).
    @Test("the documented example")
    func documentedExample() throws {
        let decision = try F.engine().decide(Destination.parse(url: "http://api.example.com/v1"))
        let pairs = decision.jsonFields
        // INTERFACE.md's order, after `url`.
        #expect(Array(pairs.map(\.0).prefix(11)) == [
            "scheme", "host", "port", "class", "direct", "exception", "ats", "action", "reason", "message",
            "requirements",
        ])
        let json = Dictionary(uniqueKeysWithValues: pairs)
        #expect(json["scheme"] == "http")
        #expect(json["host"] == "api.example.com")
        #expect(json["port"] == .int(80))
        #expect(json["class"] == "public")
        #expect(json["direct"] == .bool(false))
        #expect(json["exception"] == .null)
        #expect(json["ats"] == "on")
        #expect(json["action"] == "block")
        #expect(json["reason"] == "cleartext-http")
        #expect(json["message"] == .string(decision.message))
        let requirements = requirements(json["requirements"])
        #expect(requirements["cleartextAllowed"] == .bool(false))
        #expect(requirements["minimumTLSVersion"] == "TLSv1.2")
        #expect(requirements["forwardSecrecy"] == .bool(true))
        #expect(requirements["certificateChecks"] == .bool(true))
        #expect(requirements["cipherSuites"] == "forward-secrecy")
        #expect(json["rule"] == "R12")
        #expect(json["context"] == "app")
        #expect(json["profile"] == "ios17")
    }

    @Test("types of every documented field, across decisions", arguments: [
        "http://api.example.com/", "https://api.example.com:8443/", "http://printer/", "http://[::1]:8080/",
        "http://csd4.apple.com/", "http://0x7f.1/", "https://10.1.2.3/", "http://foo.local./",
    ])
    func fieldTypes(_ url: String) throws {
        let json = try fields(url, F.ats(exceptions: ["10.0.0.0/8": F.entry()]))
        func isString(_ key: String) -> Bool { if case .string? = json[key] { true } else { false } }
        func isStringOrNull(_ key: String) -> Bool { isString(key) || json[key] == .null }
        #expect(isString("scheme"))
        #expect(isString("host"))
        if case .int(let port)? = json["port"] { #expect((1...65535).contains(port)) } else { Issue.record("port") }
        #expect(["public", "ip", "local", "unqualified"].map(JSONValue.string).contains(json["class"] ?? .null))
        if case .bool? = json["direct"] {} else { Issue.record("direct is not a boolean") }
        #expect(isStringOrNull("exception"))
        #expect(["on", "off", "exempt", "exception"].map(JSONValue.string).contains(json["ats"] ?? .null))
        #expect(["allow", "block", "upgrade"].map(JSONValue.string).contains(json["action"] ?? .null))
        #expect(isStringOrNull("reason"))
        #expect(isString("message"))
        let requirements = requirements(json["requirements"])
        for key in ["cleartextAllowed", "forwardSecrecy", "certificateChecks"] {
            if case .bool? = requirements[key] {} else { Issue.record("\(key) is not a boolean") }
        }
        let versions = TLSVersion.allCases.map { JSONValue.string($0.rawValue) } + [.null]
        #expect(versions.contains(requirements["minimumTLSVersion"] ?? .string("absent")))
        // `reason` is null exactly when the action is not block.
        #expect((json["action"] == "block") == (json["reason"] != .null))
    }

    @Test("host is the normalised host: lowercase, no brackets, canonical IPs", arguments: [
        ("http://API.Example.COM/", "api.example.com", "public"),
        ("http://[2001:DB8:0:0:0:0:0:1]/", "2001:db8::1", "ip"),
        ("http://[::ffff:192.0.2.1]/", "192.0.2.1", "ip"),
        ("http://2130706433/", "127.0.0.1", "ip"),
        ("http://0x7f.1/", "127.0.0.1", "ip"),
        ("http://foo.local./", "foo.local.", "local"),
        ("http://printer/", "printer", "unqualified"),
        ("http://printer./", "printer.", "public"),
    ])
    func host(_ url: String, _ host: String, _ hostClass: String) throws {
        let json = try fields(url)
        #expect(json["host"] == .string(host))
        #expect(json["class"] == .string(hostClass))
    }

    @Test("exception names the key; a built-in is builtin:KEY")
    func exceptionField() throws {
        #expect(try fields("http://csd4.apple.com/")["exception"] == "builtin:apple.com")
        #expect(try fields("http://maps.ls.apple.com/")["exception"] == "builtin:ls.apple.com")
        let app = F.ats(exceptions: ["example.com": F.entry(subdomains: F.yes)])
        let json = try fields("http://www.example.com/", app)
        #expect(json["exception"] == "example.com")
        #expect(json["match"] == "subdomain")
        #expect(json["ats"] == "exception")
        #expect(json["rule"] == "R7")
        #expect(try fields("http://csd4.apple.com/")["rule"] == "R9")
        let cidr = try fields("http://10.1.2.3/", F.ats(exceptions: ["10/8": F.entry()]))
        #expect(cidr["exception"] == "10/8")
        #expect(cidr["match"] == "cidr")
        #expect(cidr["rule"] == "R8")
        // No entry: null, and no `match` field.
        let none = try fields("http://api.example.com/")
        #expect(none["exception"] == .null)
        #expect(none["match"] == nil)
    }

    @Test("reason is null when not blocked")
    func reasonNull() throws {
        #expect(try fields("https://api.example.com/")["reason"] == .null)
        #expect(try fields("http://printer/")["reason"] == .null)
        let upgraded = try fields("http://api.example.com/", cleartext: .upgrade)
        #expect(upgraded["action"] == "upgrade")
        #expect(upgraded["reason"] == .null)
        #expect(upgraded["upgradeVia"] == "upgrade")
        let redirected = try fields("http://api.example.com/", cleartext: .redirect)
        #expect(redirected["upgradeVia"] == "redirect")
        #expect(try fields("http://api.example.com/")["upgradeVia"] == nil)
    }

    @Test("minimumTLSVersion is null when ATS is off or exempt")
    func minimumVersionNull() throws {
        let off = try fields("https://api.example.com/", [ATSKey.allowsArbitraryLoads: F.yes])
        #expect(off["ats"] == "off")
        let offRequirements = requirements(off["requirements"])
        #expect(offRequirements["minimumTLSVersion"] == .null)
        #expect(offRequirements["cleartextAllowed"] == .bool(true))
        #expect(offRequirements["forwardSecrecy"] == .bool(false))
        #expect(offRequirements["certificateChecks"] == .bool(false))
        #expect(offRequirements["cipherSuites"] == "any")

        let exempt = try fields("http://printer.local/")
        #expect(exempt["ats"] == "exempt")
        #expect(exempt["direct"] == .bool(true))
        #expect(requirements(exempt["requirements"])["minimumTLSVersion"] == .null)

        let builtin = requirements(try fields("https://ls.apple.com/")["requirements"])
        #expect(builtin["minimumTLSVersion"] == "TLSv1.0")
        #expect(builtin["cipherSuites"] == "any")
    }

    @Test("context, profile and pinned domain")
    func extras() throws {
        let pins = F.ats(pins: ["example.com": .dictionary([
            ATSKey.includesSubdomains: F.yes,
            ATSKey.pinnedCAIdentities: .array([.dictionary([
                ATSKey.spkiSHA256: .string(Data(repeating: 1, count: 32).base64EncodedString()),
            ])]),
        ])])
        let json = try fields("https://api.example.com/", pins, profile: .ios10, context: .web)
        #expect(json["context"] == "web")
        #expect(json["profile"] == "ios10")
        guard case .object(let pin)? = json["pinnedDomain"] else {
            Issue.record("pinnedDomain missing")
            return
        }
        let pinFields = Dictionary(uniqueKeysWithValues: pin)
        #expect(pinFields["key"] == "example.com")
        #expect(pinFields["caIdentities"] == .int(1))
        #expect(pinFields["leafIdentities"] == .int(0))
        #expect(try fields("https://other.org/", pins)["pinnedDomain"] == nil)
    }

    @Test("compact JSON is valid JSON with the same values")
    func compactRoundTrip() throws {
        let decision = try F.engine([ATSKey.allowsArbitraryLoads: .string("YES \"quoted\"\n")])
            .decide(Destination.parse(url: "http://api.example.com/v1"))
        let text = JSONValue.object([("url", "http://api.example.com/v1")] + decision.jsonFields).compact
        #expect(!text.contains("\n"))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        #expect(object["url"] as? String == "http://api.example.com/v1")
        #expect(object["host"] as? String == "api.example.com")
        #expect(object["port"] as? Int == 80)
        #expect(object["direct"] as? Bool == false)
        #expect(object["exception"] is NSNull)
        #expect(object["action"] as? String == "block")
        #expect(object["message"] as? String == decision.message)
        let requirements = try #require(object["requirements"] as? [String: Any])
        #expect(requirements["minimumTLSVersion"] as? String == "TLSv1.2")
        #expect(requirements["cleartextAllowed"] as? Bool == false)
    }
}
