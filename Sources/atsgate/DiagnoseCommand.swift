import ArgumentParser
import ATSPolicy
import Foundation
import TLSClient

/// `atsgate diagnose`: the Linux counterpart of `nscurl --ats-diagnostics`.
struct DiagnoseCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "diagnose",
        abstract: "Connect to a server under nscurl's matrix of ATS configurations and report PASS/FAIL for each.",
        discussion: """
            Tests, in nscurl --ats-diagnostics' order: the default ATS configuration; NSAllowsArbitraryLoads; \
            an NSExceptionMinimumTLSVersion exception for each TLS version; NSExceptionRequiresForwardSecrecy=NO; \
            that plus NSExceptionAllowsInsecureHTTPLoads=YES; each TLS version with forward secrecy off; each \
            TLS version with forward secrecy off and insecure HTTP allowed. With --policy, a last test "App \
            policy" applies the app's own dictionary (exceptions, local exemption, pins) to the URL. Each \
            test is one TLS handshake that offers exactly what the configuration allows; it fails with a \
            reason code (tls-version, cipher-suite, certificate-*, or upstream-*/tls-handshake when the \
            server cannot be reached). Certificate findings are tolerated (reported, not failed) where \
            insecure HTTP is allowed (R15); the matrix does not apply the local exemption (R11), so \
            localhost is held to the rules too.

            An http:// URL is judged without network access: cleartext passes exactly where the \
            configuration allows insecure HTTP (test the https:// URL to learn about the server's TLS). \
            Under --policy with --cleartext upgrade or redirect, the App policy test follows the load to \
            https (port 443 for port 80) and probes it there.

            Exit status: 0 when the default ATS configuration passes, 1 when it fails, 2 on a usage error \
            (bad URL, unreadable --ca-file or --policy).
            """
    )

    enum Format: String, ExpressibleByArgument { case text, json }

    @OptionGroup var options: PolicyOptions

    @Option(name: .long, help: "The API the app policy's load comes through: app, media or web.")
    var context: LoadContext = .app

    @Option(name: .long, help: "text (like nscurl) or json (one object per test).")
    var format: Format = .text

    @Option(name: .long, help: ArgumentHelp("Connect to this address for a name, like curl's --resolve (repeatable).",
                                            valueName: "name=ip"))
    var resolve: [String] = []

    @Option(name: .long, help: ArgumentHelp("Extra trusted root certificates, PEM (repeatable).", valueName: "file"))
    var caFile: [String] = []

    @Option(name: .long, help: ArgumentHelp("Seconds to connect, and again to handshake, per test.",
                                            valueName: "seconds"))
    var timeout = 10.0

    @Argument(help: ArgumentHelp("The URL to diagnose (https:// or http://).", valueName: "url"))
    var url: String

    func validate() throws {
        guard timeout > 0 else { throw ValidationError("--timeout must be positive") }
    }

    func run() throws {
        let destination: Destination
        do {
            destination = try Destination.parse(url: url)
        } catch {
            throw CommandFailure(message: "invalid URL \(error.description)")
        }
        let store: TrustStore
        do {
            store = try TrustStore(caFiles: caFile)
        } catch {
            throw CommandFailure(message: error.description)
        }
        let pins = try RunCommand.pins(resolve)
        let engine: DecisionEngine? = options.policy.isEmpty
            ? nil : DecisionEngine(policy: try options.loadPolicy(), options: options.engineOptions)
        // A server that resets the connection mid-write must not kill the command (see TLSConnection).
        signal(SIGPIPE, SIG_IGN)

        var diagnosis = Diagnosis(destination: destination, addresses: addresses(for: destination.host, pins: pins),
                                  probe: TLSProbe(store: store, timeout: timeout))
        var outcomes = DiagnoseConfiguration.matrix(host: destination.host.description).map { diagnosis.run($0) }
        if let engine {
            outcomes.append(diagnosis.runAppPolicy(engine.decide(destination, context: context)))
        }
        let report = DiagnoseReport(url: url, destination: destination, outcomes: outcomes,
                                    caFiles: caFile, pinnedAddresses: diagnosis.addresses)
        let output = format == .json ? report.jsonLines : report.text
        FileHandle.standardOutput.write(Data(output.utf8))
        if !outcomes[0].passed { throw ExitCode(1) }
    }

    private func addresses(for host: ATSPolicy.Host, pins: [String: [IPAddress]]) -> [String] {
        switch host {
        case .address(let address): [address.description]
        case .name(let name): pins[name]?.map(\.description) ?? []
        }
    }
}

/// Runs the tests of one diagnosis, reusing a handshake when two configurations require the same.
struct Diagnosis {
    let destination: Destination
    /// The --resolve addresses (or the IP literal); empty means the name is resolved.
    let addresses: [String]
    let probe: TLSProbe
    private var probes: [(Requirements, PinnedDomain?, Int, ProbeResult)] = []

    init(destination: Destination, addresses: [String], probe: TLSProbe) {
        self.destination = destination
        self.addresses = addresses
        self.probe = probe
    }

    mutating func run(_ configuration: DiagnoseConfiguration) -> DiagnoseOutcome {
        var outcome = DiagnoseOutcome(section: configuration.section, name: configuration.name,
                                      requirements: configuration.requirements,
                                      dictionaryText: configuration.dictionaryText,
                                      dictionaryJSON: configuration.dictionaryJSON)
        if destination.scheme == .http {
            outcome.judgeCleartext(host: destination.host.description)
        } else {
            outcome.record(probe(configuration.requirements, pin: nil, port: destination.port))
        }
        return outcome
    }

    /// The app's own policy: its decision, then for a load that goes out over TLS, the handshake under the
    /// decision's requirements and pin.
    mutating func runAppPolicy(_ decision: Decision) -> DiagnoseOutcome {
        var outcome = DiagnoseOutcome(section: "App policy (\(decision.profile.rawValue), \(decision.context.rawValue))",
                                      name: "App policy", requirements: decision.requirements)
        outcome.note = decision.message
        switch (decision.action, destination.scheme) {
        case (.block, _):
            outcome.passed = false
            outcome.reason = decision.reason?.rawValue
            outcome.message = decision.message
        case (.allow, .http):
            outcome.passed = true
        case (.upgrade, .http):
            // Upgraded or redirected, the load continues as https to the default port.
            let port = destination.port == Scheme.http.defaultPort ? Scheme.https.defaultPort : destination.port
            outcome.record(probe(decision.requirements, pin: decision.pin, port: port))
        case (_, .https):
            outcome.record(probe(decision.requirements, pin: decision.pin, port: destination.port))
        }
        return outcome
    }

    private mutating func probe(_ requirements: Requirements, pin: PinnedDomain?, port: Int) -> ProbeResult {
        if let done = probes.first(where: { $0.0 == requirements && $0.1 == pin && $0.2 == port }) { return done.3 }
        let target = ProbeTarget(host: destination.host.description, port: port, addresses: addresses)
        let result = probe.probe(target, requirements: requirements, pin: pin)
        probes.append((requirements, pin, port, result))
        return result
    }
}

/// One test's result.
struct DiagnoseOutcome {
    var section: String
    var name: String
    var requirements: Requirements
    /// The ATS dictionary the test stands for (nil for the app policy).
    var dictionaryText: String?
    var dictionaryJSON: JSONValue?
    var passed = false
    var reason: String?
    var message: String?
    /// The handshake, when the test made one.
    var probe: ProbeResult?
    /// Context for a person: the app policy's decision, or why no network was used.
    var note: String?

    mutating func record(_ result: ProbeResult) {
        probe = result
        passed = result.passed
        reason = result.failureReason
        message = result.failureMessage
    }

    /// An http:// URL: cleartext passes exactly where the configuration allows it, without network.
    mutating func judgeCleartext(host: String) {
        passed = requirements.cleartextAllowed
        note = "http:// URL: judged without network access"
        if !passed {
            reason = BlockReason.cleartextHTTP.rawValue
            message = "cleartext HTTP to \(host) is not allowed under this configuration"
                + " (NSExceptionAllowsInsecureHTTPLoads=YES for \(host) would allow it)"
        }
    }
}
