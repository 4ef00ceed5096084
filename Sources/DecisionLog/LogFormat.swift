/// The format of the decision log (INTERFACE.md).
public enum LogFormat: String, Sendable, CaseIterable {
    case json
    case text
    /// Structured journald entries: the JSON fields in upper case with an `ATS_` prefix.
    case journal
}
