import ATSPolicy
import DecisionLog
import ProxyCore

/// The admin listener's live page: one self-contained document (no external assets; its script and
/// style are inline and its Content-Security-Policy allows nothing else) that shows the recent
/// decisions embedded in it at once, then follows `/events`.
enum LivePage {
    static let headers = [
        ("Content-Security-Policy",
         "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'"),
        ("Cache-Control", "no-store"),
        ("X-Content-Type-Options", "nosniff"),
    ]

    /// The records embedded in the page: its first screen, grouped (the stream brings the rest).
    static let embedded = 500

    /// The totals by app, device, action, reason and enforcement (of every record the feed numbered, up to
    /// `through`), the inspected handshakes by app and key exchange, the mode new connections get,
    /// the records given, and, for a `counts` event after a gap, how many records the stream skipped.
    static func snapshot(_ snapshot: LiveFeed.Snapshot, mode: ProxyMode, skipped: Int? = nil) -> String {
        let counts = snapshot.totals.decisions
            .sorted { $0.key < $1.key }
            .map { key, count -> JSONValue in
                .object([("app", .string(key.app))] + device(key.device)
                        + [("action", .string(key.action)), ("reason", .string(key.reason)), ("enforced", .bool(key.enforced)),
                           ("count", .int(count))])
            }
        let recent = snapshot.entries.map { entry -> JSONValue in
            guard case .object(var fields) = entry.record.json(policy: entry.policy) else { return .null }
            fields.append(("seq", .int(entry.sequence)))
            return .object(fields)
        }
        let keyExchanges = snapshot.totals.keyExchanges.sorted { $0.key < $1.key }.map { key, count -> JSONValue in
            .object([("app", .string(key.app))] + device(key.device) + [("group", .string(key.groupName)),
                     ("pq_offered", .bool(key.postQuantumOffered)), ("count", .int(count))])
        }
        var fields: [(String, JSONValue)] = [("through", .int(snapshot.through)), ("mode", .string(mode.rawValue)),
                                             ("counts", .array(counts)), ("key_exchange", .array(keyExchanges)),
                                             ("pq_groups", .array(KeyExchangeFacts.postQuantumGroupNames.map(JSONValue.string))),
                                             ("recent", .array(recent))]
        if let skipped { fields.append(("skipped", .int(skipped))) }
        return JSONValue.object(fields).compact
    }

    /// A count's `device` field: left out when no --device matched (the page reads it as ""), so a
    /// proxy without devices sends what it sent before.
    private static func device(_ name: String) -> [(String, JSONValue)] {
        name.isEmpty ? [] : [("device", .string(name))]
    }

    /// The page with `snapshot` embedded (`</` escaped so no value can end the script element).
    static func html(snapshot: String) -> String {
        page.replacing("@SNAPSHOT@", with: snapshot.replacing("</", with: "<\\/"))
    }

    /// The page itself, Resources/live-page.html, embedded in the binary at build time (so the daemon
    /// serves it with no file to install) and edited, linted and validated as the HTML it is.
    private static let page = String(decoding: PackageResources.live_page_html, as: UTF8.self)
}
