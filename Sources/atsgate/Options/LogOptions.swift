import ArgumentParser
import DecisionLog
import ProxyCore

/// Where the decision log goes and what it does when its reader falls behind.
struct LogOptions: ParsableArguments {
    @Option(name: .long, help: """
        Decision log format: json (one object per line on stdout), text, or journal (journald fields \
        ATS_ACTION, ATS_REASON ...). Default: journal when stderr is connected to the journal, else json.
        """)
    var logFormat: LogFormat?

    @Option(name: .long, help: ArgumentHelp("""
        Append decision records to this file (created mode 0640, opened O_APPEND) instead of standard \
        output; SIGUSR1 reopens it, as logrotate expects. Records are json or text.
        """, valueName: "path"))
    var logFile: String?

    @Option(name: .long, help: """
        When the log's reader cannot keep up and its buffer is full: drop (the records that do not fit \
        are counted: atsgate_log_dropped_records_total, a warning, then a log-overflow record with \
        'dropped') or pause (nothing is lost: the proxy stops accepting and reading requests until the \
        log drains; open tunnels keep relaying; /readyz answers 503).
        """)
    var logOverflow: LogOverflow = .drop

    @Option(name: .long, help: ArgumentHelp("""
        Bytes of records the log holds for a reader that falls behind, e.g. 65536, 64K, 16M (default 16M).
        """, valueName: "bytes"))
    var logBuffer: ByteCount?

    @Option(name: .long, help: ArgumentHelp("""
        Seconds between the run ledger's run-checkpoint records (records written so far, connections \
        open), so that a log cut short by a crash says how much is missing (default 10; 0: none). See \
        docs/decision-log-ledger.md.
        """, valueName: "seconds"))
    var logCheckpoint: Int?

    func validate() throws {
        if let logCheckpoint, !(0...86_400).contains(logCheckpoint) {
            throw ValidationError("--log-checkpoint \(logCheckpoint): seconds from 0 (no checkpoints) to 86400")
        }
        if let logBuffer, logBuffer.bytes < 4096 {
            throw ValidationError("--log-buffer \(logBuffer.bytes): at least 4096 bytes (a few records)")
        }
        if logFile != nil, logFormat == .journal {
            throw ValidationError("--log-file takes json or text records; journal records go to journald")
        }
    }

    func apply(to configuration: inout ProxyConfiguration) throws {
        // Records bound for a file are lines, whatever stderr is connected to.
        configuration.log.format = logFormat ?? (Journal.isConnected && logFile == nil ? .journal : .json)
        configuration.log.file = logFile
        configuration.log.overflow = logOverflow
        if let logBuffer { configuration.log.bufferBytes = logBuffer.bytes }
        if let logCheckpoint { configuration.log.checkpointSeconds = logCheckpoint }
    }
}

extension LogFormat: ExpressibleByArgument {}
extension LogOverflow: ExpressibleByArgument {}
