/// Every number of a run, by column and metric, with what went wrong beside it.
///
/// Columns are the proxies (`Column.rawValue`) plus atsgate's extra TLS runs (`atsgate_off`,
/// `atsgate_cold`, `atsgate_check`). Metrics are short names: `tps`, `p50`, `p99`, `tps_cpu_us`,
/// `bulk1`, `bulk4`, `fwd`, `fwd_cpu_us`, `rss`, and per TLS version `tls13`, `tls13_p99`, ...
final class Results {
    private var values: [String: Double] = [:]
    private var notes: [String: String] = [:]
    private var errors: [String: Int] = [:]
    /// Lines for "Errors and notes" under the table.
    var log: [String] = []
    /// The cipher each TLS version negotiated (the first one seen).
    var ciphers: [String: String] = [:]
    /// "column: version line", in the order the columns ran.
    var versions: [(String, String)] = []
    /// The other processes' share of the machine per column, percent, and who they were.
    var otherLoad: [String: Double] = [:]
    var otherProcesses: [String: [(String, Double)]] = [:]
    /// The most frequent system calls per tunnel, per column (`--syscalls`).
    var syscallMix: [String: [(String, Double)]] = [:]
    /// Decision-log reasons of atsgate's check run without the run's CA.
    var checkReasons = ""
    /// How many rounds these numbers are the medians of (`--repeat`), and each figure's spread.
    var rounds = 1
    var spreads: [String: Spread] = [:]

    /// Every figure, error count and note by "column:metric" (to fold rounds together).
    var allValues: [String: Double] { values }
    var allErrors: [String: Int] { errors }
    var allNotes: [String: String] { notes }
    func setValue(_ value: Double, key: String) { values[key] = value }
    func addErrors(_ count: Int, key: String) { errors[key, default: 0] += count }
    func noteText(_ key: String) -> String? { notes[key] }
    func appendNote(_ text: String, key: String) { notes[key] = notes[key].map { $0 + ", " + text } ?? text }

    subscript(column: String, metric: String) -> Double? {
        get { values[column + ":" + metric] }
        set { values[column + ":" + metric] = newValue }
    }

    func note(_ column: String, _ metric: String) -> String? { notes[column + ":" + metric] }
    func setNote(_ column: String, _ metric: String, _ text: String?) { notes[column + ":" + metric] = text }
    func addNote(_ column: String, _ metric: String, _ text: String) {
        let key = column + ":" + metric
        notes[key] = notes[key].map { $0 + ", " + text } ?? text
    }

    func errorCount(_ column: String, _ metric: String) -> Int? { errors[column + ":" + metric] }
    func setErrorCount(_ column: String, _ metric: String, _ count: Int?) { errors[column + ":" + metric] = count }
}
