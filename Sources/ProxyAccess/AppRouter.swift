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

/// A rule, the index (in `ProxyConfiguration.apps`) of the policy it selects, and what else the route
/// carries: its own destination rules and the way out it names (`parent=URL` or `direct`). A route
/// may name a way out without a policy: the first matching route with a policy chooses the policy
/// (and its destination rules apply), the first matching route with a way out chooses the way out.
public struct Route: Sendable {
    public var rule: RouteRule
    public var app: Int?
    /// nil: the daemon's `--parent` list (and `--parent-bypass`) decide.
    public var egress: Egress?
    /// `allow-dest=` and `deny-dest=` options: added to the global `--allow-dest`/`--deny-dest` for
    /// the requests this route selects.
    public var destinations: DestinationRules
    /// The route as given (`client:198.18.0.0/15=com.example.lab`), for messages.
    public var name: String

    public init(rule: RouteRule, app: Int?, egress: Egress? = nil, destinations: DestinationRules = DestinationRules(),
                name: String = "") {
        self.rule = rule
        self.app = app
        self.egress = egress
        self.destinations = destinations
        self.name = name
    }

    /// One `--route` value read: `RULE=ID`, then options after commas
    /// (`client:198.18.0.0/15=com.example.lab,allow-dest=10.9.0.0/16,deny-dest=.corp.example,direct`),
    /// or a way out alone (`RULE=direct`, `RULE=parent=URL`).
    public struct Text: Sendable {
        public var rule: RouteRule
        /// nil: the route names a way out only.
        public var id: String?
        public var destinations = DestinationRules()
        public var egress: Egress?
        /// `RULE=ID` without the options.
        public var name: String
    }

    /// Parses a `--route` value; the error says what is wrong with it. `parent=URL` takes the rest of
    /// the value (a password may hold commas), so it comes last.
    public static func parse(_ text: String) -> Result<Text, RouteError> {
        let expected = "expected user:NAME, client:CIDR, port:N or agent:NAME, then =ID, =ID,parent=URL, "
            + "=ID,direct, =parent=URL or =direct"
        guard let equals = text.firstIndex(of: "="), let rule = RouteRule(parsing: text[..<equals]) else {
            return .failure(RouteError(route: text, problem: expected))
        }
        let rest = text[text.index(after: equals)...]
        func parent(_ url: Substring) -> Result<Egress, RouteError> {
            do {
                return .success(.parent(try ParentProxy(url: String(url))))
            } catch {
                return .failure(RouteError(route: text, problem: "parent=\(url): \(error.description)"))
            }
        }
        // A way out alone: the policy is chosen as if the route were not there.
        if rest.hasPrefix("parent=") {
            return parent(rest.dropFirst("parent=".count)).map { Text(rule: rule, id: nil, egress: $0, name: text) }
        }
        if rest == "direct" { return .success(Text(rule: rule, id: nil, egress: .direct, name: text)) }
        var options = rest[...]
        let id = options.prefix { $0 != "," }
        guard !id.isEmpty else { return .failure(RouteError(route: text, problem: expected)) }
        var parsed = Text(rule: rule, id: String(id), name: String(text[..<id.endIndex]))
        options = options[id.endIndex...]
        while options.first == "," {
            options = options.dropFirst()
            if options.hasPrefix("parent=") {
                switch parent(options.dropFirst("parent=".count)) {
                case .success(let egress): parsed.egress = egress
                case .failure(let error): return .failure(error)
                }
                break
            }
            let option = options.prefix { $0 != "," }
            options = options[option.endIndex...]
            if option == "direct" {
                parsed.egress = .direct
                continue
            }
            let (key, value) = option.firstIndex(of: "=").map { (option[..<$0], option[option.index(after: $0)...]) }
                ?? (option, "")
            guard key == "allow-dest" || key == "deny-dest" else {
                return .failure(RouteError(route: text, problem: "unknown option '\(key)' (expected allow-dest=, deny-dest=, direct or parent=)"))
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

    /// `select`, with the index in `routes` of the explicit route that chose the policy (nil for
    /// automatic and unrouted requests): what else that route carries applies to the request.
    package func choose(user: String?, client: IPAddress, port: Int, product: String?) -> (app: Int?, kind: RouteKind, route: Int?) {
        for (index, route) in routes.enumerated() {
            if let app = route.app, route.rule.matches(user: user, client: client, port: port, product: product) {
                return (app, route.rule.kind, index)
            }
        }
        if let product, let app = byProduct[product] { return (app, .agentAuto, nil) }
        switch unrouted {
        case .app(let index): return (index, .default, nil)
        case .block: return (nil, .default, nil)
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
