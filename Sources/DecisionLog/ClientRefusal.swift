import TLSWire

/// The client refused the server in a watched handshake: the fatal alert it sent after the server's
/// Certificate and before its own Finished (record fields `client_alert` and `pinned_domain`).
package struct ClientRefusal: Sendable, Equatable {
    /// The alert, when it travelled in the clear; nil for TLS 1.3's encrypted alert.
    package var alert: AlertDescription?
    /// The policy's NSPinnedDomains entry for the host, when it has one.
    package var pinnedDomain: String?

    package init(alert: AlertDescription?, pinnedDomain: String?) {
        self.alert = alert
        self.pinnedDomain = pinnedDomain
    }

    /// `unknown_ca`, or the code of an alert the table does not name; nil when encrypted.
    package var alertName: String? { alert.map { $0.name ?? String($0.rawValue) } }

    /// The metric's `alert` label: the name, or `encrypted`.
    package var alertLabel: String { alertName ?? "encrypted" }

    /// What the record's message says.
    package var message: String {
        let pinned = pinnedDomain.map { " (the policy pins \($0): NSPinnedDomains)" } ?? ""
        guard let alert else {
            return "the client refused the server during its TLS 1.3 handshake: it answered the server's flight with an "
                + "encrypted alert (an alert-sized record before its Finished) and closed; the alert's name is encrypted. "
                + "Most often the app's pinning or the device's trust evaluation refused the certificate\(pinned)"
        }
        return "the client refused the server's certificate with a fatal alert: \(alert)\(pinned); the app's pinning "
            + "or the device's trust evaluation rejected it"
    }
}
