import ATSPolicy
import Foundation

/// A parent (upstream) proxy: `--parent http://[USER:PASSWORD@]HOST:PORT`, or a route's `parent=URL`.
/// Tunnels reach their origin through it with CONNECT, allowed cleartext with absolute-form requests;
/// its credentials go to it alone.
public struct ParentProxy: Sendable, Hashable, CustomStringConvertible {
    public var host: ATSPolicy.Host
    public var port: Int
    /// The user of the parent's credentials (the password is only in `authorization`).
    public var user: String?
    /// `Basic ...` for the parent's Proxy-Authorization, when the URL has credentials.
    package var authorization: String?

    /// Why a `--parent` URL was refused, worded for the flag's error.
    public struct Invalid: Error, CustomStringConvertible {
        public var description: String
    }

    /// Parses `http://[USER:PASSWORD@]HOST:PORT` (a trailing `/` allowed; user and password
    /// percent-decoded). Only `http`: the parent is asked with CONNECT and absolute-form requests.
    public init(url: String) throws(Invalid) {
        guard let schemeEnd = url.range(of: "://") else {
            throw Invalid(description: "expected http://[USER:PASSWORD@]HOST:PORT")
        }
        let scheme = url[..<schemeEnd.lowerBound].lowercased()
        guard scheme == "http" else {
            throw Invalid(description: "the scheme is '\(scheme)', but a parent is an http:// proxy "
                + "(CONNECT carries TLS to the origin; https:// and socks parents are not supported)")
        }
        var rest = url[schemeEnd.upperBound...]
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        guard !rest.contains("/"), !rest.contains("?"), !rest.contains("#") else {
            throw Invalid(description: "a parent URL has no path, query or fragment")
        }
        if let at = rest.lastIndex(of: "@") {
            let userInfo = rest[..<at]
            rest = rest[rest.index(after: at)...]
            let colon = userInfo.firstIndex(of: ":")
            guard let colon, let user = userInfo[..<colon].removingPercentEncoding,
                  let password = userInfo[userInfo.index(after: colon)...].removingPercentEncoding, !user.isEmpty else {
                throw Invalid(description: "credentials are USER:PASSWORD@ (percent-encode ':' and '@' in them)")
            }
            self.user = user
            authorization = "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()
        }
        let parsed: Destination
        do {
            parsed = try Destination.parse(authority: rest, scheme: .http, portRequired: true)
        } catch {
            throw Invalid(description: "expected HOST:PORT after http:// (\(error.description))")
        }
        host = parsed.host
        port = parsed.port
    }

    public init(host: ATSPolicy.Host, port: Int, user: String? = nil, password: String? = nil) {
        self.host = host
        self.port = port
        if let user, let password {
            self.user = user
            authorization = "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()
        }
    }

    /// `HOST:PORT`, as the log's `parent` field and the metrics' `parent` label name it.
    public var description: String {
        if case .address(let address) = host, !address.isIPv4 { return "[\(address)]:\(port)" }
        return "\(host):\(port)"
    }
}

/// Where a request leaves the proxy for: straight to the origin, or through a parent.
public enum Egress: Sendable, Hashable {
    case direct
    case parent(ParentProxy)
}
