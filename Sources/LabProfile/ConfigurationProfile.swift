import ATSPolicy
import Foundation

/// An Apple configuration profile (`.mobileconfig`) that points a lab's devices at atsgate: a global
/// HTTP proxy payload or a Wi-Fi payload carrying the proxy, and the lab's root certificates.
///
/// Keys, types and values follow Apple's profile reference (the device-management schemas for the
/// top level, `com.apple.proxy.http.global`, `com.apple.wifi.managed` and `com.apple.security.root`).
package struct ConfigurationProfile: Sendable {
    /// Where the proxy setting goes.
    package enum Carrier: Sendable, Equatable {
        /// `com.apple.proxy.http.global`: every network. Needs a supervised device on iOS, tvOS and
        /// visionOS. `captiveLoginAllowed`: ProxyCaptiveLoginAllowed, bypass the proxy for a captive
        /// network's login page.
        case global(captiveLoginAllowed: Bool)
        /// `com.apple.wifi.managed`: the proxy of that network only; no supervision needed.
        case wifi(WiFiNetwork)
    }

    package var identifier: ProfileIdentifier
    package var proxy: ProxySetting
    package var carrier: Carrier
    package var roots: [RootCertificate]
    /// PayloadDisplayName; nil for one that says what the profile sets up.
    package var displayName: String?
    /// PayloadOrganization of the profile and its payloads; nil leaves the key out.
    package var organization: String?
    /// PayloadDescription; nil for one that says what the profile does, for the person installing it.
    package var description: String?

    package init(identifier: ProfileIdentifier, proxy: ProxySetting, carrier: Carrier, roots: [RootCertificate] = [],
                 displayName: String? = nil, organization: String? = nil, description: String? = nil) {
        self.identifier = identifier
        self.proxy = proxy
        self.carrier = carrier
        self.roots = roots
        self.displayName = displayName
        self.organization = organization
        self.description = description
    }

    /// The profile as a property list. `newUUID` is called once for the profile and once per payload;
    /// by default a fresh random (version 4) UUID each time, so every generated profile is new.
    package func plist(newUUID: () -> UUID = UUID.init) -> PlistValue {
        var payloads: [PlistValue] = []
        // The roots first: the device trusts the proxy's CA before it starts using the proxy.
        for (index, root) in roots.enumerated() {
            var keys = common(type: "com.apple.security.root", suffix: "ca.\(index + 1)", name: root.name, newUUID: newUUID)
            keys["PayloadContent"] = .data(Data(root.der))
            keys["PayloadCertificateFileName"] = .string(root.fileName)
            keys["PayloadDescription"] = .string("Adds \(root.name) to the trusted root certificates.")
            payloads.append(.dictionary(keys))
        }
        switch carrier {
        case .global(let captiveLoginAllowed):
            var keys = common(type: "com.apple.proxy.http.global", suffix: "proxy", name: "Global HTTP proxy", newUUID: newUUID)
            keys.merge(proxy.keys) { _, new in new }
            keys["ProxyCaptiveLoginAllowed"] = .bool(captiveLoginAllowed)
            keys["PayloadDescription"] = .string("Sends HTTP and HTTPS traffic on every network through \(proxy.phrase).")
            payloads.append(.dictionary(keys))
        case .wifi(let network):
            var keys = common(type: "com.apple.wifi.managed", suffix: "wifi", name: "Wi-Fi \(network.ssid)", newUUID: newUUID)
            keys.merge(network.keys) { _, new in new }
            keys.merge(proxy.keys) { _, new in new }
            keys["PayloadDescription"] = .string("Joins \(network.ssid) and sends its HTTP and HTTPS traffic through \(proxy.phrase).")
            payloads.append(.dictionary(keys))
        }
        var top: [String: PlistValue] = [
            "PayloadContent": .array(payloads),
            "PayloadDescription": .string(description ?? defaultDescription),
            "PayloadDisplayName": .string(displayName ?? defaultDisplayName),
            "PayloadIdentifier": .string(identifier.description),
            // A macOS key (iOS has one scope): the global proxy is a device-channel payload there, and
            // a root belongs in the System keychain for every user's connections.
            "PayloadScope": .string("System"),
            "PayloadType": .string("Configuration"),
            "PayloadUUID": .string(newUUID().uuidString),
            "PayloadVersion": .integer(1),
        ]
        if let organization { top["PayloadOrganization"] = .string(organization) }
        return .dictionary(top)
    }

    /// The profile as an XML property list, the form Apple Configurator and MDM servers read and a
    /// person can review before signing or installing it.
    package func xml(newUUID: () -> UUID = UUID.init) throws -> Data {
        var data = try PropertyListSerialization.data(fromPropertyList: plist(newUUID: newUUID).propertyListObject,
                                                      format: .xml, options: 0)
        // A text file ends with a line break (Foundation on Linux leaves it out after </plist>).
        if data.last != UInt8(ascii: "\n") { data.append(UInt8(ascii: "\n")) }
        return data
    }

    /// The keys every payload has (Apple's "common payload keys").
    private func common(type: String, suffix: String, name: String, newUUID: () -> UUID) -> [String: PlistValue] {
        var keys: [String: PlistValue] = [
            "PayloadType": .string(type),
            "PayloadIdentifier": .string(identifier.appending(suffix)),
            "PayloadUUID": .string(newUUID().uuidString),
            "PayloadVersion": .integer(1),
            "PayloadDisplayName": .string(name),
        ]
        if let organization { keys["PayloadOrganization"] = .string(organization) }
        return keys
    }

    /// Whether the profile carries a password (the proxy's or the Wi-Fi network's): then it is a secret
    /// to keep from other users.
    package var holdsPassword: Bool {
        if case .manual(_, let credentials?) = proxy, credentials.password != nil { return true }
        if case .wifi(let network) = carrier, network.password != nil { return true }
        return false
    }

    package var defaultDisplayName: String {
        switch (carrier, proxy) {
        case (.wifi(let network), _): "\(network.ssid) through atsgate"
        case (.global, .manual(let server, _)): "atsgate proxy \(server)"
        case (.global, .auto(let url, _)): "atsgate proxy (\(url))"
        }
    }

    package var defaultDescription: String {
        var text: String
        switch carrier {
        case .global: text = "Sends this device's HTTP and HTTPS traffic through \(proxy.phrase)"
        case .wifi(let network): text = "Joins the Wi-Fi network \(network.ssid) and sends its HTTP and HTTPS traffic "
            + "through \(proxy.phrase)"
        }
        text += ", which checks each connection against the app's App Transport Security policy for the device lab."
        if !roots.isEmpty {
            text += " Installs the lab's root certificate\(roots.count == 1 ? "" : "s") "
                + roots.map(\.name).joined(separator: ", ") + "."
        }
        return text
    }
}

extension PlistValue {
    /// The Foundation object PropertyListSerialization writes: Bool stays a boolean, integers go as Int.
    fileprivate var propertyListObject: Any {
        switch self {
        case .bool(let flag): flag
        case .integer(let number): Int(number)
        case .real(let number): number
        case .string(let text): text
        case .date(let date): date
        case .data(let data): data
        case .array(let items): items.map(\.propertyListObject)
        case .dictionary(let items): items.mapValues(\.propertyListObject)
        case .null: ""
        }
    }
}
