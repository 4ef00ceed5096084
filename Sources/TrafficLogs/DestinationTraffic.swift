import ATSPolicy

/// One TLS handshake outcome seen for a destination: the version and suite names as logged.
public struct Handshake: Hashable, Sendable {
    public var version: String
    public var cipher: String?

    public init(version: String, cipher: String?) {
        self.version = version
        self.cipher = cipher
    }
}

/// One key exchange seen for a destination: the group the server chose (nil: none, as in TLS 1.2 with
/// RSA key exchange) and whether the client offered a post-quantum group (nil: not known, as in a HAR).
public struct KeyExchange: Hashable, Sendable {
    public var group: String?
    public var pqOffered: Bool?

    public init(group: String?, pqOffered: Bool?) {
        self.group = group
        self.pqOffered = pqOffered
    }
}

/// What the logs recorded for one destination (scheme, host, port) of one app.
public struct DestinationTraffic: Sendable {
    public var app: String
    public var scheme: String
    public var host: String
    public var port: Int
    public var records = 0
    /// Records per action.
    public var actions = ActionCounts()
    /// Records per reason code (any code, known or not).
    public var reasons: [String: Int] = [:]
    /// Milliseconds since the epoch.
    public var firstTime = Int64.max
    public var lastTime = Int64.min
    public var handshakes: Set<Handshake> = []
    /// The key exchanges of the handshakes whose records carry `key_exchange`.
    public var keyExchanges: Set<KeyExchange> = []
    /// The exception keys the logs name (`builtin:apple.com` for a built-in).
    public var exceptions: Set<String> = []
    /// Certificate findings, refused (`certificate-*` reasons) or tolerated (`cert_tolerated`).
    public var certificateFindings: Set<String> = []
    /// Blocks logged with `enforced:false` (report mode: the load went through).
    public var reportOnlyBlocks = 0
    /// The message of the first block, as logged.
    public var blockMessage: String?
    /// Records per device (`--device`; records without one are not counted here).
    public var devices: [String: Int] = [:]
    /// The client's own refusals of the server (`client-refused-certificate`), by the alert it sent
    /// (`encrypted`: TLS 1.3, its name hidden).
    public var clientRefusals: [String: Int] = [:]
    /// Bytes the records say were moved, client to origin and back (the system section's volume).
    public var bytesUp = 0
    public var bytesDown = 0

    /// The proxy's reason for a client that refused the server's certificate.
    public static let clientRefusalReason = "client-refused-certificate"
    /// The builder's memory of the last values seen, so a run of equal ones costs no table lookup.
    package var run = Run()

    package struct Run: Sendable {
        package var reason = -1
        package var reasonCount = 0
        package var handshake = -1
        package var exception = -1
        package var keyExchange = -1
        package var device = -1
        package var deviceCount = 0
    }

    /// The load contexts seen (bits of `LoadContext` in `allCases` order), from the records' `user_agent`;
    /// a record without one is the app's.
    package var contextBits: UInt8 = 0

    /// The load contexts the records came through, the app's first.
    public var contexts: [LoadContext] {
        let seen = LoadContext.allCases.enumerated().filter { contextBits & (1 << $0.offset) != 0 }.map(\.element)
        return seen.isEmpty ? [.app] : seen
    }

    /// The devices whose records name this destination, by name.
    public var deviceNames: [String] { devices.keys.sorted() }
    /// `unknown_ca ×3, encrypted ×1`: the client's refusals by alert, the commonest first.
    public var clientRefusalSummary: String {
        clientRefusals.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
            .map { "\($0.key) \u{d7}\($0.value)" }.joined(separator: ", ")
    }
    public var clientRefusalCount: Int { clientRefusals.values.reduce(0, +) }

    public var tlsVersions: [String] { Set(handshakes.map(\.version)).sorted() }
    public var ciphers: [String] { Set(handshakes.compactMap(\.cipher)).sorted() }
    public var url: String { "\(scheme)://\(host.contains(":") ? "[\(host)]" : host):\(port)" }

    public func count(_ action: LoggedAction) -> Int { actions[action] }

    /// What identifies the destination across logs.
    var key: String { "\(app)\u{0}\(scheme)\u{0}\(host)\u{0}\(port)" }

    /// Adds another part's records of the same destination.
    mutating func merge(_ other: DestinationTraffic) {
        records += other.records
        for action in LoggedAction.allCases { actions[action] += other.actions[action] }
        reasons.merge(other.reasons, uniquingKeysWith: +)
        firstTime = min(firstTime, other.firstTime)
        lastTime = max(lastTime, other.lastTime)
        handshakes.formUnion(other.handshakes)
        keyExchanges.formUnion(other.keyExchanges)
        exceptions.formUnion(other.exceptions)
        certificateFindings.formUnion(other.certificateFindings)
        reportOnlyBlocks += other.reportOnlyBlocks
        bytesUp += other.bytesUp
        bytesDown += other.bytesDown
        if blockMessage == nil { blockMessage = other.blockMessage }
        devices.merge(other.devices, uniquingKeysWith: +)
        clientRefusals.merge(other.clientRefusals, uniquingKeysWith: +)
        contextBits |= other.contextBits
    }
}
