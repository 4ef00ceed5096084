import ATSPolicy
import EventLoops
import HTTP1
import Inspection
import POSIX
import ProxyAccess
import ProxyAnswers

/// What comes before a request's policy: the proxy's own documents (the PAC file) and proxy
/// authentication (`--auth-file`, Basic, a 407 that keeps the connection for the client's retry).
extension ProxyConnection {
    // MARK: the PAC file

    static let pacPaths: Set<String> = ["/proxy.pac", "/wpad.dat"]
    static let pacType = "application/x-ns-proxy-autoconfig"

    /// A GET or HEAD of /proxy.pac or /wpad.dat asked of the proxy itself, answered without credentials.
    func servedDocument(_ head: RequestHead) -> Verdict? {
        guard head.method == "GET" || head.method == "HEAD", !head.isAbsoluteForm else { return nil }
        let path = head.target.prefix { $0 != "?" }
        guard ProxyConnection.pacPaths.contains(String(path)) else { return nil }
        record.message = "served \(path)"
        let body = generation.configuration.pacFile ?? ProxyConnection.pac(proxy: proxyAuthority(head), tls: clientTLS != nil)
        return .serve(contentType: ProxyConnection.pacType, body: body, includeBody: head.method != "HEAD")
    }

    /// The address the client used to reach the proxy: its Host field when that is a valid
    /// authority (what a device was configured with, through a load balancer too), else the socket's.
    func proxyAuthority(_ head: RequestHead) -> String {
        let local = Socket.localAddress(client.fd)
        let port = local?.port ?? localPort
        if let host = head.field(.host), !host.isEmpty,
           let parsed = try? Destination.parse(authority: host, scheme: .http, portRequired: false) {
            let hostText = hostForURL(parsed)
            let explicitPort = host.hasSuffix("]") || !host.contains(":") ? port : parsed.port
            return "\(hostText):\(explicitPort)"
        }
        guard let local else { return "127.0.0.1:\(port)" }
        return local.description
    }

    /// Every URL through the proxy: no DIRECT fallback, which would bypass the policy when the proxy
    /// is down. Asked of a TLS listener, the proxy is `HTTPS HOST:PORT` (TLS to the proxy: Chrome and
    /// Firefox read it so).
    static func pac(proxy: String, tls: Bool = false) -> String {
        """
        // atsgate: every request goes through the ATS-enforcing proxy.
        function FindProxyForURL(url, host) {
          return "\(tls ? "HTTPS" : "PROXY") \(proxy)";
        }

        """
    }

    // MARK: proxy authentication

    /// Checks the request's Basic credentials: known ones at once; new ones on the blocking pool,
    /// after the delay the client address's failed logins have earned (LoginThrottle), or not at all
    /// once they are too many (429).
    func authenticate(_ head: RequestHead, _ authenticator: ProxyAuthenticator) {
        let field = head.field(.proxyAuthorization)
        let throttle = generation.daemon.loginThrottle
        if let token = ProxyAuthenticator.basicToken(field) {
            if token == verifiedCredentials, proxyUser != nil { return dispatch(head) }
            // A throttled address gets no answer about any password, not even a remembered one.
            if let retryAfter = throttle.refusal(clientAddress.ip, now: monotonic()) {
                return throttled(ProxyAuthenticator.basicCredentials(field)?.user, retryAfter: retryAfter)
            }
            if let user = authenticator.knownUser(token) {
                verifiedCredentials = token
                proxyUser = user
                return dispatch(head)
            }
        }
        guard let credentials = ProxyAuthenticator.basicCredentials(field) else {
            proxyUser = nil
            return challenge(head, field == nil ? "proxy authentication required (Proxy-Authorization: Basic)"
                                                : "Proxy-Authorization is not valid Basic credentials")
        }
        let delay: Double
        switch throttle.admit(clientAddress.ip, now: monotonic()) {
        case .refuse(let retryAfter): return throttled(credentials.user, retryAfter: retryAfter)
        case .proceed(let wait): delay = wait
        }
        enterAuthenticating(head)
        let loop = self.loop
        let check = {
            BlockingPools.passwords.submit {
                let valid = authenticator.file.verify(user: credentials.user, password: credentials.password)
                loop.execute { [self] in
                    authenticated(head, user: credentials.user, token: credentials.token, valid: valid, authenticator)
                }
            }
        }
        if delay > 0 { arm(after: delay, check) } else { check() }
    }

    /// 429 for a client address with too many failed logins; the connection closes.
    private func throttled(_ user: String?, retryAfter: Int) {
        verifiedCredentials = nil
        proxyUser = nil
        record.proxyUser = user
        respond(.throttle(message: "too many failed proxy logins from \(clientAddress.ip); retry after \(retryAfter) s",
                          retryAfter: retryAfter))
    }

    private func authenticated(_ head: RequestHead, user: String, token: [UInt8], valid: Bool,
                               _ authenticator: ProxyAuthenticator) {
        // Late: the connection was closed (a stop) while the password was checked.
        guard case .authenticating = state else { return }
        if valid { generation.daemon.loginThrottle.succeeded(clientAddress.ip, now: monotonic()) }
        guard valid else {
            proxyUser = nil
            let problem = authenticator.file.hashes[user] == nil ? "unknown proxy user '\(user)'"
                                                                 : "wrong password for proxy user '\(user)'"
            return challenge(head, problem, attempted: user)
        }
        authenticator.remember(token, user: user)
        verifiedCredentials = token
        proxyUser = user
        dispatch(head)
    }

    /// 407 with a Basic challenge. The connection stays open when the request allows it (iOS sends
    /// its credentials on the same connection, and fails HTTPS if the proxy closes it instead).
    private func challenge(_ head: RequestHead, _ message: String, attempted: String? = nil) {
        verifiedCredentials = nil
        record.proxyUser = attempted
        respond(.challenge(message: message), .http(keepAlive: head.keepAlive && !head.hasBody))
    }
}
