import ATSPolicy
/// The path to a key in a policy file, such as
/// `NSAppTransportSecurity.NSExceptionDomains.example.com.NSExceptionMinimumTLSVersion`.
///
/// Rendering: keys joined with dots, verbatim, so a domain key keeps its own dots; array elements as
/// `[index]`. A key that is empty or holds white space, control characters, quotes or brackets is written
/// as a JSON string (`NSExceptionDomains." example.com"`), so the rendering stays one readable line.
public struct LintKeyPath: Sendable, Hashable, CustomStringConvertible {
    public enum Component: Sendable, Hashable {
        case key(String)
        case index(Int)
    }

    public var components: [Component]

    public init(_ components: [Component] = []) {
        self.components = components
    }

    /// The path of the ATS dictionary in a file: `PolicySource.keyPathPrefix` as a path.
    public init(prefix: String) {
        self.components = prefix.isEmpty ? [] : [.key(prefix)]
    }

    public func appending(_ key: String) -> LintKeyPath { LintKeyPath(components + [.key(key)]) }

    public func appending(index: Int) -> LintKeyPath { LintKeyPath(components + [.index(index)]) }

    public var description: String {
        var out = ""
        for component in components {
            switch component {
            case .key(let key):
                if !out.isEmpty { out += "." }
                out += LintKeyPath.needsQuoting(key) ? JSONValue.string(key).compact : key
            case .index(let index):
                out += "[\(index)]"
            }
        }
        return out
    }

    private static func needsQuoting(_ key: String) -> Bool {
        key.isEmpty || key.unicodeScalars.contains { scalar in
            scalar.properties.isWhitespace || scalar.value < 0x20 || scalar.value == 0x7F
                || scalar == "\"" || scalar == "[" || scalar == "]"
        }
    }
}
