import ATSPolicy
import HTTP1

extension RequestHead {
    /// What an absolute-form target names, read from its bytes.
    package var absoluteFormDestination: Result<Destination, DestinationError> {
        bytes.withUnsafeBufferPointer { Destination.parse(url: UnsafeBufferPointer(rebasing: $0[targetRange])) }
    }

    /// Where the request is going, as far as its head says: a CONNECT's authority, an absolute-form
    /// URL; nil for anything else or a target that does not parse.
    package var namedDestination: Destination? {
        if method == "CONNECT" { return try? Destination.parse(authority: target, scheme: .https, portRequired: true) }
        return isAbsoluteForm ? try? absoluteFormDestination.get() : nil
    }
}
