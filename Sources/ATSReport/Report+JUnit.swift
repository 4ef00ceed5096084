import ATSLint
import ATSPolicy

extension Report {
    /// JUnit XML for CI test views: one test suite per app, one test case per destination, a failure
    /// for each that was or would be blocked (the reasons and the fix), and each unused key as a skipped
    /// case so it shows without failing the build.
    public var junit: String {
        var out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        let tests = apps.reduce(0) { $0 + $1.destinations.count + $1.unused.count }
        let failures = apps.reduce(0) { $0 + $1.blocked.count }
        let skipped = apps.reduce(0) { $0 + $1.unused.count }
        out += "<testsuites name=\"atsgate report\" tests=\"\(tests)\" failures=\"\(failures)\" errors=\"0\" skipped=\"\(skipped)\">\n"
        for app in apps {
            let first = app.destinations.map(\.traffic.firstTime).min() ?? 0
            out += "  <testsuite name=\"\(XML.attribute(app.app))\" tests=\"\(app.destinations.count + app.unused.count)\""
                + " failures=\"\(app.blocked.count)\" errors=\"0\" skipped=\"\(app.unused.count)\""
                + " timestamp=\"\(Timestamp.text(first).dropLast(5))\">\n"
            out += "    <properties>\n"
            out += "      <property name=\"policy\" value=\"\(XML.attribute(app.policy.origin))\"/>\n"
            out += "      <property name=\"profile\" value=\"\(options.profile.rawValue)\"/>\n"
            out += "      <property name=\"records\" value=\"\(app.records)\"/>\n"
            out += "    </properties>\n"
            for destination in app.destinations {
                let traffic = destination.traffic
                let seconds = Double(max(0, traffic.lastTime - traffic.firstTime)) / 1000
                out += "    <testcase classname=\"\(XML.attribute(app.app))\" name=\"\(XML.attribute(traffic.url))\""
                    + " time=\"\(seconds)\">\n"
                if destination.isBlocked {
                    let reasons = destination.findings.map(\.reason).joined(separator: ", ")
                    var body = destination.findings.map { "\($0.reason): \($0.detail)" }.joined(separator: "\n")
                    if let fix = destination.fix {
                        if !fix.changes.isEmpty {
                            body += "\nfix: " + fix.changes.map(\.summary).joined(separator: ", ")
                            body += fix.needsJustification ? " (App Review asks for a justification)" : " (no justification needed)"
                            if let scope = fix.scope { body += "\n" + scope }
                        }
                        for item in fix.unfixable { body += "\nno key: " + item.advice }
                    }
                    out += "      <failure type=\"\(XML.attribute(destination.findings.first!.reason))\""
                        + " message=\"\(XML.attribute("would be blocked: \(reasons)"))\">\(XML.text(body))</failure>\n"
                }
                let actions = LoggedAction.allCases.compactMap { traffic.count($0) == 0 ? nil : "\(traffic.count($0)) \($0.name)" }
                var summary = "\(traffic.records) records (" + actions.joined(separator: ", ") + "), "
                summary += Timestamp.text(traffic.firstTime) + " .. " + Timestamp.text(traffic.lastTime)
                if !traffic.tlsVersions.isEmpty { summary += "; TLS " + traffic.tlsVersions.joined(separator: ", ") }
                out += "      <system-out>" + XML.text(summary) + "</system-out>\n"
                out += "    </testcase>\n"
            }
            for key in app.unused {
                let path = LintKeyPath(key.change.keyPath.map(LintKeyPath.Component.key)).description
                out += "    <testcase classname=\"\(XML.attribute(app.app)).unused\" name=\"\(XML.attribute(path))\" time=\"0\">\n"
                out += "      <skipped message=\"\(XML.attribute("unused: \(key.note)"))\"/>\n"
                out += "    </testcase>\n"
            }
            out += "  </testsuite>\n"
        }
        out += "</testsuites>\n"
        return out
    }
}

/// XML escaping for text and attribute values; characters XML 1.0 cannot carry are dropped.
enum XML {
    static func text(_ value: String) -> String {
        var out = ""
        out.reserveCapacity(value.utf8.count)
        for scalar in value.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\n", "\t", "\r": out.unicodeScalars.append(scalar)
            case _ where scalar.value < 0x20 || scalar.value == 0xFFFE || scalar.value == 0xFFFF: continue
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    static func attribute(_ value: String) -> String {
        text(value).replacingOccurrences(of: "\"", with: "&quot;").replacingOccurrences(of: "\n", with: "&#10;")
    }
}
