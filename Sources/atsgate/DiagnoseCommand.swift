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

            With --system, the server is judged instead by Apple's requirements for system connections \
            (MDM, declarative device management, automated enrollment, profile and app installation, \
            software update; ATS-SPEC R18): TLS 1.2 or later, a forward-secrecy suite, certificates as \
            R15/R15a with nothing tolerated, and on TLS 1.2 the extended master secret (RFC 7627) in the \
            ServerHello (reason extended-master-secret). No ATS key changes these.

            Chains are judged against --trust-store (default apple: the snapshot of Apple's trust store \
            atsgate ships, its roots' policy constraints, its CT log list; system: the host's CA bundle; a \
            directory in Apple's layout: another OS release's store), plus --ca-file roots as the user or an \
            administrator installs them. A chain that lacks an intermediate is completed from the caIssuers \
            URL of the certificate that lacks it, as the device does (--aia-fetch off does not). Certificate \
            Transparency (R16) is judged by default with apple and a directory that has a log list, for \
            leaves that chain to the store and were issued after 2018-10-15: SCTs from distinct logs \
            (embedded, TLS extension, stapled OCSP) against Apple's thresholds (2 for a lifetime up to 180 \
            days, 3 above), each verified against the log list (--ct-log-list FILE replaces the store's). \
            --certificate-transparency on with the system store COUNTS THE SCTs, IT DOES NOT VERIFY THEM.

            Each failure names the rule that decided it (R14 version and suite, R15/R15a certificate, \
            R16 CT, R17 pins, R18 system connections; R7-R12 for the app policy's lookup).

            A last section, "Post-Quantum Key Exchange", asks the server whether it negotiates \
            X25519MLKEM768, as iOS 26 and macOS 26 offer it in every TLS 1.3 ClientHello: one more \
            connection sends a ClientHello whose only key share is X25519MLKEM768 (x25519, secp256r1, \
            secp384r1 and secp521r1 listed beside it), reads the server's ServerHello or HelloRetryRequest \
            (on TLS 1.2, its ServerKeyExchange) and hangs up. QUANTUM-SECURE when the server chose a \
            post-quantum group, CLASSICAL when it chose another (recorded traffic could be decrypted once \
            quantum computers exist), UNKNOWN when it could not be asked. ATS does not require it: this \
            section never changes the exit status. JSON lines carry it as the post_quantum field.

            Exit status: 0 when the default ATS configuration (with --system: the system connection \
            test) passes, 1 when it fails, 2 on a usage error (bad URL, unreadable --trust-store, --ca-file, \
            --policy or --ct-log-list).
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

    @OptionGroup var trust: TrustOptions

    @Option(name: .long, help: ArgumentHelp("Seconds to connect, and again to handshake, per test.",
                                            valueName: "seconds"))
    var timeout = 10.0

    @Flag(name: .long, help: "Judge the server by Apple's requirements for system connections (R18) instead of the ATS matrix.")
    var system = false

    @Argument(help: ArgumentHelp("The URL to diagnose (https:// or http://).", valueName: "url"))
    var url: String

    func validate() throws {
        guard timeout > 0 else { throw ValidationError("--timeout must be positive") }
        if system, !options.policy.isEmpty {
            throw ValidationError("--system judges a server by Apple's system connection rules, not an app policy: drop --policy")
        }
    }

    func run() throws {
        let destination: Destination
        do {
            destination = try Destination.parse(url: url)
        } catch {
            throw CommandFailure(message: "invalid URL \(error.description)")
        }
        let (store, transparency) = try trust.load()
        let aia = trust.aiaFetch == .on ? AIAFetcher() : nil
        if system, destination.scheme == .http {
            throw CommandFailure(message: "--system judges TLS servers: give an https:// URL, not \(url)")
        }
        let pins = try DNSOptions.pins(resolve)
        let engine: DecisionEngine? = options.policy.isEmpty
            ? nil : DecisionEngine(policy: try options.loadPolicy(), options: options.engineOptions)
        // A server that resets the connection mid-write must not kill the command (see TLSConnection).
        signal(SIGPIPE, SIG_IGN)

        var diagnosis = Diagnosis(destination: destination, addresses: addresses(for: destination.host, pins: pins),
                                  probe: TLSProbe(store: store, timeout: timeout, transparency: transparency, aia: aia))
        var outcomes: [DiagnoseOutcome]
        if system {
            outcomes = [diagnosis.runSystem()]
        } else {
            outcomes = DiagnoseConfiguration.matrix(host: destination.host.description).map { diagnosis.run($0) }
            if let engine {
                outcomes.append(diagnosis.runAppPolicy(engine.decide(destination, context: context)))
            }
        }
        // Whether the server answers iOS 26's post-quantum offer in kind (no ATS rule asks it yet).
        let postQuantum = destination.scheme == .https
            ? KeyExchangeProbe(timeout: timeout).probe(ProbeTarget(host: destination.host.description,
                                                                   port: destination.port, addresses: diagnosis.addresses))
            : nil
        let report = DiagnoseReport(url: url, destination: destination, outcomes: outcomes,
                                    caFiles: trust.caFile, pinnedAddresses: diagnosis.addresses, system: system,
                                    store: store, storeSummary: TrustOptions.describe(store, transparency: transparency,
                                                                                      aia: aia != nil),
                                    transparency: transparency.map { $0.logList == nil ? "counted" : "verified" },
                                    postQuantum: postQuantum)
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
            // The exception entry decides cleartext (R10); without one, ATS's defaults or
            // NSAllowsArbitraryLoads do (R12).
            if !outcome.passed {
                if case .exception = configuration.dictionary { outcome.rule = "R10" } else { outcome.rule = "R12" }
            }
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
            outcome.rule = decision.rule
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

    /// Apple's system connections (R18): one handshake offering what full ATS allows, judged by R18.
    mutating func runSystem() -> DiagnoseOutcome {
        var outcome = DiagnoseOutcome(section: "Apple system connections (R18)", name: "System Connection",
                                      requirements: SystemConnectionRule.requirements)
        outcome.note = "MDM, declarative device management, automated enrollment, profile and app installation,"
            + " software update (Apple support article 126655)"
        let target = ProbeTarget(host: destination.host.description, port: destination.port, addresses: addresses)
        outcome.record(probe.probeSystem(target))
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
    /// The ATS-SPEC rule that decided a failure (R14-R18, or R7-R12 for the policy lookup).
    var rule: String?
    /// The handshake, when the test made one.
    var probe: ProbeResult?
    /// Context for a person: the app policy's decision, or why no network was used.
    var note: String?

    mutating func record(_ result: ProbeResult) {
        probe = result
        passed = result.passed
        reason = result.failureReason
        message = result.failureMessage
        rule = result.rule?.rawValue
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
