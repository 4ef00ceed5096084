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
        if Set(configuration.listen) != Set(old.listen), !configuration.listen.allSatisfy({ $0.port == 0 }) {
            warnings.append("listen addresses do not change on reload; restart to apply")
        }
        if Set(configuration.listenTLS) != Set(old.listenTLS), !configuration.listenTLS.allSatisfy({ $0.port == 0 }) {
            warnings.append("TLS listen addresses do not change on reload; restart to apply")
        }
        if !old.listenTLS.isEmpty, configuration.listenerTLS == nil {
            // The TLS listeners stay open: they keep the pair they have.
            warnings.append("the TLS listeners keep their certificate: the new configuration names none")
            configuration.listenerTLS = old.listenerTLS
        }
        if configuration.admin != old.admin, configuration.admin?.port != 0 {
            warnings.append("the admin address does not change on reload; restart to apply")
        }
        if configuration.logFile != old.logFile || configuration.logOverflow != old.logOverflow
            || configuration.logBufferBytes != old.logBufferBytes {
            warnings.append("log-file, log-overflow and log-buffer do not change on reload; restart to apply")
        }
        if configuration.loopCount != old.loopCount {
            warnings.append("the number of event loops does not change on reload; restart to apply")
        }
        configuration.listen = old.listen
        configuration.listenTLS = old.listenTLS
        configuration.admin = old.admin
        configuration.logFile = old.logFile
        configuration.logOverflow = old.logOverflow
        configuration.logBufferBytes = old.logBufferBytes
        configuration.loopCount = old.loopCount
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
