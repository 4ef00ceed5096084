/// Flags people bring from other proxies' command lines, and the atsgate flag that does what they
/// meant. ArgumentParser guesses by spelling alone: it offered `--mode` (and before that `--route`)
/// for `--port`.
enum UsageHints {
    static let meant: [String: String] = [
        "--port": "--listen HOST:PORT", "--bind": "--listen HOST:PORT", "--host": "--listen HOST:PORT",
        "--address": "--listen HOST:PORT", "--listen-port": "--listen HOST:PORT",
        "--upstream": "--parent http://HOST:PORT", "--proxy": "--parent http://HOST:PORT",
        "--cafile": "--ca-file FILE", "--cacert": "--ca-file FILE",
        "--log": "--log-file FILE", "--logfile": "--log-file FILE",
    ]

    /// ArgumentParser's "Unknown option '--X'" message with the flag that was meant, when it is one of
    /// these; any other message as it is.
    static func rewrite(_ message: String) -> String {
        let prefix = "Error: Unknown option '"
        guard message.hasPrefix(prefix) else { return message }
        let rest = message.dropFirst(prefix.count)
        guard let quote = rest.firstIndex(of: "'"), let hint = meant[String(rest[..<quote])] else { return message }
        let firstLine = message.firstIndex(of: "\n") ?? message.endIndex
        let usage = message[firstLine...]
        return "\(prefix)\(rest[..<quote])'. Did you mean '\(hint)'?\(usage)"
    }
}
