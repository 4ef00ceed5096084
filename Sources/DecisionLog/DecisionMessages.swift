import ATSPolicy

/// Decision messages a loop has already formatted. An app's engine decides from the destination and
/// the load context alone, so within one configuration generation they and the app (each has its own
/// policy) determine the message; building it (several interpolated sentences) was the largest part
/// of a log record.
package struct DecisionMessages {
    private struct Key: Hashable {
        package var generation: Int
        package var app: Int
        package var destination: Destination
        package var context: LoadContext
    }

    private var messages: [Key: String] = [:]

    package init() {}
    /// Distinct destinations remembered; past it the cache starts over (a reload leaves the old
    /// generation's entries behind until then).
    package static let capacity = 1024

    package mutating func message(for decision: Decision, generation: Int, app: Int) -> String {
        let key = Key(generation: generation, app: app, destination: decision.destination, context: decision.context)
        if let known = messages[key] { return known }
        if messages.count >= DecisionMessages.capacity { messages.removeAll(keepingCapacity: true) }
        let message = decision.message
        messages[key] = message
        return message
    }
}
