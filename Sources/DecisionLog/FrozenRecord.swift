import ATSPolicy
import POSIX

extension DecisionRecord {
    /// A record as the process that made the decision visited it, carried to the process that writes
    /// it (an upgrade hands a live tunnel to the new binary, which logs it when it ends). Frozen, not
    /// decoded into a new `Decision`: the record states what the old binary decided, and a newer
    /// binary with other fields must write it as the old one would have. Only what the new process
    /// still changes stays live in the record: the byte counts, the duration, the message (a
    /// note such as "idle for 300 s" is added where the tunnel ends) and the run, because the record
    /// is written once, in the run of the process holding the connection when it ends.
    package struct Frozen: Codable, Sendable, Equatable {
        /// The fields in `visit` order, with their values as the JSON line has them.
        package var fields: [Field]
        /// The text line up to its byte counts (`DecisionRecord.textHead`).
        package var textHead: String
        /// The logged action and reason, for metrics and the journal's priority.
        package var action: String
        package var reason: String?

        /// The fields the writing process fills in itself.
        static let live: Set<String> = ["run", "bytes_up", "bytes_down", "duration_ms", "message"]

        package struct Field: Codable, Sendable, Equatable {
            package var name: String
            package var value: JSONValue

            package init(name: String, value: JSONValue) {
                self.name = name
                self.value = value
            }

            // [name, value] with the value as a tagged pair, so that 2.0 stays a double (JSONEncoder
            // would write 2, and the line would read "2" where the old process wrote "2.0").
            package init(from decoder: Decoder) throws {
                var container = try decoder.unkeyedContainer()
                name = try container.decode(String.self)
                value = try Field.decodeValue(&container)
            }

            package func encode(to encoder: Encoder) throws {
                var container = encoder.unkeyedContainer()
                try container.encode(name)
                try Field.encode(value, into: &container)
            }

            private static func encode(_ value: JSONValue, into container: inout UnkeyedEncodingContainer) throws {
                switch value {
                case .null: try container.encode("n")
                case .bool(let flag): try container.encode("b"); try container.encode(flag)
                case .int(let number): try container.encode("i"); try container.encode(number)
                case .double(let number): try container.encode("d"); try container.encode(number)
                case .string(let text): try container.encode("s"); try container.encode(text)
                case .array(let items):
                    try container.encode("a")
                    var nested = container.nestedUnkeyedContainer()
                    for item in items { try encode(item, into: &nested) }
                case .object(let members):
                    try container.encode("o")
                    var nested = container.nestedUnkeyedContainer()
                    for (key, member) in members {
                        try nested.encode(key)
                        try encode(member, into: &nested)
                    }
                }
            }

            private static func decodeValue(_ container: inout UnkeyedDecodingContainer) throws -> JSONValue {
                let tag = try container.decode(String.self)
                switch tag {
                case "n": return .null
                case "b": return .bool(try container.decode(Bool.self))
                case "i": return .int(try container.decode(Int.self))
                case "d": return .double(try container.decode(Double.self))
                case "s": return .string(try container.decode(String.self))
                case "a":
                    var nested = try container.nestedUnkeyedContainer()
                    var items: [JSONValue] = []
                    while !nested.isAtEnd { items.append(try decodeValue(&nested)) }
                    return .array(items)
                case "o":
                    var nested = try container.nestedUnkeyedContainer()
                    var members: [(String, JSONValue)] = []
                    while !nested.isAtEnd { members.append((try nested.decode(String.self), try decodeValue(&nested))) }
                    return .object(members)
                default:
                    throw DecodingError.dataCorruptedError(in: container, debugDescription: "unknown value tag '\(tag)'")
                }
            }
        }

        /// Hands the fields to `visitor`, the live ones from `record`.
        func replay<Fields: LogFieldVisitor>(_ record: DecisionRecord, into visitor: inout Fields) {
            for field in fields {
                switch field.name {
                case "run": visitor.string("run", LogRun.id)
                case "bytes_up": visitor.int("bytes_up", record.bytesUp)
                case "bytes_down": visitor.int("bytes_down", record.bytesDown)
                case "duration_ms": visitor.milliseconds("duration_ms", record.durationMilliseconds)
                case "message": visitor.string("message", record.message)
                default: visitor.replayed(field.name, field.value)
                }
            }
        }
    }

    /// The record frozen as `visit` hands it over under `policy` (the generation's name for it).
    package func frozen(policy: String) -> Frozen {
        var object = JSONObjectFields()
        visit(policy: policy, &object)
        return Frozen(fields: object.fields.map { Frozen.Field(name: $0.0, value: $0.1) }, textHead: textHead(policy: policy),
                      action: loggedAction, reason: loggedReason)
    }

    /// A record another process froze, to be written here when its connection ends: `message` is the
    /// frozen one, and notes add to it; the byte counts and duration are this record's.
    package init(thawing frozen: Frozen, client: SocketAddress, method: String) {
        self.init(time: 0, client: client, method: method)
        self.frozen = frozen
        if case .string(let text)? = frozen.fields.first(where: { $0.name == "message" })?.value { message = text }
    }
}
