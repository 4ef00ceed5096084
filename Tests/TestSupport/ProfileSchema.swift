import ATSPolicy
import Foundation

/// What `plutil -lint` and a profile validator check, for `atsgate profile`'s output: a well-formed
/// property list whose every key exists, with the type, the values and the presence that Apple's
/// configuration profile reference gives.
///
/// The tables are transcribed from Apple's reference (the device-management schemas published at
/// github.com/apple/device-management, mdm/profiles/: TopLevel.yaml, CommonPayloadKeys.yaml,
/// com.apple.proxy.http.global.yaml, com.apple.wifi.managed.yaml, com.apple.security.root.yaml), not
/// from the code under test. Only the payload types atsgate writes are listed; any other is a problem.
public enum ProfileSchema {
    /// A plist type as the reference names it.
    public enum ValueType: String, Sendable {
        case string, integer, real, boolean, date, data, array, dictionary
    }

    struct Key {
        var type: ValueType
        var required = false
        /// The reference's `rangelist`, for strings.
        var values: [String]? = nil
        /// The reference's `range`, for integers.
        var range: ClosedRange<Int64>? = nil
    }

    /// TopLevel.yaml.
    static let topLevel: [String: Key] = [
        "PayloadIdentifier": Key(type: .string, required: true),
        "PayloadUUID": Key(type: .string, required: true),
        "PayloadType": Key(type: .string, required: true, values: ["Configuration"]),
        "PayloadVersion": Key(type: .integer, required: true, range: 1...1),
        "IsEncrypted": Key(type: .boolean),
        "PayloadContent": Key(type: .array, required: true),
        "EncryptedPayloadContent": Key(type: .data),
        "PayloadDescription": Key(type: .string),
        "PayloadDisplayName": Key(type: .string),
        "HasRemovalPasscode": Key(type: .boolean),
        "PayloadOrganization": Key(type: .string),
        "PayloadRemovalDisallowed": Key(type: .boolean),
        "PayloadScope": Key(type: .string, values: ["System", "User"]),
        "RemovalDate": Key(type: .date),
        "DurationUntilRemoval": Key(type: .real),
        "PayloadExpirationDate": Key(type: .date),
        "TargetDeviceType": Key(type: .integer, range: 0...5),
        "ConsentText": Key(type: .dictionary),
    ]

    /// CommonPayloadKeys.yaml: in every payload.
    static let common: [String: Key] = [
        "PayloadIdentifier": Key(type: .string, required: true),
        "PayloadUUID": Key(type: .string, required: true),
        "PayloadType": Key(type: .string, required: true),
        "PayloadVersion": Key(type: .integer, required: true, range: 1...1),
        "PayloadDescription": Key(type: .string),
        "PayloadDisplayName": Key(type: .string),
        "PayloadOrganization": Key(type: .string),
    ]

    /// The payload-specific keys of each payload type atsgate writes.
    static let payloads: [String: [String: Key]] = [
        // com.apple.proxy.http.global.yaml
        "com.apple.proxy.http.global": [
            "ProxyType": Key(type: .string, values: ["Manual", "Auto"]),
            "ProxyServer": Key(type: .string),
            "ProxyServerPort": Key(type: .integer),
            "ProxyUsername": Key(type: .string),
            "ProxyPassword": Key(type: .string),
            "ProxyPACURL": Key(type: .string),
            "ProxyPACFallbackAllowed": Key(type: .boolean),
            "ProxyCaptiveLoginAllowed": Key(type: .boolean),
        ],
        // com.apple.wifi.managed.yaml (top-level keys; EAPClientConfiguration's and QoSMarkingPolicy's
        // subkeys are not written by atsgate, so only their type is checked)
        "com.apple.wifi.managed": [
            "AutoJoin": Key(type: .boolean),
            "SSID_STR": Key(type: .string),
            "HIDDEN_NETWORK": Key(type: .boolean),
            "ProxyType": Key(type: .string, values: ["None", "Manual", "Auto"]),
            "EncryptionType": Key(type: .string, values: ["WEP", "WPA", "WPA2", "WPA3", "Any", "None"]),
            "Password": Key(type: .string),
            "PayloadCertificateUUID": Key(type: .string),
            "EAPClientConfiguration": Key(type: .dictionary),
            "DisplayedOperatorName": Key(type: .string),
            "DomainName": Key(type: .string),
            "RoamingConsortiumOIs": Key(type: .array),
            "ServiceProviderRoamingEnabled": Key(type: .boolean),
            "IsHotspot": Key(type: .boolean),
            "HESSID": Key(type: .string),
            "NAIRealmNames": Key(type: .array),
            "MCCAndMNCs": Key(type: .array),
            "CaptiveBypass": Key(type: .boolean),
            "QoSMarkingPolicy": Key(type: .dictionary),
            "SetupModes": Key(type: .array),
            "EnableIPv6": Key(type: .boolean),
            "TLSCertificateRequired": Key(type: .boolean),
            "ProxyServer": Key(type: .string),
            "ProxyServerPort": Key(type: .integer, range: 0...65535),
            "ProxyUsername": Key(type: .string),
            "ProxyPassword": Key(type: .string),
            "ProxyPACURL": Key(type: .string),
            "ProxyPACFallbackAllowed": Key(type: .boolean),
            "DisableAssociationMACRandomization": Key(type: .boolean),
            "AllowJoinBeforeFirstUnlock": Key(type: .boolean),
        ],
        // com.apple.security.root.yaml (an alias of com.apple.security.pkcs1)
        "com.apple.security.root": [
            "PayloadCertificateFileName": Key(type: .string),
            "PayloadContent": Key(type: .data, required: true),
        ],
    ]

    /// Payload types of which a device holds one at most (the reference's `multiple: false`).
    static let single: Set<String> = ["com.apple.proxy.http.global"]

    /// An uppercase RFC 4122 version 4 UUID, as `uuidgen` prints it on macOS.
    static var uuidV4: Regex<Substring> { /^[0-9A-F]{8}-[0-9A-F]{4}-4[0-9A-F]{3}-[89AB][0-9A-F]{3}-[0-9A-F]{12}$/ }

    /// The problems of a profile's XML, parsed back by Foundation's PropertyListSerialization; empty
    /// when it is a valid profile. A file that does not parse is one problem.
    public static func problems(xml: Data) -> [String] {
        var format = PropertyListSerialization.PropertyListFormat.binary
        let object: Any
        do {
            object = try PropertyListSerialization.propertyList(from: xml, options: [], format: &format)
        } catch {
            return ["not a property list: \(error)"]
        }
        guard format == .xml else { return ["parsed as \(format), not as an XML property list"] }
        guard let value = typed(foundation: object) else { return ["a value of no property-list type"] }
        return problems(value)
    }

    /// The problems of a profile another parser read, given as tagged JSON: every value an object
    /// `{"type": NAME, "value": ...}`, NAME one of `ValueType`'s (data in base64, dates in ISO 8601).
    public static func problems(taggedJSON: Data) -> [String] {
        guard let object = try? JSONSerialization.jsonObject(with: taggedJSON), let value = typed(tagged: object) else {
            return ["the tagged JSON does not describe a property list"]
        }
        return problems(value)
    }

    /// The problems of a profile as a typed value.
    public static func problems(_ profile: PlistValue) -> [String] {
        guard case .dictionary(let top) = profile else { return ["the root is \(profile.typeName), not a dictionary"] }
        var problems = check(top, against: topLevel, at: "top level")
        var uuids: [String] = []
        var identifiers: [String] = []
        if let uuid = top["PayloadUUID"]?.stringValue { uuids.append(uuid) }
        if let identifier = top["PayloadIdentifier"]?.stringValue { identifiers.append(identifier) }
        var counts: [String: Int] = [:]
        for (index, item) in (top["PayloadContent"]?.arrayValue ?? []).enumerated() {
            let place = "PayloadContent[\(index)]"
            guard case .dictionary(let payload) = item else {
                problems.append("\(place) is \(item.typeName), not a dictionary")
                continue
            }
            guard let type = payload["PayloadType"]?.stringValue, let specific = payloads[type] else {
                problems.append("\(place): PayloadType \(payload["PayloadType"]?.shortDescription ?? "missing") is not one of "
                    + payloads.keys.sorted().joined(separator: ", "))
                continue
            }
            counts[type, default: 0] += 1
            let label = "\(place) (\(type))"
            problems += check(payload, against: common.merging(specific) { _, new in new }, at: label)
            problems += conditions(payload, type: type, at: label)
            if let uuid = payload["PayloadUUID"]?.stringValue { uuids.append(uuid) }
            if let identifier = payload["PayloadIdentifier"]?.stringValue { identifiers.append(identifier) }
        }
        for (type, count) in counts where single.contains(type) && count > 1 {
            problems.append("\(count) payloads of type \(type); a device holds one at most")
        }
        for uuid in uuids where uuid.wholeMatch(of: uuidV4) == nil {
            problems.append("PayloadUUID \(uuid) is not an uppercase RFC 4122 version 4 UUID")
        }
        if Set(uuids).count != uuids.count { problems.append("PayloadUUIDs repeat: \(uuids)") }
        if Set(identifiers).count != identifiers.count { problems.append("PayloadIdentifiers repeat: \(identifiers)") }
        return problems
    }

    /// Every key known, of its type and in its range; every required key present.
    static func check(_ dictionary: [String: PlistValue], against table: [String: Key], at place: String) -> [String] {
        var problems: [String] = []
        for (name, key) in table where key.required && dictionary[name] == nil {
            problems.append("\(place): required key \(name) is missing")
        }
        for (name, value) in dictionary.sorted(by: { $0.key < $1.key }) {
            guard let key = table[name] else {
                problems.append("\(place): key \(name) is not in Apple's reference for it")
                continue
            }
            guard type(of: value) == key.type else {
                problems.append("\(place): \(name) is \(value.typeName), the reference says \(key.type.rawValue)")
                continue
            }
            if let values = key.values, let text = value.stringValue, !values.contains(text) {
                problems.append("\(place): \(name) is \"\(text)\", not one of \(values.joined(separator: ", "))")
            }
            if let range = key.range, case .integer(let number) = value, !range.contains(number) {
                problems.append("\(place): \(name) is \(number), outside \(range.lowerBound)...\(range.upperBound)")
            }
        }
        return problems
    }

    /// What the reference says in prose: Manual needs the server and port, Auto the PAC URL (http or
    /// https since iOS 13), and a global proxy's port is a TCP port.
    static func conditions(_ payload: [String: PlistValue], type: String, at place: String) -> [String] {
        guard type != "com.apple.security.root" else { return [] }
        var problems: [String] = []
        switch payload["ProxyType"]?.stringValue {
        case "Manual":
            if payload["ProxyServer"]?.stringValue?.isEmpty ?? true { problems.append("\(place): Manual without ProxyServer") }
            if payload["ProxyServerPort"] == nil { problems.append("\(place): Manual without ProxyServerPort") }
            if case .integer(let port)? = payload["ProxyServerPort"], !(1...65535).contains(port) {
                problems.append("\(place): ProxyServerPort \(port) is not a TCP port")
            }
        case "Auto":
            let url = payload["ProxyPACURL"]?.stringValue ?? ""
            if !(url.hasPrefix("http://") || url.hasPrefix("https://")) {
                problems.append("\(place): Auto with ProxyPACURL \"\(url)\"; devices take http:// and https:// URLs only")
            }
        default:
            break
        }
        return problems
    }

    static func type(of value: PlistValue) -> ValueType? {
        switch value {
        case .bool: .boolean
        case .integer: .integer
        case .real: .real
        case .string: .string
        case .date: .date
        case .data: .data
        case .array: .array
        case .dictionary: .dictionary
        case .null: nil
        }
    }

    /// Foundation's parse, with the plist type of each value recovered: on Linux a `<true/>` comes
    /// back as Bool and an `<integer>` as NSNumber, which `as? Bool` would confuse.
    static func typed(foundation object: Any) -> PlistValue? {
        if Swift.type(of: object) == Bool.self, let flag = object as? Bool { return .bool(flag) }
        switch object {
        case let text as String: return .string(text)
        case let data as Data: return .data(data)
        case let date as Date: return .date(date)
        case let items as [Any]:
            let values = items.compactMap(typed(foundation:))
            return values.count == items.count ? .array(values) : nil
        case let items as [String: Any]:
            let values = items.compactMapValues(typed(foundation:))
            return values.count == items.count ? .dictionary(values) : nil
        case let number as NSNumber:
            let kind = String(cString: number.objCType)
            return kind == "d" || kind == "f" ? .real(number.doubleValue) : .integer(number.int64Value)
        default:
            return nil
        }
    }

    static func typed(tagged object: Any) -> PlistValue? {
        guard let node = object as? [String: Any], let type = node["type"] as? String, let value = node["value"] else {
            return nil
        }
        switch type {
        case "boolean": return (value as? Bool).map(PlistValue.bool)
        case "integer": return (value as? NSNumber).map { .integer($0.int64Value) }
        case "real": return (value as? NSNumber).map { .real($0.doubleValue) }
        case "string": return (value as? String).map(PlistValue.string)
        case "data": return (value as? String).flatMap { Data(base64Encoded: $0) }.map(PlistValue.data)
        case "date": return (value as? String).flatMap { try? Date($0, strategy: .iso8601) }.map(PlistValue.date)
        case "array":
            guard let items = value as? [Any] else { return nil }
            let values = items.compactMap(typed(tagged:))
            return values.count == items.count ? .array(values) : nil
        case "dictionary":
            guard let items = value as? [String: Any] else { return nil }
            let values = items.compactMapValues(typed(tagged:))
            return values.count == items.count ? .dictionary(values) : nil
        default:
            return nil
        }
    }
}
