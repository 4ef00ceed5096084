import ATSPolicy
import DecisionLog
import Dispatch
import EventLoops
import Glibc
import ProxyAccess
import Synchronization
import POSIX

/// Reload (SIGHUP): a new configuration generation for new connections; open ones keep theirs.
extension ProxyServer {
    /// Makes `configuration` the one new connections get; open connections keep theirs. Settings
    /// that belong to the sockets (listen, admin, loops) cannot change without a restart: they are
    /// kept, and the returned warnings say so.
    @discardableResult
    public func reload(_ configuration: ProxyConfiguration) -> [String] {
        var configuration = configuration
        var warnings: [String] = []
        let old = current.withLock { $0.configuration }
        if Set(configuration.listeners.proxy) != Set(old.listeners.proxy), !configuration.listeners.proxy.allSatisfy({ $0.port == 0 }) {
            warnings.append("listen addresses do not change on reload; restart to apply")
        }
        if Set(configuration.listeners.tls) != Set(old.listeners.tls), !configuration.listeners.tls.allSatisfy({ $0.port == 0 }) {
            warnings.append("TLS listen addresses do not change on reload; restart to apply")
        }
        if !old.listeners.tls.isEmpty, configuration.listeners.tlsIdentity == nil {
            // The TLS listeners stay open: they keep the pair they have.
            warnings.append("the TLS listeners keep their certificate: the new configuration names none")
            configuration.listeners.tlsIdentity = old.listeners.tlsIdentity
        }
        let gate = { (listeners: ProxyConfiguration.Listeners) in [listeners.transparent, listeners.tproxy, listeners.quic] }
        if gate(configuration.listeners) != gate(old.listeners), !gate(configuration.listeners).joined().allSatisfy({ $0.port == 0 }) {
            warnings.append("transparent, TPROXY and QUIC listen addresses do not change on reload; restart to apply")
        }
        if configuration.listeners.admin != old.listeners.admin, configuration.listeners.admin?.port != 0 {
            warnings.append("the admin address does not change on reload; restart to apply")
        }
        if configuration.log.file != old.log.file || configuration.log.overflow != old.log.overflow
            || configuration.log.bufferBytes != old.log.bufferBytes {
            warnings.append("log-file, log-overflow and log-buffer do not change on reload; restart to apply")
        }
        if configuration.log.checkpointSeconds != old.log.checkpointSeconds {
            warnings.append("log-checkpoint does not change on reload; restart to apply")
        }
        if configuration.listeners.loopCount != old.listeners.loopCount {
            warnings.append("the number of event loops does not change on reload; restart to apply")
        }
        configuration.listeners.proxy = old.listeners.proxy
        configuration.listeners.tls = old.listeners.tls
        configuration.listeners.transparent = old.listeners.transparent
        configuration.listeners.tproxy = old.listeners.tproxy
        configuration.listeners.quic = old.listeners.quic
        configuration.listeners.admin = old.listeners.admin
        configuration.log.file = old.log.file
        configuration.log.overflow = old.log.overflow
        configuration.log.bufferBytes = old.log.bufferBytes
        configuration.log.checkpointSeconds = old.log.checkpointSeconds
        configuration.listeners.loopCount = old.listeners.loopCount
        current.withLock { generation in
            generation = Generation(configuration: configuration, daemon: daemon, number: generation.number + 1)
        }
        reloadsSucceeded.add(1, ordering: .relaxed)
        lastReload.withLock { $0 = wallClock() }
        return warnings
    }

    /// Counts a reload that was refused (the configuration stays as it was).
    public func reloadFailed() {
        reloadsFailed.add(1, ordering: .relaxed)
    }

    /// The generation new connections get: 1 at start, one more per successful reload.
    public var generation: Int { current.withLock { $0.number } }

    /// The admin window's credentials (--admin-auth) of the current generation; nil when it is open.
    package var adminAuthenticator: ProxyAuthenticator? { current.withLock { $0.adminAuthenticator } }

    /// Failed logins per client address, shared by the proxy and the admin window.
    package var loginThrottle: LoginThrottle { daemon.loginThrottle }

    /// Whether new connections' blocks are enforced or only recorded (the live page's "would block").
    package var mode: ProxyMode { current.withLock { $0.configuration.mode } }
}
