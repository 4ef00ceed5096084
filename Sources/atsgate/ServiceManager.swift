import DecisionLog
import Foundation
import ProxyCore
import Systemd

/// The daemon's side of the service manager (systemd): readiness and status notifications, the
/// watchdog, inherited sockets, and one-line operator messages on stderr. Outside systemd
/// (no NOTIFY_SOCKET, no LISTEN_FDS) the notifications do nothing.
enum ServiceManager {
    private static let notifier = ServiceNotifier()

    static func say(_ line: String) {
        FileHandle.standardError.write(Data("atsgate: \(line)\n".utf8))
    }

    // A notification that cannot be sent is not worth stopping the proxy for; systemd notices a
    // missing READY or WATCHDOG on its own.
    static func ready(status: String) { try? notifier.ready(status: status) }
    static func reloading() { try? notifier.reloading(status: "Reloading configuration") }
    static func stopping(status: String) { try? notifier.stopping(status: status) }
    static func status(_ text: String) { try? notifier.status(text) }
    static func watchdog() { try? notifier.watchdog() }

    /// WATCHDOG_USEC in seconds, when systemd expects pings.
    static var watchdogInterval: Double? {
        notifier.watchdogInterval.map { Double($0.components.seconds) + Double($0.components.attoseconds) / 1e18 }
    }

    /// Descriptors a supervisor bound for us (systemd socket activation), by role.
    struct InheritedListeners {
        var proxy: [Int32] = []
        /// FileDescriptorName=proxy-tls: the TLS listeners (--listen-cert and --listen-key apply).
        var proxyTLS: [Int32] = []
        var admin: [Int32] = []
        /// FileDescriptorName=transparent, tproxy, quic: the transparent gate's listeners.
        var transparent: [Int32] = []
        var tproxy: [Int32] = []
        var quic: [Int32] = []
    }

    /// Sockets systemd bound for us (socket activation), by their FileDescriptorName role.
    static func inheritedListeners() throws -> InheritedListeners {
        let sockets: [InheritedSocket]
        do {
            sockets = try ListenFDs.inherited()
        } catch {
            throw CommandFailure(message: "socket activation: \(error)", exitCode: 2)
        }
        var listeners = InheritedListeners()
        for socket in sockets {
            switch socket.role {
            case .proxy: listeners.proxy.append(socket.fd)
            case .proxyTLS: listeners.proxyTLS.append(socket.fd)
            case .admin: listeners.admin.append(socket.fd)
            case .transparent: listeners.transparent.append(socket.fd)
            case .tproxy: listeners.tproxy.append(socket.fd)
            case .quic: listeners.quic.append(socket.fd)
            }
        }
        return listeners
    }
}

/// journald as the decision log's destination.
enum Journal {
    /// stderr is the journal (systemd sets JOURNAL_STREAM): records go there as fields by default.
    static var isConnected: Bool { JournalWriter.isJournalStream() }
}

/// Where the decision log goes: a file (`--log-file`), journald (journal format) or standard output,
/// each behind the log's bounded buffer and its own writer thread (LogSink).
enum DecisionLogOutput {
    static func sink(for configuration: ProxyConfiguration) throws -> LogSink {
        let format = configuration.log.format
        let overflow = configuration.log.overflow
        let capacity = configuration.log.bufferBytes
        if let path = configuration.log.file {
            do {
                return try LogSink(file: path, format: format, overflow: overflow, capacity: capacity)
            } catch {
                throw CommandFailure(message: "--log-file: cannot open the decision log: \(error)", exitCode: 2)
            }
        }
        guard format == .journal else { return LogSink(format: format, overflow: overflow, capacity: capacity) }
        let writer = JournalWriter()
        // A refused entry throws: the log counts it as lost (or keeps it, under pause) and says so.
        return LogSink(structured: { message, priority, fields in
            try writer.send(message: message, priority: Int(priority), fields: fields)
        }, format: .journal, overflow: overflow, capacity: capacity)
    }
}
