import POSIX

/// How names are resolved: the flags `--dns-*` (INTERFACE.md, "Real networks"), all in seconds.
package struct ResolverSettings: Sendable, Equatable {
    /// `--dns-timeout`: how long a connection waits for a name, separate from the connect timeout.
    package var timeout = 10.0
    /// `--dns-min-ttl` and `--dns-max-ttl`: each answer's TTL is clamped into this range.
    package var minimumTTL = 1.0
    package var maximumTTL = 3600.0
    /// `--dns-negative-ttl`: how long NXDOMAIN and NODATA are remembered (never past the maximum TTL).
    package var negativeTTL = 10.0
    /// `--dns-stale`: how long past its TTL an answer may still be served when the resolver fails
    /// (RFC 8767's maximum stale timer; 0 turns stale answers off).
    package var staleLimit = 86_400.0
    /// RFC 8767's client response timer: a refresh that has not answered by then is answered with the
    /// stale data (the refresh goes on and updates the cache).
    package var staleAnswerDelay = 1.8
    /// `--dns-server`: servers that replace /etc/resolv.conf's (a lab's own resolver, or a test's).
    package var servers: [SocketAddress] = []
    /// Names (per address family) the cache keeps.
    package var cacheCapacity = 20_000

    package init() {}

    /// A TTL as the cache keeps it.
    func clamped(ttl: Int) -> Double {
        min(max(Double(ttl), minimumTTL), max(minimumTTL, maximumTTL))
    }

    var negativeLifetime: Double { min(negativeTTL, maximumTTL) }
}
