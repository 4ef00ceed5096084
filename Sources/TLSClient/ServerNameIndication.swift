import ATSPolicy

/// The server_name a client sends for a host: the name itself, or none for an IP literal (RFC 6066
/// section 3 forbids literals) or an empty name.
enum ServerNameIndication {
    static func name(for host: String) -> String? {
        let bare = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        return IPAddress.parseStrict(bare[...]) == nil && !host.isEmpty ? host : nil
    }
}
