import ATSPolicy
import Foundation

/// The URL of a proxy auto-configuration file (`ProxyPACURL`), e.g. atsgate's own
/// `http://HOST:3128/proxy.pac`.
package struct PACURL: Hashable, Sendable, CustomStringConvertible {
    package let description: String

    /// An absolute `http://` or `https://` URL with a host: the only kinds iOS 13 and macOS 10.15 and
    /// later accept in a profile. Credentials in the URL are refused: the device would show them.
    package init(parsing text: String) throws(ProfileInputError) {
        let example = "expected http://HOST:PORT/proxy.pac"
        if let space = text.unicodeScalars.first(where: { $0.value <= 0x20 || $0.value == 0x7F }) {
            throw ProfileInputError(space == " " ? "contains a space; \(example)"
                : "contains the control character U+\(String(space.value, radix: 16, uppercase: true)); \(example)")
        }
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased() else {
            throw ProfileInputError("is not a URL; \(example)")
        }
        guard scheme == "http" || scheme == "https" else {
            throw ProfileInputError("has the scheme '\(scheme)'; devices accept only http:// and https:// PAC URLs")
        }
        guard components.user == nil, components.password == nil else {
            throw ProfileInputError("carries credentials; a PAC URL must not (atsgate serves /proxy.pac without a login)")
        }
        guard let host = components.percentEncodedHost, !host.isEmpty else { throw ProfileInputError("has no host; \(example)") }
        do {
            _ = try Destination.parse(url: text)
        } catch {
            throw ProfileInputError("\(error.problem); \(example)")
        }
        description = text
    }
}
