// Measures one ATS decision against a large policy: 10,000 exception domains and 1,000 CIDR ranges.
// Not a test: it prints numbers and never fails on them. Run it optimised:
//   swift run -c release DecisionBenchmark [iterations]
import ATSPolicy
import Foundation

let iterations = CommandLine.arguments.dropFirst().first.flatMap(Int.init) ?? 2_000_000

func buildPolicy() -> Policy {
    var domains: [String: PlistValue] = [:]
    for index in 0..<10_000 {
        var entry: [String: PlistValue] = [:]
        if index % 2 == 0 { entry[ATSKey.includesSubdomains] = .bool(true) }
        if index % 3 == 0 { entry[ATSKey.exceptionAllowsInsecureHTTPLoads] = .bool(true) }
        if index % 5 == 0 { entry[ATSKey.exceptionMinimumTLSVersion] = .string("TLSv1.0") }
        domains["svc\(index).tenant\(index % 97).example-cdn.com"] = .dictionary(entry)
    }
    for index in 0..<1_000 {
        let a = 11 + index / 250, b = index % 250
        let key = index % 4 == 0 ? "2001:db8:\(String(index, radix: 16))::/48" : "\(a).\(b).0.0/\(16 + index % 9)"
        domains[key] = .dictionary([ATSKey.exceptionAllowsInsecureHTTPLoads: .bool(true)])
    }
    return Policy(PolicySource(origin: "benchmark", format: nil, root: .bare, dictionary: [
        ATSKey.allowsArbitraryLoads: .bool(true),
        ATSKey.exceptionDomains: .dictionary(domains),
    ]))
}

let engine = DecisionEngine(policy: buildPolicy())
let urls = [
    "http://svc42.tenant42.example-cdn.com/a",            // exact entry
    "https://a.b.c.svc40.tenant40.example-cdn.com/",      // subdomain walk, 4 levels up
    "http://api.unknown-host.example.org/",               // miss: walk to the root, global rules
    "http://12.100.3.4/",                                 // CIDR
    "http://8.8.8.8/",                                    // external IP, no entry
    "https://[2001:db8:2c::1]/",                          // IPv6 CIDR
    "http://printer/",                                    // local exemption
    "http://www.apple.com/",                              // built-in
]
let destinations = urls.map { try! Destination.parse(url: $0) }

@inline(never) func blackHole(_ value: some Any) { withExtendedLifetime(value) {} }

func measure(_ label: String, _ body: (Int) -> Void) {
    body(10_000) // warm up
    let clock = ContinuousClock()
    let elapsed = clock.measure { body(iterations) }
    let nanoseconds = Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9
    let perOp = nanoseconds / Double(iterations)
    print(String(format: "%-44@ %8.1f ns/op  %10.0f ops/s", label as NSString, perOp, 1e9 / perOp))
}

print("policy: 10,000 exception domains + 1,000 CIDR ranges; \(iterations) iterations per row")
for (url, destination) in zip(urls, destinations) {
    measure("decide \(url)") { n in
        for _ in 0..<n { blackHole(engine.decide(destination).action) }
    }
}
measure("decide, mixed (8 destinations round robin)") { n in
    for i in 0..<n { blackHole(engine.decide(destinations[i & 7]).action) }
}
for url in urls {
    measure("parse + classify \(url)") { n in
        for _ in 0..<n { blackHole(try! Destination.parse(url: url).port) }
    }
}
measure("parse URL + classify + decide, mixed") { n in
    for i in 0..<n { blackHole(engine.decide(try! Destination.parse(url: urls[i & 7])).action) }
}
