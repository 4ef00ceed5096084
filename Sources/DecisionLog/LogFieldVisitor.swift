import ATSPolicy
import Glibc
import POSIX

/// Receives a decision record's fields in order (`DecisionRecord.visit`). A nil value is a JSON null.
package protocol LogFieldVisitor {
    mutating func string(_ name: StaticString, _ value: String?)
    mutating func strings(_ name: StaticString, _ values: [String])
    mutating func int(_ name: StaticString, _ value: Int?)
    mutating func bool(_ name: StaticString, _ value: Bool?)
    /// Seconds since the epoch, written as RFC 3339 UTC with milliseconds.
    mutating func time(_ name: StaticString, _ value: Double)
    /// A duration in milliseconds, rounded to microseconds.
    mutating func milliseconds(_ name: StaticString, _ value: Double)
    mutating func address(_ name: StaticString, _ value: SocketAddress)
    mutating func host(_ name: StaticString, _ value: Host?)
    mutating func ip(_ name: StaticString, _ value: IPAddress?)
    /// A field of a frozen record (another process's), with the value it had there.
    mutating func replayed(_ name: String, _ value: JSONValue)
}
