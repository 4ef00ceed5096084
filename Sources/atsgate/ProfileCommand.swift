import ArgumentParser
import Foundation
import LabProfile
import TLSClient

/// `atsgate profile`: the `.mobileconfig` that sets a lab's devices up for the proxy.
struct ProfileCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "profile",
        abstract: "Write an Apple configuration profile (.mobileconfig) that points devices at the proxy.",
        discussion: """
            The profile holds a global HTTP proxy payload (com.apple.proxy.http.global; on iOS, tvOS and \
            visionOS it installs on supervised devices only), or with --wifi a Wi-Fi payload \
            (com.apple.wifi.managed) with the same proxy keys, which needs no supervision; and a root \
            certificate payload (com.apple.security.root) for each certificate of --ca (the CA of \
            --listen-tls). Every run gives the profile and each payload fresh UUIDs; identifiers are \
            --identifier and PREFIX.proxy, PREFIX.wifi, PREFIX.ca.N, so a device replaces the profile it \
            has from the same prefix. Passwords come from a file (--password-file, \
            --wifi-password-file; - reads standard input) or, on a terminal, a prompt without echo; the \
            profile holds them in clear text, so an --output file holding one is made readable by its \
            owner only. Exit status: 0 when written, 2 on bad input (the message names the flag).
            """
    )

    @Option(name: .long, help: ArgumentHelp("The proxy as devices reach it (ProxyType Manual): the plain listener's "
                                            + "host name or LAN address and port.", valueName: "host:port"))
    var proxy: String?

    @Option(name: .long, help: ArgumentHelp("A PAC file's URL instead (ProxyType Auto), e.g. atsgate's own "
                                            + "http://HOST:3128/proxy.pac.", valueName: "url"))
    var pac: String?

    @Flag(name: .customLong("pac-fallback"), help: ArgumentHelp("Let devices go direct when the PAC file cannot be "
                                                               + "fetched (ProxyPACFallbackAllowed; off by default, so a lab sees the failure)."))
    var pacFallback = false

    @Flag(name: .customLong("no-direct-fallback"), help: ArgumentHelp("Say it explicitly: devices never go direct when the "
        + "PAC file cannot be fetched or parsed (ProxyPACFallbackAllowed false, the default; docs/transparent-gate.md says what "
        + "still goes around a proxy)."))
    var noDirectFallback = false

    @Option(name: .long, help: ArgumentHelp("The proxy user (an --auth-file user) devices log in as; with --proxy only.",
                                            valueName: "name"))
    var user: String?

    @Option(name: .customLong("password-file"), help: ArgumentHelp(
        "The --user's password: a file holding it on one line; - reads standard input. Without it, a terminal prompts.",
        valueName: "file"))
    var passwordFile: String?

    @Option(name: .long, help: ArgumentHelp("The --user's password on the command line: visible in the process list "
                                            + "and shell history; prefer --password-file.", valueName: "password"))
    var password: String?

    @Option(name: .long, help: ArgumentHelp("Put the proxy on this Wi-Fi network's payload instead of a global proxy.",
                                            valueName: "ssid"))
    var wifi: String?

    @Option(name: .customLong("wifi-security"), help: ArgumentHelp(
        "The network's EncryptionType: WPA2 (WPA2 or WPA3), WPA3, WPA, WEP, Any or None (open). "
        + "Default: WPA2; an open network needs None said.", valueName: "type"))
    var wifiSecurity: String?

    @Option(name: .customLong("wifi-password-file"), help: ArgumentHelp(
        "The Wi-Fi password: a file holding it on one line; - reads standard input. Without it, a terminal prompts.",
        valueName: "file"))
    var wifiPasswordFile: String?

    @Option(name: .customLong("wifi-password"), help: ArgumentHelp(
        "The Wi-Fi password on the command line (visible in the process list); prefer --wifi-password-file.",
        valueName: "password"))
    var wifiPassword: String?

    @Flag(name: .customLong("wifi-hidden"), help: "The network does not broadcast its SSID (HIDDEN_NETWORK).")
    var wifiHidden = false

    @Flag(name: .customLong("captive-login"), help: ArgumentHelp("Let devices bypass the global proxy for a captive "
                                                                + "network's login page (ProxyCaptiveLoginAllowed)."))
    var captiveLogin = false

    @Option(name: .long, help: ArgumentHelp("A root certificate to install (repeatable; PEM with one or more "
                                            + "certificates, or DER): the CA that issued --listen-cert.", valueName: "file"))
    var ca: [String] = []

    @Option(name: .long, help: ArgumentHelp("The profile's reverse-DNS PayloadIdentifier; payloads add .proxy, "
                                            + ".wifi, .ca.N.", valueName: "prefix"))
    var identifier = "atsgate.lab"

    @Option(name: .long, help: ArgumentHelp("PayloadDisplayName (default: what the profile sets up).", valueName: "text"))
    var name: String?

    @Option(name: .long, help: ArgumentHelp("PayloadOrganization, shown on the device.", valueName: "text"))
    var organization: String?

    @Option(name: .customLong("description"), help: ArgumentHelp(
        "PayloadDescription (default: what the profile does, for the person installing it).", valueName: "text"))
    var profileDescription: String?

    @Option(name: .long, help: ArgumentHelp("Write the profile to FILE instead of standard output.", valueName: "file"))
    var output: String?

    /// Said after the profile is written, so that an error stays the one line on standard error.
    private var warnings: [String] = []

    mutating func run() throws {
        let profile = try makeProfile()
        let xml: Data
        do {
            xml = try profile.xml()
        } catch {
            throw CommandFailure(message: "profile: cannot write the property list: \(error)")
        }
        let holdsSecret = profile.holdsPassword
        if let output {
            try ProfileFile.write(xml, to: output, ownerOnly: holdsSecret)
        } else {
            FileHandle.standardOutput.write(xml)
        }
        for warning in warnings { FileHandle.standardError.write(Data("atsgate: warning: \(warning)\n".utf8)) }
        FileHandle.standardError.write(Data("atsgate: \(summary(of: profile))\n".utf8))
    }

    /// The profile the flags describe; every problem is one line naming its flag.
    mutating func makeProfile() throws -> ConfigurationProfile {
        try checkCombinations()
        let identifier = try parse("--identifier", identifier) { text throws(ProfileInputError) in
            try ProfileIdentifier(parsing: text)
        }
        for (flag, text) in [("--name", name), ("--organization", organization), ("--description", profileDescription)] {
            if let text { _ = try parse(flag, text) { text throws(ProfileInputError) in try ProfileText.check(text) } }
        }
        let roots = try rootCertificates()
        let setting: ProxySetting
        if let proxy {
            let server = try parse("--proxy", proxy) { text throws(ProfileInputError) in try ProxyServer(parsing: text) }
            var credentials: ProxyCredentials?
            if let user {
                // The name first: no prompt for the password of a user that cannot be written.
                _ = try parse("--user", user) { text throws(ProfileInputError) in try ProxyCredentials.checkUser(text) }
                let secret = try secret(value: password, valueFlag: "--password", file: passwordFile,
                                        fileFlag: "--password-file", prompt: "Password of proxy user \(user)")
                do {
                    credentials = try ProxyCredentials(user: user, password: secret?.text)
                } catch {
                    throw CommandFailure(message: "\(secret?.flag ?? "--password"): \(error.problem)")
                }
            }
            setting = .manual(server, credentials: credentials)
        } else {
            let url = try parse("--pac", pac!) { text throws(ProfileInputError) in try PACURL(parsing: text) }
            setting = .auto(url, fallbackAllowed: pacFallback)
        }
        let carrier: ConfigurationProfile.Carrier
        if let wifi {
            carrier = .wifi(try wifiNetwork(ssid: wifi))
        } else {
            carrier = .global(captiveLoginAllowed: captiveLogin)
        }
        return ConfigurationProfile(identifier: identifier, proxy: setting, carrier: carrier, roots: roots,
                                    displayName: name, organization: organization, description: profileDescription)
    }

    /// Flags that only make sense together, checked before any file is read or prompt shown.
    private func checkCombinations() throws {
        func fail(_ message: String) -> CommandFailure { CommandFailure(message: message) }
        switch (proxy, pac) {
        case (nil, nil): throw fail("profile needs --proxy HOST:PORT (the proxy's address) or --pac URL (a PAC file's)")
        case (.some, .some): throw fail("--proxy and --pac exclude each other: a profile sets ProxyType Manual or Auto")
        default: break
        }
        if pac != nil, user != nil {
            throw fail("--user: a proxy login goes with --proxy (ProxyType Manual); with --pac devices ignore "
                + "ProxyUsername and ProxyPassword")
        }
        if pac == nil, pacFallback { throw fail("--pac-fallback needs --pac URL") }
        if pacFallback, noDirectFallback { throw fail("--pac-fallback and --no-direct-fallback exclude each other") }
        if pac == nil, noDirectFallback {
            throw fail("--no-direct-fallback needs --pac URL: ProxyPACFallbackAllowed is a PAC setting, and with --proxy "
                + "iOS has no such key (a device that cannot reach the proxy may still go direct: use the transparent gate)")
        }
        for (flag, given) in [("--password-file", passwordFile != nil), ("--password", password != nil)] where given {
            if user == nil { throw fail("\(flag) needs --user NAME (the password is that user's)") }
        }
        if passwordFile != nil, password != nil { throw fail("--password and --password-file exclude each other") }
        if wifi == nil {
            for (flag, given) in [("--wifi-security", wifiSecurity != nil), ("--wifi-password-file", wifiPasswordFile != nil),
                                  ("--wifi-password", wifiPassword != nil), ("--wifi-hidden", wifiHidden)] where given {
                throw fail("\(flag) needs --wifi SSID")
            }
        } else if captiveLogin {
            throw fail("--captive-login sets the global proxy payload's ProxyCaptiveLoginAllowed; a Wi-Fi payload (--wifi) has no such key")
        }
        if wifiPasswordFile != nil, wifiPassword != nil {
            throw fail("--wifi-password and --wifi-password-file exclude each other")
        }
        if passwordFile == "-", wifiPasswordFile == "-" {
            throw fail("--password-file - and --wifi-password-file - would both read standard input; give one of them a file")
        }
    }

    private mutating func wifiNetwork(ssid: String) throws -> WiFiNetwork {
        // The SSID first: no prompt for the password of a network that cannot be written.
        _ = try parse("--wifi", ssid) { text throws(ProfileInputError) in try WiFiNetwork.checkSSID(text) }
        var security: WiFiNetwork.Security?
        if let wifiSecurity {
            security = try parse("--wifi-security", wifiSecurity) { text throws(ProfileInputError) in
                try WiFiNetwork.Security(parsing: text)
            }
        }
        // An open network is asked for no password; one given for it is refused below.
        let secret = try self.secret(value: wifiPassword, valueFlag: "--wifi-password", file: wifiPasswordFile,
                                     fileFlag: "--wifi-password-file",
                                     prompt: security == WiFiNetwork.Security.none ? nil : "Password of Wi-Fi \(ssid)")
        if security == nil, secret == nil {
            // Neither an open network nor a password: more likely a forgotten password than an open lab network.
            throw CommandFailure(message: "--wifi \(Self.shown(ssid)): no password: give --wifi-password-file FILE (- for standard "
                + "input), or --wifi-security None for an open network (or WPA2, WPA3... to leave the password out)")
        }
        do {
            return try WiFiNetwork(ssid: ssid, security: security ?? .wpa2, password: secret?.text, hidden: wifiHidden)
        } catch {
            switch error.part {
            case .ssid: throw CommandFailure(message: "--wifi \(Self.shown(ssid)): \(error.problem)")
            case .password: throw CommandFailure(message: "\(secret?.flag ?? "--wifi-password"): \(error.problem)")
            }
        }
    }

    /// A password from its flag, its file, or (with a `prompt`) asked on a terminal; nil when none is
    /// given (and none typed). The flag it came from is kept for messages about it.
    private mutating func secret(value: String?, valueFlag: String, file: String?, fileFlag: String,
                        prompt: String?) throws -> (text: String, flag: String)? {
        if let value {
            warnings.append("\(valueFlag) puts the password in the process list and shell history; "
                + "\(fileFlag) FILE (- for standard input) does not")
            return (value, valueFlag)
        }
        if let file { return (try SecretInput.read(file, flag: fileFlag), file == "-" ? "\(fileFlag) -" : "\(fileFlag) \(file)") }
        guard let prompt, SecretInput.canPrompt, let typed = SecretInput.prompt(prompt) else { return nil }
        return (typed, "the password typed")
    }

    /// Each certificate of each --ca file, checked: a root (self-issued), not expired, each once.
    private func rootCertificates() throws -> [RootCertificate] {
        var roots: [RootCertificate] = []
        var seen: Set<[UInt8]> = []
        let now = Date()
        for file in ca {
            let entries: [CertificateFile.Entry]
            switch CertificateFile.read(file) {
            case .success(let found): entries = found
            case .failure(let error): throw CommandFailure(message: "--ca \(file): \(error.problem)")
            }
            let stem = ((file as NSString).lastPathComponent as NSString).deletingPathExtension
            for (index, entry) in entries.enumerated() {
                let which = entries.count == 1 ? "the certificate" : "certificate \(index + 1) of \(entries.count)"
                guard entry.isSelfIssued else {
                    throw CommandFailure(message: "--ca \(file): \(which) (\(entry.subject)) is issued by \(entry.issuer), "
                        + "so it is not a root; com.apple.security.root installs trust anchors: give the root CA's certificate")
                }
                if let notAfter = entry.notAfter, notAfter < now {
                    throw CommandFailure(message: "--ca \(file): \(which) (\(entry.subject)) expired on "
                        + notAfter.formatted(.iso8601))
                }
                guard seen.insert(entry.der).inserted else { continue }
                let fileName = stem + (entries.count == 1 ? "" : "-\(index + 1)") + ".cer"
                roots.append(RootCertificate(der: entry.der, fileName: fileName, name: entry.name))
            }
        }
        return roots
    }

    /// `parse` for one flag: the pure layer's problem becomes a line naming the flag and its value.
    private func parse<T>(_ flag: String, _ text: String, _ body: (String) throws(ProfileInputError) -> T) throws -> T {
        do {
            return try body(text)
        } catch {
            throw CommandFailure(message: "\(flag) \(Self.shown(text)): \(error.problem)")
        }
    }

    /// A value as an error message repeats it: escaped when it holds a control character, so that the
    /// message stays one line.
    static func shown(_ text: String) -> String {
        text.unicodeScalars.contains { $0.properties.generalCategory == .control } ? text.debugDescription : text
    }

    /// One line on standard error: what was written and where, never a password.
    private func summary(of profile: ConfigurationProfile) -> String {
        var parts: [String] = []
        if !profile.roots.isEmpty {
            parts.append("root certificate\(profile.roots.count == 1 ? "" : "s") " + profile.roots.map(\.name).joined(separator: ", "))
        }
        switch profile.carrier {
        case .global:
            parts.append("global HTTP proxy \(profile.proxy.summary). On iOS, tvOS and visionOS a global proxy installs "
                + "on supervised devices only (--wifi SSID needs no supervision)")
        case .wifi(let network):
            parts.append("Wi-Fi \(network.ssid) (\(network.security.rawValue), "
                + (network.password == nil ? "no password" : "with a password") + ") with proxy \(profile.proxy.summary)")
        }
        let place = output.map { "to \($0)" } ?? "to standard output"
        return "profile \(profile.identifier) written \(place): " + parts.joined(separator: "; ")
    }
}
