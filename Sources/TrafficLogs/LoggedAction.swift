import Glibc

/// The action a record logged. Logs grow: an action this version does not know (today's `close`) is
/// counted as `other`, never as a block. A HAR entry is `captured`: a load another tool saw, which no
/// proxy decided.
public enum LoggedAction: Int, CaseIterable, Sendable {
    case allow, block, upgrade, error, captured, other

    public var name: String {
        switch self {
        case .allow: "allow"
        case .block: "block"
        case .upgrade: "upgrade"
        case .error: "error"
        case .captured: "captured"
        case .other: "other"
        }
    }

    package init(_ bytes: UnsafeRawBufferPointer) {
        func equals(_ text: StaticString) -> Bool {
            bytes.count == text.utf8CodeUnitCount && memcmp(bytes.baseAddress!, text.utf8Start, bytes.count) == 0
        }
        if bytes.isEmpty { self = .other } else if equals("allow") { self = .allow } else if equals("block") { self = .block }
        else if equals("upgrade") { self = .upgrade } else if equals("error") { self = .error }
        else if equals("captured") { self = .captured } else { self = .other }
    }
}

/// Records per logged action: counters in place (an array would be one more allocation to check and
/// retain per record).
public struct ActionCounts: Sendable, Equatable, CustomStringConvertible {
    private var allow = 0, block = 0, upgrade = 0, error = 0, captured = 0, other = 0

    public subscript(action: LoggedAction) -> Int {
        get {
            switch action {
            case .allow: allow
            case .block: block
            case .upgrade: upgrade
            case .error: error
            case .captured: captured
            case .other: other
            }
        }
        set {
            switch action {
            case .allow: allow = newValue
            case .block: block = newValue
            case .upgrade: upgrade = newValue
            case .error: error = newValue
            case .captured: captured = newValue
            case .other: other = newValue
            }
        }
    }

    public var description: String {
        LoggedAction.allCases.map { "\($0.name)=\(self[$0])" }.joined(separator: " ")
    }
}
