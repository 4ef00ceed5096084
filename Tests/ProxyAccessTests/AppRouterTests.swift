import ATSPolicy
import Testing
@testable import ProxyAccess

/// Which policy a request gets (AppRouter) and how the auth file is read (PasswordFile), without sockets.
@Suite struct AppRouterTests {
    static func app(_ id: String, executable: String? = nil, name: String? = nil) -> AppPolicy {
        AppPolicy(id: id, engine: DecisionEngine(policy: .empty), label: id, executable: executable, name: name)
    }

    static let apps = [app("lab", executable: "Lab", name: "Lab App"), app("share", executable: "Share"),
                       app("other", executable: "Other", name: "Lab App")]

    @Test(arguments: [
        ("Lab/1.0 CFNetwork/1490.0.4 Darwin/23.2.0", "Lab"),
        ("Lab%20App/1.0 CFNetwork/1490 Darwin/23", "Lab App"),
        ("Caf%C3%A9/2 CFNetwork/1 Darwin/1", "Café"),
        ("Bad%2/1", "Bad%2"),
        ("NoVersion", "NoVersion"),
    ])
    func theProductIsTheFirstTokenPercentDecoded(agent: String, product: String) {
        #expect(AppRouter.product(ofUserAgent: agent) == product)
    }

    @Test func noUserAgentOrAnEmptyOneHasNoProduct() {
        #expect(AppRouter.product(ofUserAgent: nil) == nil)
        #expect(AppRouter.product(ofUserAgent: "/1.0") == nil)
    }

    @Test func explicitRulesInOrderThenTheAgentThenTheDefault() throws {
        let rules = [
            Route(rule: try #require(RouteRule(parsing: "user:olly")), app: 2),
            Route(rule: try #require(RouteRule(parsing: "client:10.0.0.0/8")), app: 2),
            Route(rule: try #require(RouteRule(parsing: "port:3129")), app: 1),
            Route(rule: try #require(RouteRule(parsing: "agent:Tester")), app: 1),
        ]
        let router = AppRouter(apps: Self.apps, routes: rules, unrouted: .app(0))
        let loopback = IPAddress.v4(0x7F00_0001)
        func pick(_ user: String?, _ client: IPAddress = loopback, _ port: Int = 3128, product: String?) -> String {
            let (app, kind) = router.select(user: user, client: client, port: port, product: product)
            return "\(app.map { Self.apps[$0].id } ?? "none")/\(kind.rawValue)"
        }
        #expect(pick("olly", .v4(0x0A00_0001), 3129, product: "Lab") == "other/user")
        #expect(pick(nil, .v4(0x0A00_0001), 3129, product: "Lab") == "other/client")
        #expect(pick(nil, loopback, 3129, product: "Lab") == "share/port")
        #expect(pick(nil, product: "Tester") == "share/agent")
        #expect(pick(nil, product: "Share") == "share/agent-auto")
        #expect(pick(nil, product: "Lab App") == "lab/agent-auto", "a shared name goes to the first bundle that has it")
        #expect(pick(nil, product: "Other") == "other/agent-auto")
        #expect(pick(nil, product: "curl") == "lab/default")
        let closed = AppRouter(apps: Self.apps, routes: [], unrouted: .block)
        #expect(closed.select(user: nil, client: loopback, port: 1, product: "curl").app == nil)
    }

    @Test(arguments: ["planet:mars", "port:0", "port:70000", "client:300.1.1.1", "user:", "agent"])
    func malformedRulesAreRefused(text: String) {
        #expect(RouteRule(parsing: text[...]) == nil)
    }

    @Test func theAuthFileAcceptsOnlySlowSaltedHashesAndSaysWhichLine() throws {
        let sha512 = try #require(PasswordFile.crypt("s3cret", setting: "$6$saltsalt$"))
        let file = try PasswordFile.parse("# users\n\nann:\(sha512)\n", path: "users")
        #expect(file.users == ["ann"])
        #expect(file.verify(user: "ann", password: "s3cret"))
        #expect(!file.verify(user: "ann", password: "s3cret "))
        #expect(!file.verify(user: "bob", password: "s3cret"))
        let bcrypt = try #require(PasswordFile.crypt("pw", setting: "$2b$05$abcdefghijklmnopqrstuu"))
        #expect(try PasswordFile.parse("b:\(bcrypt)", path: "f").verify(user: "b", password: "pw"))
        for (line, problem) in [("x:plain", "plain-text"), ("x:$apr1$a$b", "MD5"), ("x:{SHA}abc=", "SHA-1"),
                                ("x:$1$a$b", "MD5"), ("x:$2a$05$abc", "ambiguous"), ("nocolon", "expected 'user:hash'"),
                                ("x:$2y$05$short", "malformed bcrypt")] {
            #expect(throws: PasswordFileError.self) { try PasswordFile.parse("ann:\(sha512)\n\(line)\n", path: "f") }
            do {
                _ = try PasswordFile.parse("ann:\(sha512)\n\(line)\n", path: "f")
            } catch {
                #expect(error.description.hasPrefix("f:2: ") && error.description.contains(problem), "\(error.description)")
            }
        }
    }

    @Test func basicCredentialsAreParsedStrictly() {
        #expect(ProxyAuthenticator.basicCredentials("Basic YW5uOnMzY3JldA==")?.user == "ann")
        #expect(ProxyAuthenticator.basicCredentials("basic YW5uOnM6Mw==")?.password == "s:3")
        #expect(ProxyAuthenticator.basicCredentials("Bearer abc") == nil)
        #expect(ProxyAuthenticator.basicCredentials("Basic !!!") == nil)
        #expect(ProxyAuthenticator.basicCredentials("Basic bm9jb2xvbg==") == nil, "no colon")
        #expect(ProxyAuthenticator.basicToken("BASIC  YW5u ") == Array("YW5u".utf8))
        #expect(ProxyAuthenticator.basicToken("Basicx YW5u") == nil)
        let authenticator = ProxyAuthenticator(file: PasswordFile(path: "f", hashes: [:]))
        #expect(authenticator.knownUser(Array("YW5u".utf8)) == nil)
        authenticator.remember(Array("YW5u".utf8), user: "ann")
        #expect(authenticator.knownUser(Array("YW5u".utf8)) == "ann")
        #expect(authenticator.knownUser(Array("YW5v".utf8)) == nil)
    }
}
