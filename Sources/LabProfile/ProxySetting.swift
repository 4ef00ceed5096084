import ATSPolicy

/// How the device finds the proxy: `ProxyType` Manual with the server (and a login), or Auto with a
/// PAC URL. Credentials go with Manual only: Apple's reference says the device uses ProxyUsername
/// and ProxyPassword with Manual and ignores them with Auto.
package enum ProxySetting: Sendable, Equatable {
    case manual(ProxyServer, credentials: ProxyCredentials?)
    /// `fallbackAllowed`: ProxyPACFallbackAllowed, go direct when the PAC file cannot be fetched.
    case auto(PACURL, fallbackAllowed: Bool)

    /// The proxy keys, the same in the global proxy payload and in the Wi-Fi payload.
    var keys: [String: PlistValue] {
        switch self {
        case .manual(let server, let credentials):
            var keys: [String: PlistValue] = [
                "ProxyType": .string("Manual"),
                "ProxyServer": .string(server.host),
                "ProxyServerPort": .integer(Int64(server.port)),
            ]
            if let credentials {
                keys["ProxyUsername"] = .string(credentials.user)
                if let password = credentials.password { keys["ProxyPassword"] = .string(password) }
            }
            return keys
        case .auto(let url, let fallbackAllowed):
            return [
                "ProxyType": .string("Auto"),
                "ProxyPACURL": .string(url.description),
                "ProxyPACFallbackAllowed": .bool(fallbackAllowed),
            ]
        }
    }

    /// For the descriptions a person reads on the device: "the atsgate proxy at HOST:PORT as user lab".
    var phrase: String {
        switch self {
        case .manual(let server, let credentials):
            "the atsgate proxy at \(server)" + (credentials.map { " as user \($0.user)" } ?? "")
        case .auto(let url, _):
            "the atsgate proxy named by \(url)"
        }
    }

    /// For the command's summary line: the setting, with whether a password is set (never the password).
    package var summary: String {
        switch self {
        case .manual(let server, let credentials):
            "\(server)" + (credentials.map { ", \($0)" } ?? "")
        case .auto(let url, let fallbackAllowed):
            "the PAC file \(url)" + (fallbackAllowed ? " (direct when it cannot be fetched)" : "")
        }
    }
}
