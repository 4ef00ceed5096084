import ATSPolicy
import HTTP1

extension RequestHead {
    /// What an absolute-form target names, read from its bytes.
    package var absoluteFormDestination: Result<Destination, DestinationError> {
        bytes.withUnsafeBufferPointer { Destination.parse(url: UnsafeBufferPointer(rebasing: $0[targetRange])) }
    }
}
