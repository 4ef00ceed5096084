import ATSPolicy
import POSIX

/// One app's (or one extension's) policy, as `--policy [ID=]FILE` loaded it.
public struct AppPolicy: Sendable {
    /// The policy ID: the bundle's CFBundleIdentifier, the ID given, or the file name.
    public var id: String
    public var engine: DecisionEngine
    /// Where it came from (the file, and the bundle inside an archive), for the log's `policy` field.
    public var label: String
    /// The bundle's CFBundleExecutable and CFBundleName, which automatic agent routing matches.
    public var executable: String?
    public var name: String?

    public init(id: String, engine: DecisionEngine, label: String, executable: String? = nil, name: String? = nil) {
        self.id = id
        self.engine = engine
        self.label = label
        self.executable = executable
        self.name = name
    }
}

/// One `--route RULE=ID`: what a request must match to use a policy.
public enum RouteRule: Sendable, Equatable {
    /// The proxy user who authenticated.
    case user(String)
    /// The client's address.
    case client(IPNetwork)
    /// The listening port the client reached.
    case port(Int)
    /// The User-Agent's first product name, percent-decoded.
    case agent(String)

    /// Parses `user:NAME`, `client:CIDR`, `port:N` or `agent:NAME` (the part before `=ID`).
    public init?(parsing text: Substring) {
        guard let colon = text.firstIndex(of: ":") else { return nil }
        let value = text[text.index(after: colon)...]
        guard !value.isEmpty else { return nil }
        switch text[..<colon] {
        case "user": self = .user(String(value))
        case "agent": self = .agent(String(value))
        case "port":
            guard let port = Int(value), (1...65535).contains(port) else { return nil }
            self = .port(port)
        case "client":
            if let parsed = IPNetwork.parse(value) {
                self = .client(parsed.network)
            } else if let address = IPAddress.parseStrict(value) {
                self = .client(IPNetwork(address: address, prefixLength: address.isIPv4 ? 32 : 128))
            } else {
                return nil
            }
        default: return nil
        }
    }

    func matches(user: String?, client: IPAddress, port: Int, product: String?) -> Bool {
        switch self {
        case .user(let name): user == name
        case .client(let network): network.contains(client)
        case .port(let listening): listening == port
        case .agent(let name): product == name
        }
    }

    package var kind: RouteKind {
        switch self {
        case .user: .user
        case .client: .client
        case .port: .port
        case .agent: .agent
        }
    }
}

/// A rule, the index (in `ProxyConfiguration.apps`) of the policy it selects, and the way out it
/// names (`parent=URL` or `direct`). A route may name only one of them: the first matching route
/// with a policy chooses the policy, the first matching route with a way out chooses the way out.
public struct Route: Sendable {
    public var rule: RouteRule
    public var app: Int?
    /// nil: the daemon's `--parent` list (and `--parent-bypass`) decide.
    public var egress: Egress?
    public init(rule: RouteRule, app: Int?, egress: Egress? = nil) {
        self.rule = rule
        self.app = app
        self.egress = egress
    }
}

/// What a request no rule matched gets (`--unrouted`).
public enum Unrouted: Sendable, Equatable {
    case app(Int)
    /// 403 with reason `no-policy`.
    case block
}

/// Which step chose the policy (the log's `route` field).
package enum RouteKind: String, Sendable {
    case user, client, port, agent
    case agentAuto = "agent-auto"
    case `default`
}

/// Picks the policy for a request: the explicit rules in order, then the bundle whose executable or
/// name is the User-Agent's product, then `--unrouted`. Built once per configuration generation.
package struct AppRouter: Sendable {
    package let apps: [AppPolicy]
    package let routes: [Route]
    package let unrouted: Unrouted
    /// Product name -> app, from every bundle's CFBundleExecutable and CFBundleName (first one wins).
    private let byProduct: [String: Int]

    package init(apps: [AppPolicy], routes: [Route], unrouted: Unrouted) {
        self.apps = apps
        self.routes = routes
        self.unrouted = unrouted
        var byProduct: [String: Int] = [:]
        // Executables first: they are unique in a build, names may be shared by an app and its clip.
        for (index, app) in apps.enumerated() {
            if let executable = app.executable, byProduct[executable] == nil { byProduct[executable] = index }
        }
        for (index, app) in apps.enumerated() {
            if let name = app.name, byProduct[name] == nil { byProduct[name] = index }
        }
        self.byProduct = byProduct
    }

    /// The app index (nil: blocked, no policy) and the step that chose it.
    package func select(user: String?, client: IPAddress, port: Int, product: String?) -> (app: Int?, kind: RouteKind) {
        for route in routes {
            if let app = route.app, route.rule.matches(user: user, client: client, port: port, product: product) {
                return (app, route.rule.kind)
            }
        }
        if let product, let app = byProduct[product] { return (app, .agentAuto) }
        switch unrouted {
        case .app(let index): return (index, .default)
        case .block: return (nil, .default)
        }
    }

    /// The way out the first matching route names; nil when none does (then `--parent` decides).
    package func egress(user: String?, client: IPAddress, port: Int, product: String?) -> Egress? {
        routes.first { $0.egress != nil && $0.rule.matches(user: user, client: client, port: port, product: product) }?
            .egress
    }

    /// The first product name of a User-Agent (`Lab%20App/1.0 CFNetwork/1490 Darwin/23.0.0` is
    /// `Lab App`), percent-decoded as CFNetwork encodes it; nil when there is none.
    package static func product(ofUserAgent agent: String?) -> String? {
        guard let agent else { return nil }
        let token = agent.prefix { $0 != " " && $0 != "/" }
        guard !token.isEmpty else { return nil }
        return percentDecoded(token)
    }

    package static func percentDecoded(_ text: Substring) -> String {
        guard text.contains("%") else { return String(text) }
        var bytes: [UInt8] = []
        var utf8 = Array(text.utf8)[...]
        while let byte = utf8.popFirst() {
            if byte == UInt8(ascii: "%"), utf8.count >= 2,
               let value = UInt8(String(decoding: utf8.prefix(2), as: UTF8.self), radix: 16) {
                bytes.append(value)
                utf8 = utf8.dropFirst(2)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
