import ATSPolicy
import Testing
@testable import ProxyAccess

/// One `--route` grammar for everything a route carries: `RULE=ID`, then `allow-dest=`/`deny-dest=`
/// options, then the way out (`direct`, or `parent=URL`, which takes the rest of the value: a password
/// may hold commas); or a way out alone.
@Suite struct RouteParsingTests {
    private func parsed(_ text: String) throws -> Route.Text {
        try Route.parse(text).get()
    }

    @Test func anIDWithDestinationRulesAndAParentLast() throws {
        let route = try parsed("client:198.18.0.0/15=com.example.lab,allow-dest=10.9.0.0/16,deny-dest=.corp.example,"
                               + "parent=http://lab:a%2Cb,c@proxy.corp:3128")
        #expect(route.id == "com.example.lab")
        #expect(route.name == "client:198.18.0.0/15=com.example.lab")
        #expect(route.destinations.allow.count == 1 && route.destinations.deny.count == 1)
        guard case .parent(let parent)? = route.egress else { Issue.record("no parent: \(route)"); return }
        #expect(parent.description == "proxy.corp:3128")
        #expect(parent.user == "lab", "the comma in the password stays in the URL")
    }

    @Test func aWayOutAloneChoosesNoPolicy() throws {
        let direct = try parsed("agent:DirectApp=direct")
        #expect(direct.id == nil && direct.egress == .direct)
        let parent = try parsed("user:ann=parent=http://127.0.0.1:3128")
        #expect(parent.id == nil)
        if case .parent(let proxy)? = parent.egress { #expect(proxy.port == 3128) } else { Issue.record("\(parent)") }
        let both = try parsed("port:3129=com.example.shop,direct")
        #expect(both.id == "com.example.shop" && both.egress == .direct)
    }

    @Test(arguments: [
        ("client:10.0.0.0/8=app,nearby=1", "unknown option 'nearby'"),
        ("client:10.0.0.0/8=app,allow-dest=not a pattern", "allow-dest=not a pattern"),
        ("client:10.0.0.0/8=app,parent=socks5://p:1080", "parent=socks5://p:1080"),
        ("client:10.0.0.0/8=", "expected"),
        ("planet:mars=app", "expected"),
    ])
    func badRoutesSayWhatIsWrong(text: String, words: String) {
        let message: String
        switch Route.parse(text) {
        case .success(let route): Issue.record("parsed: \(route)"); return
        case .failure(let error): message = error.description
        }
        #expect(message.hasPrefix("--route \(text): "), "\(message)")
        #expect(message.contains(words), "\(message)")
    }
}
