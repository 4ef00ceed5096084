import Glibc

/// A libsystemd call or an inherited descriptor that did not do what the daemon needs, as one line.
public struct SystemdError: Error, Sendable, Equatable, CustomStringConvertible {
    public var description: String

    public init(_ description: String) {
        self.description = description
    }

    /// A libsystemd function that returned a negative errno (their convention).
    static func call(_ function: String, returned code: Int32, context: String = "") -> SystemdError {
        let reason = String(cString: strerror(-code))
        return SystemdError("\(function)\(context.isEmpty ? "" : " (\(context))"): \(reason)")
    }
}
