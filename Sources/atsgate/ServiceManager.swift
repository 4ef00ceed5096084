import Foundation
import ProxyCore
import Systemd

/// The daemon's side of the service manager (systemd): readiness and status notifications, the
/// watchdog, inherited sockets, and one-line operator messages on stderr.
enum ServiceManager {
    static func say(_ line: String) {
        FileHandle.standardError.write(Data("atsgate: \(line)\n".utf8))
    }

    static func ready(status: String) {}
    static func reloading() {}
    static func stopping(status: String) {}
    static func status(_ text: String) {}
    static func watchdog() {}
    static var watchdogInterval: Double? { nil }
    static func inheritedListeners() throws -> ProxyServer.InheritedListeners { .init() }
}

/// journald as the decision log's destination.
enum Journal {
    static var isConnected: Bool { false }
    static func sink(for format: LogFormat) -> LogSink { LogSink() }
}
