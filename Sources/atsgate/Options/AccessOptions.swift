import ArgumentParser
import ATSPolicy
import Foundation
import ProxyAccess
import ProxyAnswers
import ProxyCore

/// How the policy applies and to whom: enforce or report, the load context, which policy a request
/// gets (routes, the unrouted rest), where requests may go, who may use the proxy and the admin
/// window, and how the proxy names itself.
struct AccessOptions: ParsableArguments {
    @Option(name: .long, help: "enforce (block) or report (log what would be blocked, let it through).")
    var mode: ProxyMode = .enforce

    enum ContextChoice: String, ExpressibleByArgument { case auto, app, media, web }

    @Option(name: .long, help: """
        Load context: auto (from each request's User-Agent: AppleCoreMedia is media, a WebKit UA \
        without Safari is web, else app), or app, media or web for every request.
        """)
    var context: ContextChoice = .auto

    @Option(name: .long, help: ArgumentHelp("""
        Which policy a request gets (repeatable, tried in order): user:NAME (the proxy user), client:CIDR, \
        port:N (the listening port reached) or agent:NAME (the User-Agent's product name), =ID of a policy; \
        then options after commas: allow-dest=PATTERN, deny-dest=PATTERN (added to --allow-dest and \
        --deny-dest for this route's requests), and last ,parent=URL or ,direct (the route's way out: its \
        own parent proxy, or straight to the origin; =parent=URL or =direct alone names a way out without \
        a policy). After the routes, a User-Agent whose product is a bundle's CFBundleExecutable or \
        CFBundleName gets that bundle's policy.
        """, valueName: "rule=id[,option][,parent=url|,direct]"))
    var route: [String] = []

    @Option(name: .long, help: ArgumentHelp("""
        Destination clients off the proxy host may reach although it is denied by default (repeatable): \
        a CIDR or address, a NAME, or a .SUFFIX (the name and every name under it). By default such \
        clients cannot reach loopback, 0.0.0.0/8, ::, link-local (cloud metadata), multicast, broadcast \
        and the proxy's own addresses; private ranges stay reachable.
        """, valueName: "cidr|name|.suffix"))
    var allowDest: [String] = []

    @Option(name: .long, help: ArgumentHelp("""
        Destination no client may reach (repeatable; CIDR or address, NAME, .SUFFIX): 403 \
        destination-not-allowed, also in report mode. Checked on every address the proxy would connect \
        to, after resolution and --resolve. An explicit deny wins over --allow-dest.
        """, valueName: "cidr|name|.suffix"))
    var denyDest: [String] = []

    @Option(name: .long, help: ArgumentHelp("""
        The device's own traffic (push notifications, iCloud, software update, captive-portal probes: the \
        system-destinations table and the captive probe's User-Agent): record (app system, reason \
        system-traffic, allowed, never counted against an app) or judge (with the app's policy, as \
        everything else). Certificate fetches (system-fetch) are the device's either way.
        """, valueName: "record|judge"))
    var systemTraffic: SystemTrafficRules.Mode = .record

    @Option(name: .long, help: ArgumentHelp("""
        A destination that is the device's own traffic, added to Apple's published hosts (repeatable): a \
        NAME, a .SUFFIX or a CIDR, then :PORT to match one port only ([IPv6]:PORT).
        """, valueName: "name|.suffix|cidr[:port]"))
    var systemDest: [String] = []

    @Option(name: .long, help: ArgumentHelp("""
        A name for a lab device (repeatable, first match wins): its client address or range, or the proxy \
        user it logs in as. Every record gets the name as 'device' (null when none matches), the per-app \
        metrics a device label, the live page a device filter, the report a devices column.
        """, valueName: "name=cidr|user:name"))
    var device: [String] = []

    @Option(name: .long, help: ArgumentHelp("""
        Policy ID for requests no route chose, or block (403, reason no-policy). Default: the first policy.
        """, valueName: "id|block"))
    var unrouted: String?

    @Option(name: .long, help: ArgumentHelp("""
        htpasswd file (bcrypt or SHA-512 crypt) of proxy users: requests without valid \
        Proxy-Authorization: Basic get 407. Re-read on SIGHUP.
        """, valueName: "file"))
    var authFile: String?

    @Option(name: .long, help: ArgumentHelp("""
        htpasswd file (the --auth-file format) of the admin window's users: /metrics, the live page and \
        /events answer 401 without valid Authorization: Basic; /healthz and /readyz stay open. Re-read on \
        SIGHUP.
        """, valueName: "file"))
    var adminAuth: String?

    @Option(name: .long, help: ArgumentHelp("""
        PAC file served at /proxy.pac and /wpad.dat (default: one sending everything to the address the \
        client used).
        """, valueName: "file"))
    var pac: String?

    @Option(name: .long, help: ArgumentHelp("""
        The proxy's name in the Proxy-Status field (RFC 9209) of every answer it makes itself (default \
        atsgate): an sf-token, or any printable ASCII text (then sent as an sf-string).
        """, valueName: "name"))
    var proxyName: String?

    func validate() throws {
        // Checked here, so that a config file's bad value is reported against the file and its line.
        _ = try proxyStatusName()
        _ = try deviceTable()
    }

    /// Needs the policies in `configuration` already, because routes and `--unrouted` name them by ID.
    func apply(to configuration: inout ProxyConfiguration) throws {
        let ids = configuration.apps.isEmpty ? ["embedded"] : configuration.apps.map(\.id)
        func index(of id: String, for flag: String) throws -> Int {
            guard let index = ids.firstIndex(of: id) else {
                throw CommandFailure(message: "\(flag): no policy has the ID '\(id)' (loaded: \(ids.joined(separator: ", ")))")
            }
            return index
        }
        configuration.routes = try route.map { text in
            let parsed: Route.Text
            switch Route.parse(text) {
            case .success(let value): parsed = value
            case .failure(let error): throw CommandFailure(message: error.description)
            }
            return Route(rule: parsed.rule, app: try parsed.id.map { try index(of: $0, for: "--route \(text)") },
                         egress: parsed.egress, destinations: parsed.destinations, name: parsed.name)
        }
        configuration.destinations = DestinationRules(allow: try Self.patterns(allowDest, flag: "--allow-dest"),
                                                      deny: try Self.patterns(denyDest, flag: "--deny-dest"))
        if let unrouted {
            configuration.unrouted = unrouted == "block" ? .block : .app(try index(of: unrouted, for: "--unrouted"))
        }
        if let authFile {
            do {
                configuration.passwords = try PasswordFile.load(path: authFile)
            } catch {
                throw CommandFailure(message: "--auth-file \(error.description)")
            }
        }
        if let adminAuth {
            do {
                configuration.adminPasswords = try PasswordFile.load(path: adminAuth)
            } catch {
                throw CommandFailure(message: "--admin-auth \(error.description)")
            }
        }
        if let pac {
            guard let data = FileManager.default.contents(atPath: pac), let text = String(data: data, encoding: .utf8) else {
                throw CommandFailure(message: "--pac \(pac): cannot read it as UTF-8 text")
            }
            configuration.pacFile = text
        }
        configuration.mode = mode
        configuration.context = context == .auto ? nil : LoadContext(rawValue: context.rawValue)
        configuration.proxyName = try proxyStatusName()
        configuration.devices = try deviceTable()
        configuration.systemTraffic = try systemTrafficRules()
    }

    /// `--system-traffic` and `--system-dest`: Apple's table and the operator's entries.
    func systemTrafficRules() throws -> SystemTrafficRules {
        var table = SystemDestinations.apple
        for text in systemDest {
            do {
                table.add(try SystemDestinations.parseOperatorEntry(text))
            } catch {
                throw ValidationError("--system-dest \(error.description)")
            }
        }
        return SystemTrafficRules(mode: systemTraffic, destinations: table)
    }

    /// `--allow-dest` / `--deny-dest` values.
    static func patterns(_ values: [String], flag: String) throws -> [DestinationPattern] {
        try values.map { text in
            guard let pattern = DestinationPattern(parsing: Substring(text)) else {
                throw CommandFailure(message: "\(flag) \(text): expected a CIDR (10.0.0.0/8), an address, a NAME or a .SUFFIX")
            }
            return pattern
        }
    }

    /// `--device` values, in order.
    func deviceTable() throws -> DeviceTable {
        DeviceTable(try device.map { text in
            switch Device.parse(text) {
            case .success(let device): return device
            case .failure(let error): throw ValidationError(error.description)
            }
        })
    }

    /// `--proxy-name`, checked: a Proxy-Status member must parse.
    func proxyStatusName() throws -> ProxyName {
        guard let proxyName else { return .atsgate }
        do {
            return try ProxyName(proxyName)
        } catch {
            throw ValidationError(error.description)
        }
    }
}

extension ProxyMode: ExpressibleByArgument {}
extension SystemTrafficRules.Mode: ExpressibleByArgument {}
