import ATSPolicy

/// Whether a transparent TLS connection's server name resolves to the address the connection was
/// going to (`--sni-check`), told from the resolver's answers as they come (one per address family):
/// a ClientHello can name any host, and the original destination is what the client really reached,
/// the way Squid's host verification catches forged names.
package struct ServerNameCheck {
    package let name: String
    package let address: IPAddress
    private var pending: Int
    private var found: [IPAddress] = []
    private var failures: [String] = []

    /// `answers`: how many the resolver will give (one per family, one for a pinned name).
    package init(name: String, address: IPAddress, answers: Int) {
        self.name = name
        self.address = address
        pending = max(1, answers)
    }

    /// Whether it is still waiting for an answer.
    package var waiting: Bool { pending > 0 }

    /// Takes one answer (the addresses, or why there were none). Returns nil while the outcome is
    /// open, then once: "" when the name resolves to the address, else why it does not.
    package mutating func add(_ answer: Result<[IPAddress], LookupProblem>) -> String? {
        guard pending > 0 else { return nil }
        switch answer {
        case .success(let addresses): found += addresses
        case .failure(let problem): failures.append(problem.message)
        }
        pending -= 1
        if found.contains(address) {
            pending = 0
            return ""
        }
        guard pending == 0 else { return nil }
        let resolved = found.isEmpty ? "no address (\(failures.joined(separator: "; ")))"
                                     : found.map(\.description).joined(separator: ", ")
        return "the TLS server name \(name) resolves to \(resolved), not to the connection's original destination \(address)"
    }

    /// Why a lookup gave no address, in the resolver's words.
    package struct LookupProblem: Error {
        package var message: String

        package init(_ message: String) { self.message = message }
    }
}
