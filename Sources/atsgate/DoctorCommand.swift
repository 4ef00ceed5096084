import ArgumentParser
import Foundation

/// `atsgate doctor`: checks an operator runs where atsgate is deployed, one line per finding.
struct DoctorCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "doctor",
        abstract: "Check a deployment: the lab gateway, or a probe from the lab side.",
        subcommands: [GatewayDoctorCommand.self, ProbeDoctorCommand.self]
    )
}

/// `atsgate doctor gateway`: on the gateway, whether a lab device could go around atsgate.
struct GatewayDoctorCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "gateway",
        abstract: "Check a lab gateway (deploy/gateway): the ruleset, the lab interface, atsgate's listeners.",
        discussion: """
            Run on the gateway, as root (nft needs it). Prints one line per finding: "ok:", "FAIL:" or \
            "info:". Forwarding is reported, not required: the ruleset redirects the lab's traffic to \
            atsgate on the gateway itself, and its forward chain drops every lab packet either way. \
            What the checks prove: the table inet atsgate_gateway is loaded with its redirects and its \
            forward drop for the lab interface, the interface is up with an address, and something \
            listens on the redirect ports (named, when it is atsgate). A redirect rule and a listener \
            are not yet a device's packet reaching atsgate: --probe-from NETNS sends one from a network \
            namespace on the lab side (atsgate doctor probe); on a real lab, run `atsgate doctor probe` \
            on a lab machine, or curl -si -H 'Via: 1.1 atsgate' http://192.0.2.1/ there (a 508 whose \
            Proxy-Status names proxy_loop_detected is atsgate's). --admin adds atsgate's own count of what it has seen from the lab. Exit \
            status: 0 when nothing failed, 1 otherwise, 2 on a usage error.
            """
    )

    @Option(name: .long, help: ArgumentHelp("The settings the ruleset was loaded with, compared with what is loaded.",
                                            valueName: "file"))
    var env = "/etc/atsgate/gateway.env"

    @Option(name: .long, help: ArgumentHelp("atsgate's admin address, for its counts of transparent connections and QUIC attempts.",
                                            valueName: "host:port"))
    var admin: String?

    @Option(name: .customLong("probe-from"), help: ArgumentHelp("""
        A network namespace on the lab side (ip netns) to send a probe from: atsgate doctor probe runs there.
        """, valueName: "netns"))
    var probeFrom: String?

    @Option(name: .customLong("probe-target"), help: ArgumentHelp("""
        Where the probe connects: any address beyond the gateway (default 192.0.2.1:80, TEST-NET-1, where \
        nothing answers unless atsgate does).
        """, valueName: "ip:port"))
    var probeTarget = ProbeDoctorCommand.defaultTarget

    func validate() throws {
        if let admin, HealthProbe.Target(parsing: admin) == nil {
            throw ValidationError("--admin \(admin): expected HOST:PORT, e.g. 127.0.0.1:9090")
        }
        guard HealthProbe.Target(parsing: probeTarget) != nil else {
            throw ValidationError("--probe-target \(probeTarget): expected IP:PORT, e.g. 192.0.2.1:80")
        }
    }

    func run() throws {
        var doctor = GatewayDoctor(envFile: env)
        doctor.checkForwarding()
        doctor.checkRuleset()
        doctor.checkListeners()
        if let probeFrom { doctor.probe(from: probeFrom, target: probeTarget) }
        if let admin { doctor.readCounts(admin: HealthProbe.Target(parsing: admin)!) }
        for finding in doctor.findings { print(finding.line) }
        if doctor.findings.contains(where: { $0.kind == .fail }) { throw ExitCode(1) }
    }
}

/// `atsgate doctor probe`: from the lab side, whether a connection beyond the gateway reaches atsgate.
struct ProbeDoctorCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "probe",
        abstract: "From a lab machine: does a connection beyond the gateway reach atsgate rather than the origin?",
        discussion: """
            Sends one plain HTTP request to IP:PORT that names atsgate in its Via field, so that atsgate \
            answers it itself (508, loop-detected: no origin is contacted, and no app's verdict counts it) \
            and an origin would not. Run it on a lab machine with no proxy setting. One line: "ok:" when \
            atsgate answered, "FAIL:" when the connection was refused (the gateway redirected it and \
            nothing listens), went unanswered (not redirected, dropped), or something else answered. \
            Exit status 0 or 1. It proves that path, TCP to that port, and nothing more.
            """
    )

    static let defaultTarget = "192.0.2.1:80"

    @Argument(help: ArgumentHelp("Where to connect (an address beyond the gateway).", valueName: "ip:port"))
    var target = ProbeDoctorCommand.defaultTarget

    @Option(name: .long, help: ArgumentHelp("Seconds to wait for the answer.", valueName: "seconds"))
    var timeout = 5.0

    func validate() throws {
        guard HealthProbe.Target(parsing: target) != nil else {
            throw ValidationError("\(target): expected IP:PORT, e.g. 192.0.2.1:80")
        }
        guard timeout > 0, timeout.isFinite else { throw ValidationError("--timeout must be positive") }
    }

    func run() throws {
        let finding = GatewayDoctor.probe(HealthProbe.Target(parsing: target)!, timeout: timeout)
        print(finding.line)
        if finding.kind == .fail { throw ExitCode(1) }
    }
}
