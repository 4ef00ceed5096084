import Foundation

/// Dates as messages print them: ISO 8601 in UTC, to the second, as the rest of atsgate prints dates.
public enum DateText {
    public static func iso8601(_ date: Date?) -> String {
        date?.formatted(.iso8601) ?? "an unreadable date"
    }
}
