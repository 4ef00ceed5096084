import Foundation
import Glibc

/// Dates as messages and JSON print them: ISO 8601 in UTC, to the second.
enum DateText {
    static func iso8601(_ date: Date?) -> String {
        guard let date else { return "an unreadable date" }
        var seconds = time_t(date.timeIntervalSince1970)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        var buffer = [CChar](repeating: 0, count: 32)
        strftime(&buffer, buffer.count, "%Y-%m-%dT%H:%M:%SZ", &parts)
        return String(nulTerminated: buffer)
    }
}
