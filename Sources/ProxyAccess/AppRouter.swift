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

    package var kind: RouteKind {
        switch self {
        case .user: .user
        case .client: .client
        case .port: .port
        case .agent: .agent
        }
    }
}

/// A rule and the index (in `ProxyConfiguration.apps`) of the policy it selects, with what else the
/// route carries (its own destination rules).
public struct Route: Sendable {
    public var rule: RouteRule
    public var app: Int
    /// `allow-dest=` and `deny-dest=` options: added to the global `--allow-dest`/`--deny-dest` for
    /// the requests this route selects.
    public var destinations: DestinationRules
    /// The route as given (`client:198.18.0.0/15=com.example.lab`), for messages.
    public var name: String

    public init(rule: RouteRule, app: Int, destinations: DestinationRules = DestinationRules(), name: String = "") {
        self.rule = rule
        self.app = app
        self.destinations = destinations
        self.name = name
    }

    /// One `--route` value read: `RULE=ID`, then options after commas
    /// (`client:198.18.0.0/15=com.example.lab,allow-dest=10.9.0.0/16,deny-dest=.corp.example`).
    public struct Text: Sendable {
        public var rule: RouteRule
        public var id: String
        public var destinations = DestinationRules()
        /// `RULE=ID` without the options.
        public var name: String
    }

    /// Parses a `--route` value; the error says what is wrong with it.
    public static func parse(_ text: String) -> Result<Text, RouteError> {
        var parts = text.split(separator: ",", omittingEmptySubsequences: false)[...]
        let head = parts.removeFirst()
        guard let equals = head.lastIndex(of: "="), let rule = RouteRule(parsing: head[..<equals]) else {
            return .failure(RouteError(route: text, problem: "expected user:NAME, client:CIDR, port:N or agent:NAME, then =ID"))
        }
        var parsed = Text(rule: rule, id: String(head[head.index(after: equals)...]), name: String(head))
        for option in parts {
            let (key, value) = option.firstIndex(of: "=").map { (option[..<$0], option[option.index(after: $0)...]) }
                ?? (option, "")
            guard key == "allow-dest" || key == "deny-dest" else {
                return .failure(RouteError(route: text, problem: "unknown option '\(key)' (expected allow-dest=, deny-dest=)"))
            }
            guard let pattern = DestinationPattern(parsing: value) else {
                return .failure(RouteError(route: text, problem: "\(key)=\(value): expected a CIDR, an address, a NAME or a .SUFFIX"))
            }
            if key == "allow-dest" { parsed.destinations.allow.append(pattern) } else { parsed.destinations.deny.append(pattern) }
        }
        return .success(parsed)
    }
}

/// Why a `--route` value was refused.
public struct RouteError: Error, Sendable, CustomStringConvertible {
    public var route: String
    public var problem: String
    public var description: String { "--route \(route): \(problem)" }
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
        let chosen = choose(user: user, client: client, port: port, product: product)
        return (chosen.app, chosen.kind)
    }

    /// `select`, with the index in `routes` of the explicit route that matched (nil for automatic
    /// and unrouted requests): what else the route carries applies to the request.
    package func choose(user: String?, client: IPAddress, port: Int, product: String?) -> (app: Int?, kind: RouteKind, route: Int?) {
        for (index, route) in routes.enumerated() {
            let matches: Bool
            switch route.rule {
            case .user(let name): matches = user == name
            case .client(let network): matches = network.contains(client)
            case .port(let listening): matches = listening == port
            case .agent(let name): matches = product == name
            }
            if matches { return (route.app, route.rule.kind, index) }
        }
        if let product, let app = byProduct[product] { return (app, .agentAuto, nil) }
        switch unrouted {
        case .app(let index): return (index, .default, nil)
        case .block: return (nil, .default, nil)
        }
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
