import Admin
import DecisionLog
import Dispatch
import Foundation
import ProxyCore

/// The daemon, from a finished configuration: the proxy's listeners and event loops, the decision
/// log, the admin window, and the service lifecycle (signals, systemd). `atsgate run` builds the
/// configuration from its flags and config file; a test can build one itself and start the daemon
/// without the argument parser.
struct Daemon {
    var configuration: ProxyConfiguration
    /// Sockets a supervisor bound (systemd's socket activation); they replace the configured listeners.
    var inherited: ServiceManager.InheritedListeners
    /// Where decision records go; nil: where the configuration's log settings say (a file, journald
    /// or standard output).
    var sink: LogSink?
    /// Hears of every decision record, beside the admin window's live feed; nil: nobody else.
    var observer: (any DecisionObserver)?
    /// Seconds open connections get to finish after SIGTERM.
    var gracePeriod = 10.0
    /// The process this one took over from (an upgrade): its run, PID and version, which this run's
    /// `run-start` names so that the report counts the old run as continued (RunLedger.swift).
    var predecessor: RunPeer?
    /// The configuration a SIGHUP switches to, built off the event loops; a throw keeps the running
    /// one. `atsgate run` reads its config file and flags again; by default the same configuration
    /// comes back as a new generation.
    var reconfigure: @Sendable () throws -> ProxyConfiguration

    init(configuration: ProxyConfiguration, inherited: ServiceManager.InheritedListeners = .init(),
         sink: LogSink? = nil, observer: (any DecisionObserver)? = nil) {
        self.configuration = configuration
        self.inherited = inherited
        self.sink = sink
        self.observer = observer
        reconfigure = { configuration }
    }

    /// What `start()` leaves running.
    struct Running {
        let server: ProxyServer
        let admin: AdminServer?
        /// The "listening on" line, said once the signal handlers are in place.
        let announcement: String
    }

    /// Binds the listeners (or takes the inherited ones), then starts the event loops and the admin
    /// listener. A port in use or a log file that cannot be opened throws (exit status 1) before
    /// anything runs.
    func start() throws -> Running {
        var configuration = configuration
        // The admin socket systemd bound is one of the proxy's own addresses (the destination ACL).
        if let fd = inherited.admin.first, let address = Socket.localAddress(fd) { configuration.listeners.admin = address }
        if !inherited.proxyTLS.isEmpty, configuration.listeners.tlsIdentity == nil {
            throw CommandFailure(message: "socket activation passed a socket named proxy-tls: "
                                 + "--listen-cert FILE and --listen-key FILE are needed for it")
        }
        // The live page's feed is the admin window's: without one, no record pays for it.
        let feed = LiveFeed()
        let hasAdmin = !inherited.admin.isEmpty || configuration.listeners.admin != nil
        let sink = try self.sink ?? DecisionLogOutput.sink(for: configuration)
        let server: ProxyServer
        let admin: AdminServer?
        do {
            server = try ProxyServer(configuration: configuration, sink: sink, inherited: inherited.proxy,
                                     inheritedTLS: inherited.proxyTLS,
                                     inheritedGate: (inherited.transparent, inherited.tproxy, inherited.quic),
                                     observer: ObserverPair.either(hasAdmin ? feed : nil, observer))
            if let fd = inherited.admin.first {
                admin = try AdminServer(inherited: fd, server: server, feed: feed)
            } else if let address = configuration.listeners.admin {
                admin = try AdminServer(listeningOn: address, server: server, feed: feed)
            } else {
                admin = nil
            }
        } catch {
            // 2, as every other reason the daemon cannot start: a supervisor or script tells "did not
            // start" from the status alone.
            throw CommandFailure(message: "cannot listen: \(error.description)", exitCode: 2)
        }
        ProxyServer.version = AtsgateVersion.string
        let loops = server.loopAllowance
        ServiceManager.say("\(loops.count) event loop\(loops.count == 1 ? "" : "s"): \(loops.source)")
        server.startRun(predecessor: predecessor)
        server.start()
        admin?.start()
        return Running(server: server, admin: admin,
                       announcement: Self.announcement(configuration, server: server, admin: admin))
    }

    /// Starts, then serves until a signal ends the process.
    func run() throws -> Never {
        let running = try start()
        let line = running.announcement
        ServiceLifecycle(server: running.server, gracePeriod: gracePeriod, reconfigure: reconfigure,
                         announce: { ServiceManager.say(line) }).start()
        // The loops hold the admin listener's handlers, not the listener: keep it for the life of the process.
        withExtendedLifetime(running.admin) { dispatchMain() }
    }

    /// Where the daemon listens, with which certificate, policy, profile and mode.
    private static func announcement(_ configuration: ProxyConfiguration, server: ProxyServer,
                                     admin: AdminServer?) -> String {
        var where_ = (server.boundAddresses.map(\.description) + server.boundTLSAddresses.map { "\($0) (TLS)" }
            + server.bound(.transparent).map { "\($0) (transparent)" } + server.bound(.tproxy).map { "\($0) (TPROXY)" }
            + server.boundQUICAddresses.map { "\($0) (QUIC)" })
            .joined(separator: ", ")
        if let identity = configuration.listeners.tlsIdentity, !server.boundTLSAddresses.isEmpty {
            where_ += " with the certificate of \(ServiceLifecycle.describe(identity))"
        }
        if let adminAddress = admin?.address { where_ += "; admin on \(adminAddress)" }
        let more = configuration.apps.count > 1 ? " and \(configuration.apps.count - 1) more" : ""
        let inspection = configuration.inspection
        return "listening on \(where_) (policy \(configuration.policyLabel)\(more), "
            + "profile \(configuration.engine.options.profile.rawValue), mode \(configuration.mode.rawValue), trust store "
            + TrustOptions.describe(inspection.trustStore, transparency: inspection.transparency, aia: inspection.aiaFetch) + ")"
    }
}

/// Two observers hearing every record, for a caller's observer beside the live feed.
private final class ObserverPair: DecisionObserver {
    let first: any DecisionObserver
    let second: any DecisionObserver

    init(_ first: any DecisionObserver, _ second: any DecisionObserver) {
        self.first = first
        self.second = second
    }

    func observe(_ record: DecisionRecord, policy: String) {
        first.observe(record, policy: policy)
        second.observe(record, policy: policy)
    }

    /// Whichever is there, or both.
    static func either(_ first: (any DecisionObserver)?, _ second: (any DecisionObserver)?) -> (any DecisionObserver)? {
        guard let first, let second else { return first ?? second }
        return ObserverPair(first, second)
    }
}
