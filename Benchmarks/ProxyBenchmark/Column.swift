import ArgumentParser

/// A column of the table: no proxy, or one proxy.
enum Column: String, CaseIterable, ExpressibleByArgument {
    case direct, tinyproxy, squid, privoxy, trafficserver, floor, atsgate

    /// Peers in the order of the table, for "best peer".
    static let peers: [Column] = [.tinyproxy, .squid, .privoxy, .trafficserver, .floor]

    /// The command the column runs, and the Debian package that has it.
    var command: (name: String, package: String)? {
        switch self {
        case .direct: ("nginx", "nginx-light")
        case .tinyproxy: ("tinyproxy", "tinyproxy")
        case .squid: ("squid", "squid")
        case .privoxy: ("privoxy", "privoxy")
        case .trafficserver: ("traffic_server", "trafficserver")
        case .floor, .atsgate: nil
        }
    }

    /// Whether it forwards plain HTTP requests (the floor proxy only tunnels).
    var forwards: Bool { self != .floor }
}

/// Which rows run: all, none of the TLS ones, or only them.
enum TLSRows: String {
    case on, off, only
    var plain: Bool { self != .only }
    var tls: Bool { self != .off }
}

/// How atsgate is started: the plain rows' daemon, or one of the TLS runs.
enum AtsgateRun: String {
    case plain
    /// TLS inspection off, on with cached verdicts, on with a cold verdict per tunnel, and the check
    /// without the run's CA (every TLS tunnel must be refused).
    case off, on, cold, untrusted
    /// `--loop-scaling`: the plain daemon with `--loops 1` pinned to one CPU, and `--loops 2` on two.
    case oneLoop, twoLoops

    /// The column of the table where a TLS run's numbers go.
    var column: String {
        switch self {
        case .plain, .on: "atsgate"
        case .off: "atsgate_off"
        case .cold: "atsgate_cold"
        case .untrusted: "atsgate_check"
        case .oneLoop: "atsgate_1loop"
        case .twoLoops: "atsgate_2loops"
        }
    }

    /// Event loops, for the loop-scaling runs.
    var loops: Int? {
        switch self {
        case .oneLoop: 1
        case .twoLoops: 2
        default: nil
        }
    }
}
