/// The values of one HAR entry the report reads, as the parser found them (escapes decoded). The
/// buffers are reused from entry to entry.
package struct HAREntry {
    /// The entry's number in `log.entries`, from 1, and the byte offset where it starts.
    package var index = 0
    package var offset = 0
    package var notAnObject = false
    package var hasStarted = false
    package var hasURL = false
    package var started: [UInt8] = []
    package var method: [UInt8] = []
    package var url: [UInt8] = []
    package var status: Int?
    /// `response._error` (Chrome's `net::ERR_…`, mitmproxy's message).
    package var error: [UInt8] = []
    /// `_securityDetails`: `TLS 1.3`, and in Chrome's DevTools protocol shape `AES_128_GCM`, `ECDHE_RSA`,
    /// `HMAC-SHA1`, `X25519MLKEM768`.
    package var tlsProtocol: [UInt8] = []
    package var cipher: [UInt8] = []
    package var keyExchange: [UInt8] = []
    package var keyExchangeGroup: [UInt8] = []
    package var mac: [UInt8] = []

    package mutating func reset(index: Int, offset: Int) {
        self.index = index
        self.offset = offset
        notAnObject = false
        hasStarted = false
        hasURL = false
        status = nil
        // One by one: a loop over key paths cost a retain and release of each buffer per entry.
        started.removeAll(keepingCapacity: true)
        method.removeAll(keepingCapacity: true)
        url.removeAll(keepingCapacity: true)
        error.removeAll(keepingCapacity: true)
        tlsProtocol.removeAll(keepingCapacity: true)
        cipher.removeAll(keepingCapacity: true)
        keyExchange.removeAll(keepingCapacity: true)
        keyExchangeGroup.removeAll(keepingCapacity: true)
        mac.removeAll(keepingCapacity: true)
    }
}

/// A request URL's destination as the proxy would log it, found in the URL's bytes without making a
/// String: http or https (WebSocket schemes as their HTTP counterparts, which ATS treats alike), the
/// host's bytes (without brackets or a trailing dot; the builder lowercases them), and the port (the
/// scheme's default when the URL has none).
package struct URLDestination: Equatable {
    package var secure: Bool
    package var host: Range<Int>
    package var port: Int

    package enum Refusal: Error, Equatable {
        /// Not a network load: `data:`, `blob:`, `about:`, an extension's scheme.
        case notHTTP(String)
        case malformed(String)
    }

    package static func parse(_ url: [UInt8]) -> Result<URLDestination, Refusal> {
        guard let colon = url.firstIndex(of: UInt8(ascii: ":")), colon > 0 else { return .failure(.malformed("no scheme")) }
        func scheme(_ name: StaticString) -> Bool {
            colon == name.utf8CodeUnitCount && (0..<colon).allSatisfy { url[$0] | 0x20 == name.utf8Start[$0] }
        }
        let secure: Bool, defaultPort: Int
        if scheme("http") || scheme("ws") { (secure, defaultPort) = (false, 80) }
        else if scheme("https") || scheme("wss") { (secure, defaultPort) = (true, 443) }
        else { return .failure(.notHTTP(String(decoding: url[..<colon], as: UTF8.self).lowercased())) }
        guard url.count >= colon + 3, url[colon + 1] == UInt8(ascii: "/"), url[colon + 2] == UInt8(ascii: "/") else {
            return .failure(.malformed("no //authority"))
        }
        var authority = (colon + 3)..<url.count
        if let end = url[authority].firstIndex(where: { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }) {
            authority = authority.lowerBound..<end
        }
        if let at = url[authority].lastIndex(of: UInt8(ascii: "@")) { authority = (at + 1)..<authority.upperBound }
        var host = authority
        var portBytes = authority.upperBound..<authority.upperBound
        if url[authority].first == UInt8(ascii: "[") {
            guard let close = url[authority].firstIndex(of: UInt8(ascii: "]")) else { return .failure(.malformed("unclosed [")) }
            host = (authority.lowerBound + 1)..<close
            if close + 1 < authority.upperBound {
                guard url[close + 1] == UInt8(ascii: ":") else { return .failure(.malformed("bytes after ]")) }
                portBytes = (close + 2)..<authority.upperBound
            }
        } else if let portColon = url[authority].lastIndex(of: UInt8(ascii: ":")) {
            host = authority.lowerBound..<portColon
            portBytes = (portColon + 1)..<authority.upperBound
        }
        if host.count > 0, url[host.upperBound - 1] == UInt8(ascii: ".") { host = host.lowerBound..<(host.upperBound - 1) }
        guard !host.isEmpty else { return .failure(.malformed("no host")) }
        var port = defaultPort
        if !portBytes.isEmpty {
            guard portBytes.count <= 5, url[portBytes].allSatisfy({ (0x30...0x39).contains($0) }),
                  case let value = url[portBytes].reduce(0, { $0 * 10 + Int($1 - 0x30) }), (1...65535).contains(value) else {
                return .failure(.malformed("port is not 1-65535"))
            }
            port = value
        }
        return .success(URLDestination(secure: secure, host: host, port: port))
    }
}

/// What a HAR's `_securityDetails` says in the decision log's words.
package enum HARSecurity {
    /// `TLS 1.3` -> `TLSv1.3`; QUIC (HTTP/3) is TLS 1.3. Nil for a name this version does not know.
    package static func tlsVersion(_ text: String) -> String? {
        switch text.uppercased() {
        case "TLS 1.3", "TLSV1.3", "QUIC": "TLSv1.3"
        case "TLS 1.2", "TLSV1.2": "TLSv1.2"
        case "TLS 1.1", "TLSV1.1": "TLSv1.1"
        case "TLS 1", "TLS 1.0", "TLSV1", "TLSV1.0": "TLSv1.0"
        case "SSL 3", "SSL 3.0", "SSLV3": "SSLv3"
        default: nil
        }
    }

    /// The IANA suite name (as the log writes it) from Chrome's parts: `ECDHE_RSA` + `AES_128_GCM` ->
    /// `TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256`; TLS 1.3's suites have no key exchange part. A name that
    /// already is an IANA name is kept. Nil when the parts name no suite the table knows.
    package static func suite(cipher: String, keyExchange: String, mac: String, version: String?) -> String? {
        if cipher.hasPrefix("TLS_") { return CipherSuiteName.code(cipher) != nil ? cipher : nil }
        let cipher = cipher.uppercased()
        guard !cipher.isEmpty else { return nil }
        var hash: String
        switch mac.uppercased() {
        case "HMAC-SHA1": hash = "SHA"
        case "HMAC-SHA256": hash = "SHA256"
        case "HMAC-SHA384": hash = "SHA384"
        case "": hash = cipher.contains("256_GCM") ? "SHA384" : "SHA256"
        default: return nil
        }
        let name: String
        if version == "TLSv1.3" || keyExchange.isEmpty {
            name = "TLS_\(cipher)_\(hash)"
        } else {
            if cipher == "3DES_EDE_CBC" { hash = "SHA" }
            name = "TLS_\(keyExchange.uppercased())_WITH_\(cipher)_\(hash)"
        }
        return CipherSuiteName.code(name) != nil ? name : nil
    }

    /// Chrome's group names in the IANA registry's spelling the log uses (`P-256` -> `secp256r1`).
    package static func group(_ text: String) -> String {
        switch text {
        case "X25519": "x25519"
        case "X448": "x448"
        case "P-256": "secp256r1"
        case "P-384": "secp384r1"
        case "P-521": "secp521r1"
        default: text
        }
    }
}
