import Testing
@testable import LabProfile

/// What `atsgate profile` accepts from its flags, as decision tables: each value either becomes
/// what the profile writes or is refused with words that say why.
@Suite struct ProfileInputTests {
    @Test(arguments: ["com.example.lab", "lab.atsgate", "com.example.device-lab.2024", "A.B", "x1.y2.z3"])
    func reverseDNSIdentifiersAreAccepted(text: String) throws {
        #expect(try ProfileIdentifier(parsing: text).description == text)
    }

    @Test(arguments: [
        ("", "is empty"), ("lab", "single label"), ("com..example", "empty label"), (".com.example", "empty label"),
        ("com.example.", "empty label"), ("com.exa_mple", "'_'"), ("com.example lab", "U+20"), ("com.-lab", "hyphen"),
        ("com.lab-", "hyphen"), ("com.exämple", "'ä'"), ("com." + String(repeating: "a", count: 64), "longer than 63"),
        (String(repeating: "ab.", count: 70) + "c", "longer than 200"),
    ])
    func badIdentifiersAreRefused(text: String, words: String) {
        #expect {
            try ProfileIdentifier(parsing: text)
        } throws: { error in
            (error as? ProfileInputError)?.problem.contains(words) == true
        }
    }

    @Test func payloadIdentifiersExtendThePrefix() throws {
        #expect(try ProfileIdentifier(parsing: "com.example.lab").appending("ca.2") == "com.example.lab.ca.2")
    }

    /// The host is written as the proxy reads hosts: lowercase names, canonical addresses, IPv6
    /// without brackets (ProxyServer is a host, not an authority).
    @Test(arguments: [
        ("atsgate.lab.example:3128", "atsgate.lab.example", 3128), ("ATSGATE.Lab.Example:3128", "atsgate.lab.example", 3128),
        ("192.168.50.10:3128", "192.168.50.10", 3128), ("[2001:DB8::1]:8080", "2001:db8::1", 8080),
        ("0x7f.1:3128", "127.0.0.1", 3128), ("proxy:1", "proxy", 1), ("proxy:65535", "proxy", 65535),
    ])
    func proxyAddresses(text: String, host: String, port: Int) throws {
        let server = try ProxyServer(parsing: text)
        #expect(server.host == host)
        #expect(server.port == port)
    }

    @Test(arguments: [
        ("atsgate.lab.example", "missing port"), ("atsgate.lab.example:", "missing port"), ("proxy:0", "invalid port"),
        ("proxy:65536", "invalid port"), ("proxy:http", "invalid port"), (":3128", "empty host"),
        ("bad_host!:3128", "'!'"), ("0.0.0.0:3128", "every interface"), ("[::]:3128", "every interface"),
        ("[2001:db8::1:3128", "unclosed"), ("2001:db8::1:3128", "needs brackets"),
    ])
    func badProxyAddressesAreRefused(text: String, words: String) {
        #expect {
            try ProxyServer(parsing: text)
        } throws: { error in
            (error as? ProfileInputError)?.problem.contains(words) == true
        }
    }

    @Test(arguments: ["http://atsgate.lab.example:3128/proxy.pac", "https://pac.lab.example/lab.pac?v=2",
                      "HTTP://10.0.0.1/wpad.dat", "http://[2001:db8::1]:3128/proxy.pac"])
    func pacURLsAreAccepted(text: String) throws {
        #expect(try PACURL(parsing: text).description == text)
    }

    @Test(arguments: [
        ("proxy.pac", "not a URL"), ("ftp://lab.example/proxy.pac", "scheme 'ftp'"), ("file:///etc/proxy.pac", "scheme 'file'"),
        ("http://lab:secret@lab.example/proxy.pac", "credentials"), ("http:///proxy.pac", "no host"),
        ("http://lab example/proxy.pac", "space"), ("http://lab.example/pro\u{7}xy.pac", "U+7"),
        ("http://bad_host!/proxy.pac", "'!'"), ("", "not a URL"),
    ])
    func badPACURLsAreRefused(text: String, words: String) {
        #expect {
            try PACURL(parsing: text)
        } throws: { error in
            (error as? ProfileInputError)?.problem.contains(words) == true
        }
    }

    /// XML 1.0 cannot carry these: a profile holding one would not be well-formed.
    @Test(arguments: ["a\u{0}b", "tab\there", "line\nbreak", "bell\u{7}", "del\u{7F}", "c1\u{85}", "non\u{FFFE}char"])
    func controlCharactersAreRefused(text: String) {
        #expect(throws: ProfileInputError.self) { try ProfileText.check(text) }
    }

    @Test func textMayBeAnyOtherUnicode() throws {
        try ProfileText.check("Gerätelabor 🧪 <&> \"quoted\"")
        #expect(throws: ProfileInputError("is empty")) { try ProfileText.check("") }
    }

    @Test func credentials() throws {
        let credentials = try ProxyCredentials(user: "lab", password: "s3cret pass")
        #expect(credentials.user == "lab" && credentials.password == "s3cret pass")
        #expect(!credentials.description.contains("s3cret"), "the password is never shown")
        #expect(throws: ProfileInputError.self) { try ProxyCredentials(user: "lab:1", password: nil) }
        #expect(throws: ProfileInputError.self) { try ProxyCredentials(user: "", password: nil) }
        #expect(throws: ProfileInputError.self) { try ProxyCredentials(user: "lab", password: "") }
        #expect(throws: ProfileInputError.self) { try ProxyCredentials(user: "lab", password: "new\nline") }
    }

    @Test(arguments: [("wpa2", WiFiNetwork.Security.wpa2), ("WPA3", .wpa3), ("Wpa", .wpa), ("wep", .wep),
                      ("any", .any), ("NONE", .none)])
    func wifiSecurityNames(text: String, security: WiFiNetwork.Security) throws {
        #expect(try WiFiNetwork.Security(parsing: text) == security)
    }

    /// Passwords by what the standards allow for each security type.
    @Test(arguments: [
        (WiFiNetwork.Security.wpa2, "12345678", true), (.wpa2, "1234567", false), (.wpa3, String(repeating: "p", count: 63), true),
        (.wpa, String(repeating: "p", count: 64), false), (.wpa2, String(repeating: "a1", count: 32), true),
        (.wpa2, "pässwörter", false), (.wep, "abcde", true), (.wep, "0123456789", true), (.wep, "abcdef", false),
        (.any, "abcde", true), (.any, "abcdefgh", true), (.any, "abc", false), (.none, "12345678", false),
    ])
    func wifiPasswords(security: WiFiNetwork.Security, password: String, accepted: Bool) {
        let network = try? WiFiNetwork(ssid: "DeviceLab", security: security, password: password, hidden: false)
        #expect((network != nil) == accepted)
        if !accepted {
            #expect(throws: WiFiNetworkError.self) {
                try WiFiNetwork(ssid: "DeviceLab", security: security, password: password, hidden: false)
            }
        }
    }

    @Test func ssidsAreAtMost32Bytes() throws {
        _ = try WiFiNetwork(ssid: String(repeating: "s", count: 32), security: .none, password: nil, hidden: false)
        // 11 three-byte characters: 11 characters, 33 bytes.
        #expect {
            try WiFiNetwork(ssid: String(repeating: "€", count: 11), security: .none, password: nil, hidden: false)
        } throws: { error in
            (error as? WiFiNetworkError) == WiFiNetworkError(part: .ssid, problem: "is 33 bytes long; an SSID has 32 at most")
        }
        #expect(throws: WiFiNetworkError.self) { try WiFiNetwork(ssid: "", security: .none, password: nil, hidden: false) }
    }
}
