import ATSPolicy

/// A Wi-Fi network for the `com.apple.wifi.managed` payload: the device joins it and uses the proxy on
/// it. Unlike the global proxy payload, it installs on devices that are not supervised.
package struct WiFiNetwork: Sendable, Equatable {
    /// `EncryptionType`, spelled as Apple's reference lists it.
    package enum Security: String, Sendable, CaseIterable {
        case wpa2 = "WPA2", wpa3 = "WPA3", wpa = "WPA", wep = "WEP", any = "Any", none = "None"

        /// Any spelling of a case name: `wpa2`, `WPA2`, `none`.
        package init(parsing text: String) throws(ProfileInputError) {
            guard let found = Self.allCases.first(where: { $0.rawValue.lowercased() == text.lowercased() }) else {
                throw ProfileInputError("expected one of \(Self.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            self = found
        }
    }

    package let ssid: String
    package let security: Security
    /// nil: the profile carries no Wi-Fi password.
    package let password: String?
    package let hidden: Bool

    /// Throws the part at fault (the SSID or the password) and what is wrong with it.
    package init(ssid: String, security: Security, password: String?, hidden: Bool) throws(WiFiNetworkError) {
        do {
            try Self.checkSSID(ssid)
        } catch {
            throw WiFiNetworkError(part: .ssid, problem: error.problem)
        }
        if let password {
            guard security != .none else {
                throw WiFiNetworkError(part: .password, problem: "an open network (security None) has no password")
            }
            if let problem = Self.problem(password: password, security: security) {
                throw WiFiNetworkError(part: .password, problem: problem)
            }
        }
        self.ssid = ssid
        self.security = security
        self.password = password
        self.hidden = hidden
    }

    /// An SSID: 1 to 32 bytes (802.11's limit), nothing a property list cannot hold.
    package static func checkSSID(_ ssid: String) throws(ProfileInputError) {
        try ProfileText.check(ssid)
        guard ssid.utf8.count <= 32 else {
            throw ProfileInputError("is \(ssid.utf8.count) bytes long; an SSID has 32 at most")
        }
    }

    /// The lengths the standards allow: a WPA passphrase is 8 to 63 printable ASCII characters or 64
    /// hex digits; a WEP key 5 or 13 characters, or 10 or 26 hex digits. `Any` takes either.
    private static func problem(password: String, security: Security) -> String? {
        let printable = password.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0.value <= 0x7E }
        let hex = password.unicodeScalars.allSatisfy { $0.properties.isASCIIHexDigit }
        let count = password.unicodeScalars.count
        let wpa = (printable && (8...63).contains(count)) || (hex && count == 64)
        let wep = (printable && (count == 5 || count == 13)) || (hex && (count == 10 || count == 26))
        switch security {
        case .wpa, .wpa2, .wpa3:
            return wpa ? nil : "a WPA passphrase is 8 to 63 printable ASCII characters (or 64 hex digits); this one is "
                + (printable ? "\(count) long" : "not printable ASCII")
        case .wep:
            return wep ? nil : "a WEP key is 5 or 13 ASCII characters, or 10 or 26 hex digits"
        case .any:
            return wpa || wep ? nil : "neither a WPA passphrase (8 to 63 printable ASCII characters) nor a WEP key"
        case .none:
            return "an open network has no password"
        }
    }

    /// The payload's own keys; the proxy keys are added by the profile.
    var keys: [String: PlistValue] {
        var keys: [String: PlistValue] = [
            "SSID_STR": .string(ssid),
            "EncryptionType": .string(security.rawValue),
            "HIDDEN_NETWORK": .bool(hidden),
            "AutoJoin": .bool(true),
        ]
        if let password { keys["Password"] = .string(password) }
        return keys
    }
}

/// What is wrong with a Wi-Fi network, and with which part of it.
package struct WiFiNetworkError: Error, Sendable, Equatable {
    package enum Part: Sendable { case ssid, password }
    package var part: Part
    package var problem: String
}
