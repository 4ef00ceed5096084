import Foundation
import Synchronization

/// Fetches a missing issuer from a certificate's caIssuers `http://` URL, as the device does (R15):
/// trustd completes a chain the server sent without its intermediate from the Authority Information
/// Access extension, with a 3-second timeout, and caches what it got.
///
/// A fetch blocks its thread up to `timeout` seconds (the connect, the request and every redirect
/// together): run evaluations that may fetch on a blocking pool, never on an event loop.
public struct AIAFetcher: Sendable {
    /// An http:// proxy the fetches go through (`--parent`): it is sent absolute-form GETs.
    public struct Parent: Sendable, Equatable {
        /// A name or an IP literal (brackets optional for IPv6).
        public var host: String
        public var port: Int
        /// `Basic ...` for Proxy-Authorization, when the parent needs credentials.
        public var authorization: String?

        public init(host: String, port: Int, authorization: String? = nil) {
            self.host = host
            self.port = port
            self.authorization = authorization
        }
    }

    /// Seconds for one URL, redirects included: trustd's own timeout.
    public var timeout: Double
    /// The largest answer body taken. A caIssuers answer is a certificate of 1-2 KiB, or a PKCS#7
    /// bundle of a few; 256 KiB leaves room for the large bridge-CA bundles some PKIs publish.
    public var maximumBytes: Int
    /// Redirects followed before the fetch fails.
    public var maximumRedirects: Int
    public var parent: Parent?
    /// What was fetched, shared by every fetcher given the same cache.
    public let cache: AIACache

    public init(cache: AIACache = AIACache(), timeout: Double = 3, maximumBytes: Int = 256 * 1024,
                maximumRedirects: Int = 3, parent: Parent? = nil) {
        self.cache = cache
        self.timeout = timeout
        self.maximumBytes = maximumBytes
        self.maximumRedirects = maximumRedirects
        self.parent = parent
    }

    /// The certificates at `url`: from the cache when it holds a live answer (or a recent failure),
    /// else from the network, blocking up to `timeout`.
    public func fetch(_ url: String, now: ContinuousClock.Instant = .now) -> AIAFetch {
        if let cached = cache.lookup(url, now: now) { return cached }
        let outcome = CAIssuersHTTP.get(url, parent: parent, deadline: now + .milliseconds(Int64(timeout * 1000)),
                                        timeout: timeout, maximumBytes: maximumBytes,
                                        maximumRedirects: maximumRedirects)
        let fetch: AIAFetch
        switch outcome {
        case .success(let body):
            if let certificates = X509Certificate.certificates(inIssuerAnswer: body) {
                fetch = AIAFetch(url: url, outcome: .certificates(certificates.count), certificates: certificates.map(\.der))
            } else {
                fetch = AIAFetch(url: url, outcome: .failed("answered with \(body.count) bytes that are neither a DER"
                                     + " certificate nor a PKCS#7 certs-only bundle"))
            }
        case .failure(let problem):
            fetch = AIAFetch(url: url, outcome: .failed(problem.text))
        }
        cache.store(fetch, now: now)
        return fetch
    }
}

/// One caIssuers fetch and what came of it.
public struct AIAFetch: Sendable, Equatable {
    public enum Outcome: Sendable, Equatable {
        /// This many certificates came back.
        case certificates(Int)
        /// Why nothing usable came back: "timed out after 3 s", "answered 404 Not Found".
        case failed(String)
    }

    public var url: String
    public var outcome: Outcome
    /// DER of the certificates fetched (none on failure).
    public var certificates: [[UInt8]]
    /// Served from the cache, without a request.
    public var fromCache: Bool

    public init(url: String, outcome: Outcome, certificates: [[UInt8]] = [], fromCache: Bool = false) {
        self.url = url
        self.outcome = outcome
        self.certificates = certificates
        self.fromCache = fromCache
    }
}

/// caIssuers answers by URL, bounded in count: certificates for a day, failures for a minute (a dead
/// URL must not cost every connection its timeout, and must be retried before long). When full, the
/// oldest entry goes.
public final class AIACache: Sendable {
    public let capacity: Int
    public let successLifetime: Duration
    public let failureLifetime: Duration

    private struct Entry {
        var fetch: AIAFetch
        var expires: ContinuousClock.Instant
        var order: UInt64
    }

    private struct State {
        var entries: [String: Entry] = [:]
        var next: UInt64 = 0
    }

    private let state = Mutex(State())

    public init(capacity: Int = 512, successLifetime: Duration = .seconds(86_400), failureLifetime: Duration = .seconds(60)) {
        self.capacity = max(1, capacity)
        self.successLifetime = successLifetime
        self.failureLifetime = failureLifetime
    }

    /// How many URLs the cache holds.
    public var count: Int { state.withLock { $0.entries.count } }

    func lookup(_ url: String, now: ContinuousClock.Instant) -> AIAFetch? {
        state.withLock { state in
            guard let entry = state.entries[url] else { return nil }
            guard entry.expires > now else {
                state.entries[url] = nil
                return nil
            }
            var fetch = entry.fetch
            fetch.fromCache = true
            return fetch
        }
    }

    func store(_ fetch: AIAFetch, now: ContinuousClock.Instant) {
        let lifetime = fetch.certificates.isEmpty ? failureLifetime : successLifetime
        state.withLock { state in
            if state.entries[fetch.url] == nil, state.entries.count >= capacity,
               let oldest = state.entries.min(by: { $0.value.order < $1.value.order })?.key {
                state.entries[oldest] = nil
            }
            state.next += 1
            state.entries[fetch.url] = Entry(fetch: fetch, expires: now + lifetime, order: state.next)
        }
    }
}
