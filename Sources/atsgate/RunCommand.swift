import ArgumentParser
import ATSPolicy
import Dispatch
import Foundation
import ProxyCore

/// `atsgate run`: the proxy daemon. With no flags it listens on 127.0.0.1:3128 with full ATS.
struct RunCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run the ATS-enforcing HTTP proxy.",
        discussion: """
            Every decision is logged to standard output, one record per line. Signals: SIGTERM and SIGINT \
            stop the daemon (exit 0). It exits non-zero with a one-line cause on stderr when it cannot \
            start (bad flag, port in use, unreadable policy).
            """
    )

    @Option(name: .long, help: ArgumentHelp("Config file: one 'flag = value' per line; flags override it.",
                                            valueName: "file"))
    var config: String?

    @OptionGroup var options: PolicyOptions

    @Option(name: .long, help: ArgumentHelp("Address to listen on (repeatable).", valueName: "host:port"))
    var listen: [String] = []

    @Option(name: .long, help: "enforce (block) or report (log what would be blocked, let it through).")
    var mode: ProxyMode = .enforce

    @Option(name: .long, help: ArgumentHelp("Pin a name to an address, like curl's --resolve (repeatable).",
                                            valueName: "name=ip"))
    var resolve: [String] = []

    @Option(name: .long, help: ArgumentHelp("Port CONNECT may reach (repeatable; default 443).", valueName: "port"))
    var connectPort: [Int] = []

    @Option(name: .long, help: ArgumentHelp("Network clients may connect from (repeatable; default loopback).",
                                            valueName: "cidr"))
    var allowClient: [IPNetwork] = []

    enum ContextChoice: String, ExpressibleByArgument { case auto, app, media, web }

    @Option(name: .long, help: """
        Load context: auto (from each request's User-Agent: AppleCoreMedia is media, a WebKit UA \
        without Safari is web, else app), or app, media or web for every request.
        """)
    var context: ContextChoice = .auto

    @Option(name: .long, help: "Decision log format: json (one object per line) or text.")
    var logFormat: LogFormat = .json

    @Option(name: .long, help: "Most connections open at once; accepting pauses at the cap.")
    var maxConnections = 10_000

    @Option(name: .long, help: ArgumentHelp("Seconds to receive a complete request head.", valueName: "seconds"))
    var headTimeout = 10.0

    @Option(name: .long, help: ArgumentHelp("Seconds to connect to the origin.", valueName: "seconds"))
    var connectTimeout = 10.0

    @Option(name: .long, help: ArgumentHelp("Seconds a tunnel may stay silent.", valueName: "seconds"))
    var idleTimeout = 300.0

    func validate() throws {
        if options.cleartext == .upgrade {
            throw ValidationError("--cleartext upgrade is not available in the daemon yet (it needs upstream TLS); use block or redirect")
        }
        for port in connectPort where !(1...65535).contains(port) {
            throw ValidationError("--connect-port \(port) is not a port")
        }
        for timeout in [headTimeout, connectTimeout, idleTimeout] where !(timeout > 0) {
            throw ValidationError("timeouts must be positive")
        }
        guard maxConnections > 0 else { throw ValidationError("--max-connections must be positive") }
    }

    func run() throws {
        var configuration = ProxyConfiguration()
        configuration.engine = DecisionEngine(policy: try options.loadPolicy(), options: options.engineOptions)
        configuration.policyLabel = options.policy ?? "embedded"
        if !listen.isEmpty {
            configuration.listen = try listen.map { text in
                guard let address = SocketAddress(parsing: text) else {
                    throw CommandFailure(message: "--listen \(text): expected IP:PORT, e.g. 127.0.0.1:3128 or [::1]:3128")
                }
                return address
            }
        }
        configuration.mode = mode
        configuration.resolve = try Self.pins(resolve)
        if !connectPort.isEmpty { configuration.connectPorts = Set(connectPort) }
        if !allowClient.isEmpty { configuration.allowClients = allowClient }
        configuration.logFormat = logFormat
        configuration.context = context == .auto ? nil : LoadContext(rawValue: context.rawValue)
        configuration.maximumConnections = maxConnections
        configuration.headTimeout = headTimeout
        configuration.connectTimeout = connectTimeout
        configuration.idleTimeout = idleTimeout

        let server: ProxyServer
        do {
            server = try ProxyServer(configuration: configuration)
        } catch {
            throw CommandFailure(message: "cannot listen: \(error.description)", exitCode: 1)
        }
        server.start()
        let addresses = server.boundAddresses.map(\.description).joined(separator: ", ")
        FileHandle.standardError.write(Data(("atsgate: listening on \(addresses) (policy \(configuration.policyLabel), "
            + "profile \(options.profile.rawValue), mode \(mode.rawValue))\n").utf8))
        Self.stopOnSignals(server)
        dispatchMain()
    }

    /// `NAME=IP` pairs; a name may be pinned to several addresses.
    static func pins(_ entries: [String]) throws -> [String: [IPAddress]] {
        var pins: [String: [IPAddress]] = [:]
        for entry in entries {
            let parts = entry.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, case .name(let name)? = try? Host.parse(parts[0]),
                  let address = IPAddress.parseStrict(parts[1].hasPrefix("[") ? parts[1].dropFirst().dropLast() : parts[1])
            else {
                throw CommandFailure(message: "--resolve \(entry): expected NAME=IP, e.g. api.example.com=127.0.0.1")
            }
            pins[name, default: []].append(address)
        }
        return pins
    }

    /// SIGTERM and SIGINT: flush the decision log and exit 0.
    private static func stopOnSignals(_ server: ProxyServer) {
        for signalNumber in [SIGTERM, SIGINT] {
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .main)
            source.setEventHandler {
                server.flushLog()
                Foundation.exit(0)
            }
            source.resume()
            signalSources.append(source)
        }
    }

    nonisolated(unsafe) private static var signalSources: [DispatchSourceSignal] = []
}

extension ProxyMode: ExpressibleByArgument {}
extension LogFormat: ExpressibleByArgument {}
