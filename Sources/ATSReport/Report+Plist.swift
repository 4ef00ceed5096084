import ATSPolicy
import Foundation
import TrafficLogs

extension Report {
    /// The suggested `NSAppTransportSecurity` as an XML property list: for one app an Info.plist fragment
    /// (`atsgate check --policy` reads it as is); for several, a dictionary of app ID to fragment. XML
    /// comments say what was added and removed, and whether the proof held.
    public var plist: String {
        var out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        out += "<!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n"
        out += "<plist version=\"1.0\">\n"
        if apps.count == 1 {
            out += apps[0].plistFragment(indent: 0)
        } else {
            out += "<dict>\n"
            for app in apps {
                out += "\t<key>\(PlistWriter.escape(app.app))</key>\n"
                out += app.plistFragment(indent: 1)
            }
            out += "</dict>\n"
        }
        out += "</plist>\n"
        return out
    }
}

extension AppReport {
    func plistFragment(indent: Int) -> String {
        let tabs = String(repeating: "\t", count: indent)
        var out = "\(tabs)<dict>\n"
        var notes: [String] = ["suggested by atsgate report for \(app) from \(records) recorded decisions (policy \(policy.origin))"]
        for change in suggestion.added {
            notes.append("added: \(change.summary)" + (change.needsJustification ? " (App Review asks for a justification)" : ""))
        }
        for key in suggestion.removed { notes.append("removed \(key.change.keyPath.joined(separator: ".")): \(key.note)") }
        if suggestion.keptUnused {
            notes.append("kept: the unused keys, because removing them together changed a recorded decision")
        }
        if suggestion.isProven {
            notes.append("proven: every recorded destination is decided the same or better under this dictionary")
        } else {
            for item in suggestion.unproven {
                notes.append("NOT proven: \(item.url) is still blocked (\(item.reasons.joined(separator: ", ")))")
            }
        }
        for outside in outsideSystemProxy {
            // No key of this dictionary reaches them: ATS governs only the URL loading system.
            notes.append("device \(outside.device): \(outside.summary) (\(OutsideSystemProxy.meaning)): "
                         + outside.destinations.joined(separator: ", "))
        }
        for note in notes { out += "\(tabs)\t<!-- \(PlistWriter.comment(note)) -->\n" }
        out += "\(tabs)\t<key>NSAppTransportSecurity</key>\n"
        PlistWriter.write(.dictionary(suggestion.source.dictionary), indent: indent + 1, to: &out)
        out += "\(tabs)</dict>\n"
        return out
    }
}

/// Writes `PlistValue`s as Apple's XML property list format, keys sorted.
enum PlistWriter {
    static func write(_ value: PlistValue, indent: Int, to out: inout String) {
        let tabs = String(repeating: "\t", count: indent)
        switch value {
        case .bool(let flag): out += "\(tabs)<\(flag ? "true" : "false")/>\n"
        case .integer(let number): out += "\(tabs)<integer>\(number)</integer>\n"
        case .real(let number): out += "\(tabs)<real>\(number)</real>\n"
        case .string(let text): out += "\(tabs)<string>\(escape(text))</string>\n"
        case .date(let date): out += "\(tabs)<date>\(date.formatted(.iso8601))</date>\n"
        case .data(let data): out += "\(tabs)<data>\(data.base64EncodedString())</data>\n"
        case .null: out += "\(tabs)<string></string>\n"
        case .array(let items):
            if items.isEmpty { out += "\(tabs)<array/>\n"; return }
            out += "\(tabs)<array>\n"
            for item in items { write(item, indent: indent + 1, to: &out) }
            out += "\(tabs)</array>\n"
        case .dictionary(let items):
            if items.isEmpty { out += "\(tabs)<dict/>\n"; return }
            out += "\(tabs)<dict>\n"
            for key in items.keys.sorted() {
                out += "\(tabs)\t<key>\(escape(key))</key>\n"
                write(items[key]!, indent: indent + 1, to: &out)
            }
            out += "\(tabs)</dict>\n"
        }
    }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;")
    }

    /// XML comments may not contain `--`.
    static func comment(_ text: String) -> String {
        escape(text).replacingOccurrences(of: "--", with: "- -")
    }
}
