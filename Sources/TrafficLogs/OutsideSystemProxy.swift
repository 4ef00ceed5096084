/// The transparent gate's evidence: per app and device, the records that came in on the transparent
/// path (`path: transparent`: a connection a firewall redirected, made by an app or API that ignores
/// the system proxy, which ATS does not protect) and the destinations they named, beside the devices
/// that also used the proxy. A device is its `--device` name, else its address.
public struct TransparentTraffic: Sendable {
    public struct Key: Hashable, Sendable, Comparable {
        public var app: String
        public var device: String

        public static func < (lhs: Key, rhs: Key) -> Bool { (lhs.app, lhs.device) < (rhs.app, rhs.device) }
    }

    /// Records on the transparent path, and the destinations (`host:port`, else `original_dst`) they named.
    public struct Entry: Sendable {
        public var connections = 0
        public var destinations: Set<String> = []
    }

    public internal(set) var transparent: [Key: Entry] = [:]
    /// Devices with records on the proxy path.
    public internal(set) var proxyDevices: Set<String> = []

    public init() {}

    mutating func merge(_ other: TransparentTraffic) {
        for (key, entry) in other.transparent {
            transparent[key, default: Entry()].connections += entry.connections
            transparent[key, default: Entry()].destinations.formUnion(entry.destinations)
        }
        proxyDevices.formUnion(other.proxyDevices)
    }

    /// The app's devices that used both paths, by device: "outside the system proxy: N connections to
    /// M destinations".
    public func outsideSystemProxy(app: String) -> [OutsideSystemProxy] {
        transparent.filter { $0.key.app == app && proxyDevices.contains($0.key.device) }.sorted { $0.key < $1.key }
            .map { OutsideSystemProxy(device: $0.key.device, connections: $0.value.connections,
                                      destinations: $0.value.destinations.sorted()) }
    }
}

/// One device's connections that went around the system proxy although it used it too.
public struct OutsideSystemProxy: Sendable, Equatable {
    public var device: String
    public var connections: Int
    public var destinations: [String]

    public init(device: String, connections: Int, destinations: [String]) {
        self.device = device
        self.connections = connections
        self.destinations = destinations
    }

    /// What such connections mean, for every rendering.
    public static let meaning = "an app or API that ignores the system proxy, which ATS does not protect"

    /// "outside the system proxy: 3 connections to 2 destinations".
    public var summary: String {
        "outside the system proxy: \(connections) connection\(connections == 1 ? "" : "s") to \(destinations.count) "
            + "destination\(destinations.count == 1 ? "" : "s")"
    }
}
