import ATSLint
import ATSPolicy
import TrafficLogs

extension Report {
    /// One self-contained page: styles inline, charts as inline SVG (decisions over time, by reason), the
    /// tables of every app; no script and no external asset, so it can be kept as a CI artefact.
    public var html: String {
        var out = """
            <!DOCTYPE html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <title>atsgate report</title>
            <style>\(HTMLPage.style)</style>
            </head>
            <body>

            """
        let verdict = self.verdict.prefix(1).uppercased() + self.verdict.dropFirst()
        let failing = fails || (isIncomplete && !settings.allowIncomplete)
        out += "<header class=\"\(failing ? "fail" : wouldBlock ? "accepted" : "pass")\"><h1>atsgate report</h1>"
        out += "<p class=\"verdict\">\(HTMLPage.escape(verdict))</p>"
        let skipped = summary.inputs.reduce(0) { $0 + $1.notRecords + $1.missingFields }
        out += "<p>\(summary.records) records from \(inputsDescription)"
        out += skipped > 0 ? ", \(skipped) line\(skipped == 1 ? "" : "s") or entries skipped" : ""
        out += " &middot; profile \(options.profile.rawValue) &middot; \(apps.count) app\(apps.count == 1 ? "" : "s")</p>"
        if let baseline = settings.baseline {
            let counts = baselineCounts
            out += "<p>baseline <code>\(HTMLPage.escape(baseline.path))</code>: \(counts.new) new, \(counts.unchanged) unchanged, "
                + "\(counts.absent) absent</p>"
        }
        out += "</header>\n"
        for line in incompleteDescriptions {
            out += "<p class=\"incomplete\"><b>Incomplete evidence</b> \(HTMLPage.escape(line))"
                + (settings.allowIncomplete ? " (judged anyway: --allow-incomplete)" : "") + "</p>\n"
        }
        for note in runNotes { out += "<p class=\"note\">\(HTMLPage.escape(note))</p>\n" }

        out += "<section class=\"charts\">\n"
        out += "<figure><figcaption>Decisions over time</figcaption>\(HTMLCharts.timeline(summary.buckets))</figure>\n"
        var reasons: [String: Int] = [:]
        for app in apps { for (reason, count) in app.reasons { reasons[reason, default: 0] += count } }
        out += "<figure><figcaption>Decisions by reason</figcaption>\(HTMLCharts.reasons(reasons))</figure>\n"
        out += "</section>\n"

        for input in summary.inputs {
            if let creator = input.creator {
                out += "<p class=\"input\">\(HTMLPage.escape("\(input.path): HAR written by \(creator), \(input.lines) entries"))</p>\n"
            }
            if let skipped = input.skippedDescription { out += "<p class=\"note\">\(HTMLPage.escape(skipped))</p>\n" }
        }
        for app in apps { out += app.html(self) }
        if !system.isEmpty { out += systemHTML }
        if !absentElsewhere.isEmpty {
            out += "<section class=\"app\"><h3>Absent since the baseline (apps not recorded in this run)</h3>\n"
                + HTMLPage.absentTable(absentElsewhere) + "</section>\n"
        }
        out += "<footer>atsgate report &middot; decisions judged again under each app's policy (ATS rules R1-R18)</footer>\n"
        out += "</body>\n</html>\n"
        return out
    }
}

extension Report {
    /// The device's own traffic, apart from every app's: its destinations and volume.
    var systemHTML: String {
        let e = HTMLPage.escape
        var out = "<section class=\"app\" id=\"system\">\n<h2>Device system traffic</h2>\n"
            + "<p class=\"note\">The device's own traffic (push notifications, iCloud, software update, certificate fetches,"
            + " captive-portal probes): ATS does not judge it, and no app's findings, fixes or dictionary count it.</p>\n"
            + "<table class=\"system\"><thead><tr><th>destination</th><th>records</th><th>up</th><th>down</th>"
            + "<th>reasons</th></tr></thead><tbody>\n"
        for traffic in system {
            let reasons = traffic.reasons.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
            out += "<tr><td class=\"mono\">\(e(traffic.url))</td><td class=\"num\">\(traffic.records)</td>"
                + "<td class=\"num\">\(Report.byteCount(traffic.bytesUp))</td><td class=\"num\">\(Report.byteCount(traffic.bytesDown))</td>"
                + "<td class=\"mono\">\(e(reasons))</td></tr>\n"
        }
        return out + "</tbody></table>\n</section>\n"
    }
}

extension AppReport {
    func html(_ report: Report) -> String {
        let e = HTMLPage.escape
        var out = "<section class=\"app\">\n<h2>\(e(app))</h2>\n"
        out += "<p class=\"policy\">policy <code>\(e(policy.origin))</code></p>\n"
        if let policyNote { out += "<p class=\"note\">\(e(policyNote))</p>\n" }
        out += "<div class=\"cards\">"
        let cards: [(String, String, String)] = [
            ("\(records)", "records", ""),
            ("\(destinations.count)", destinations.count == 1 ? "destination" : "destinations", ""),
            ("\(blocked.count)", "would break", blocked.isEmpty ? "ok" : "bad"),
            ("\(count(.allow))", "allowed", ""),
            ("\(count(.block))", "blocked in the log", count(.block) > 0 ? "warn" : ""),
            ("\(unused.count)", "unused keys", unused.isEmpty ? "" : "warn"),
            ("\(notChecked.count)", "not checked", notChecked.isEmpty ? "" : "warn"),
            ("\(refusedByApp.count)", "refused by the app", refusedByApp.isEmpty ? "" : "warn"),
        ]
        for (value, label, kind) in cards {
            out += "<div class=\"card \(kind)\"><b>\(value)</b><span>\(label)</span></div>"
        }
        out += "</div>\n"

        if report.settings.baseline == nil {
            if !blocked.isEmpty { out += "<h3>What would break, and the fix</h3>\n" + blockedTable(blocked) }
        } else {
            for (state, title) in [(BaselineState.new, "New since the baseline: what would break, and the fix"),
                                   (.unchanged, "Unchanged since the baseline (accepted, does not fail the gate)")] {
                let group = blocked.filter { $0.baseline == state }
                if !group.isEmpty { out += "<h3 class=\"\(state.rawValue)\">\(title)</h3>\n" + blockedTable(group) }
            }
            if !absent.isEmpty { out += "<h3 class=\"absent\">Absent since the baseline</h3>\n" + HTMLPage.absentTable(absent) }
        }

        if !notChecked.isEmpty {
            out += "<h3>Not checked</h3>\n<table><thead><tr><th>destination</th><th>why</th></tr></thead><tbody>\n"
            for destination in notChecked {
                out += "<tr><td class=\"url\"><code>\(e(destination.traffic.url))</code></td>"
                    + "<td><span class=\"tag warn\">not checked</span> \(e(destination.notChecked!))</td></tr>\n"
            }
            out += "</tbody></table>\n"
        }

        if !outsideSystemProxy.isEmpty {
            out += "<h3>Outside the system proxy</h3>\n<p class=\"note\">Connections a device that also used the proxy made "
                + "around it, which the gateway redirected: \(e(OutsideSystemProxy.meaning)).</p>\n"
                + "<table class=\"outside\"><thead><tr><th>device</th><th>connections</th><th>destinations</th></tr></thead><tbody>\n"
            for outside in outsideSystemProxy {
                out += "<tr><td><code>\(e(outside.device))</code></td><td><span class=\"tag warn\">\(e(outside.summary))</span></td>"
                    + "<td>\(outside.destinations.map { "<code>\(e($0))</code>" }.joined(separator: " "))</td></tr>\n"
            }
            out += "</tbody></table>\n"
        }

        let refused = refusedByApp
        if !refused.isEmpty {
            out += "<h3>The app refused this server</h3>\n<p class=\"note\">Its pinning or the device's trust evaluation "
                + "ended the TLS handshake after the server's certificate (the alert it sent; encrypted: TLS 1.3 hides its name).</p>\n"
                + "<table class=\"refused\"><thead><tr><th>destination</th><th>alerts</th><th>devices</th></tr></thead><tbody>\n"
            for destination in refused {
                let traffic = destination.traffic
                out += "<tr><td class=\"url\"><code>\(e(traffic.url))</code></td>"
                    + "<td><span class=\"tag warn\">refused by the app</span> \(e(traffic.clientRefusalSummary))</td>"
                    + "<td>\(e(traffic.deviceNames.isEmpty ? "-" : traffic.deviceNames.joined(separator: ", ")))</td></tr>\n"
            }
            out += "</tbody></table>\n"
        }

        if !unused.isEmpty {
            out += "<h3>Unused keys (candidates to remove)</h3>\n<table><thead><tr><th>key</th><th>why</th></tr></thead><tbody>\n"
            for (index, key) in unused.enumerated() {
                let path = LintKeyPath(key.change.keyPath.map(LintKeyPath.Component.key)).description
                let state = index < unusedBaseline.count ? " <span class=\"tag \(unusedBaseline[index].rawValue)\">\(unusedBaseline[index].rawValue)</span>" : ""
                out += "<tr><td><code>\(e(path))</code>\(state)</td><td>\(e(key.note))</td></tr>\n"
            }
            out += "</tbody></table>\n"
        }

        out += "<h3>Destinations</h3>\n<table class=\"all\"><thead><tr><th>destination</th><th>records</th>"
        let showDevices = destinations.contains { !$0.traffic.devices.isEmpty }
        out += "<th>actions</th><th>reasons</th><th>TLS</th><th>exception</th>" + (showDevices ? "<th>devices</th>" : "")
            + "<th>first / last seen</th><th>verdict</th></tr></thead><tbody>\n"
        for destination in destinations {
            let traffic = destination.traffic
            let actions = LoggedAction.allCases.compactMap { traffic.count($0) == 0 ? nil : "\(traffic.count($0)) \($0.name)" }
            let reasons = traffic.reasons.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }
            out += "<tr><td class=\"url\"><code>\(e(traffic.url))</code></td><td class=\"n\">\(traffic.records)</td>"
            out += "<td>\(e(actions.joined(separator: ", ")))</td><td>\(e(reasons.joined(separator: ", ")))</td>"
            let groups = traffic.keyExchanges.isEmpty ? [] : traffic.keyExchangeGroups
            out += "<td><small>\((traffic.tlsVersions + traffic.ciphers + groups).map(e).joined(separator: "<br>"))</small></td>"
            out += "<td>\(e(destination.decision?.exception?.entry.displayName ?? "-"))</td>"
            if showDevices {
                let devices = traffic.devices.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }
                out += "<td class=\"devices\">\(devices.isEmpty ? "-" : devices.map(e).joined(separator: "<br>"))</td>"
            }
            out += "<td class=\"time\">\(HTMLPage.time(traffic.firstTime))<br>\(HTMLPage.time(traffic.lastTime))</td>"
            out += destination.isBlocked ? "<td><span class=\"tag bad\">block</span></td>" : "<td><span class=\"tag ok\">ok</span></td>"
            out += "</tr>\n"
        }
        out += "</tbody></table>\n"

        out += quantumHTML(report)

        out += "<h3>Suggested NSAppTransportSecurity</h3>\n"
        out += suggestion.isProven
            ? "<p><span class=\"tag ok\">proven</span> every recorded destination is decided the same or better under it</p>\n"
            : "<p><span class=\"tag bad\">not proven</span> still blocked under it: "
                + e(suggestion.unproven.map { "\($0.url) (\($0.reasons.joined(separator: ", ")))" }.joined(separator: "; ")) + "</p>\n"
        var plist = ""
        PlistWriter.write(.dictionary(suggestion.source.dictionary), indent: 0, to: &plist)
        out += "<pre>\(e(plist.replacingOccurrences(of: "\t", with: "  ")))</pre>\n"
        out += "</section>\n"
        return out
    }
}

extension AppReport {
    /// The blocked destinations with their findings, the fix on the exact host, and the parent entry
    /// that would do for several as the alternative.
    func blockedTable(_ rows: [DestinationReport]) -> String {
        let e = HTMLPage.escape
        var out = "<table class=\"blocked\"><thead><tr><th>destination</th>"
        out += "<th>reason</th><th>fix</th><th>App Review</th></tr></thead><tbody>\n"
        for destination in rows {
            out += "<tr><td class=\"url\"><code>\(e(destination.traffic.url))</code><br><small>\(destination.traffic.records) record\(destination.traffic.records == 1 ? "" : "s")</small></td><td>"
            out += destination.findings.map { "<span class=\"tag bad\">\(e($0.reason))</span> \(e($0.detail))" }
                .joined(separator: "<br>")
            out += "</td><td>"
            var fixes: [String] = []
            var justification = "&mdash;"
            if let fix = destination.fix {
                if !fix.changes.isEmpty {
                    var text = fix.changes.map { "<code>\(e($0.summary))</code>" }.joined(separator: "<br>")
                    text += fix.verified ? " <span class=\"tag ok\">verified</span>" : " <span class=\"tag bad\">not verified</span>"
                    if let scope = fix.scope { text += "<br><small>\(e(scope))</small>" }
                    fixes.append(text)
                    justification = fix.needsJustification ? "justification required" : "no justification"
                }
                if let alternative = fix.alternative {
                    fixes.append("<div class=\"alternative\"><span class=\"tag alt\">alternative</span> "
                        + alternative.changes.map { "<code>\(e($0.summary))</code>" }.joined(separator: ", ")
                        + "<br><small>\(e(alternative.summary)); \(e(alternative.opens)) (<code>--consolidate</code>)</small></div>")
                }
                fixes += fix.unfixable.map { "<span class=\"tag warn\">no key</span> \(e($0.advice))" }
            }
            out += fixes.joined(separator: "<br>") + "</td><td>\(justification)</td></tr>\n"
        }
        return out + "</tbody></table>\n"
    }

    /// The quantum-secure section: the share of TLS destinations per status, and the servers that
    /// answered a post-quantum offer with a classical group.
    func quantumHTML(_ report: Report) -> String {
        let e = HTMLPage.escape
        let tls = destinations.filter { $0.quantum != nil }
        guard !tls.isEmpty else { return "" }
        var out = "<h3>Quantum-secure TLS</h3>\n"
        guard recordsKeyExchange else {
            return out + "<p class=\"muted\">Not recorded: no record has <code>key_exchange</code>.</p>\n"
        }
        let counts = QuantumStatus.allCases.map { ($0, quantum($0).count) }
        out += "<figure class=\"share\"><figcaption>Share of \(counted(tls.count, "TLS destination"))</figcaption>"
            + HTMLCharts.share(counts) + "</figure>\n"
        let classical = quantum(.classical)
        if !classical.isEmpty {
            out += "<table><thead><tr><th>destination</th><th>groups the server chose</th><th>verdict</th></tr></thead><tbody>\n"
            for destination in classical {
                let state = destination.quantumBaseline.map { " <span class=\"tag \($0.rawValue)\">\($0.rawValue)</span>" } ?? ""
                let tag = report.settings.requireQuantumSecure ? "<span class=\"tag bad\">not quantum-secure (required)</span>"
                    : "<span class=\"tag warn\">not quantum-secure</span>"
                out += "<tr><td class=\"url\"><code>\(e(destination.traffic.url))</code></td>"
                    + "<td><code>\(e(destination.traffic.keyExchangeGroups.joined(separator: ", ")))</code></td>"
                    + "<td>\(tag)\(state) answered a post-quantum offer with a classical group</td></tr>\n"
            }
            out += "</tbody></table>\n"
        }
        return out
    }
}

/// The page's style and escaping.
enum HTMLPage {
    /// Baseline findings this run no longer has.
    static func absentTable(_ findings: [AbsentFinding]) -> String {
        var out = "<table><thead><tr><th>finding</th><th>rule</th></tr></thead><tbody>\n"
        for finding in findings {
            out += "<tr><td><span class=\"tag ok\">absent</span> \(escape(finding.summary))</td><td><code>\(escape(finding.rule))</code></td></tr>\n"
        }
        return out + "</tbody></table>\n"
    }

    /// `2026-11-22 06:21:01`: the table's times, to the second, UTC.
    static func time(_ milliseconds: Int64) -> String {
        String(Timestamp.text(milliseconds).prefix(19)).replacingOccurrences(of: "T", with: " ")
    }

    static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(character)
            }
        }
        return out
    }

    static let style = """
        :root{--ok:#1a7f37;--bad:#cf222e;--warn:#9a6700;--up:#0969da;--err:#bc4c00;--muted:#57606a;--line:#d0d7de}
        *{box-sizing:border-box}body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1f2328;background:#f6f8fa}
        header{padding:20px 32px;color:#fff}header.pass{background:var(--ok)}header.fail{background:var(--bad)}
        header h1{margin:0;font-size:20px;font-weight:600}header .verdict{font-size:26px;font-weight:700;margin:6px 0}header p{margin:2px 0}
        section{margin:16px 32px}.charts{display:flex;gap:16px;flex-wrap:wrap}
        figure{margin:0;background:#fff;border:1px solid var(--line);border-radius:6px;padding:12px;flex:1 1 520px}
        figcaption{font-weight:600;margin-bottom:6px}svg{display:block;width:100%;height:auto}
        .app{background:#fff;border:1px solid var(--line);border-radius:6px;padding:16px 20px}
        h2{margin:0 0 4px;font-size:18px;word-break:break-all}h3{font-size:15px;margin:20px 0 8px}
        .policy{color:var(--muted);margin:0 0 8px}.note{color:var(--warn);margin:4px 32px}
        .app .note{margin:4px 0}.cards{display:flex;gap:10px;flex-wrap:wrap}
        .card{border:1px solid var(--line);border-radius:6px;padding:8px 14px;min-width:110px;background:#fff}
        .card b{display:block;font-size:22px}.card span{color:var(--muted);font-size:12px}
        .card.bad{border-color:var(--bad)}.card.bad b{color:var(--bad)}.card.ok b{color:var(--ok)}.card.warn b{color:var(--warn)}
        table{border-collapse:collapse;width:100%;font-size:13px}th,td{border-bottom:1px solid var(--line);padding:5px 8px;text-align:left;vertical-align:top}
        th{background:#f6f8fa;font-weight:600}td.n{text-align:right}code{font:12px ui-monospace,SFMono-Regular,Menlo,monospace;overflow-wrap:anywhere}
        .tag{display:inline-block;border-radius:10px;padding:0 7px;font-size:11px;font-weight:600;color:#fff}
        .tag.ok{background:var(--ok)}.tag.bad{background:var(--bad)}.tag.warn{background:var(--warn)}
        pre{background:#f6f8fa;border:1px solid var(--line);border-radius:6px;padding:10px;overflow:auto;font-size:12px}
        footer{color:var(--muted);margin:16px 32px 32px;font-size:12px}
        td.url code,td.time{white-space:nowrap;word-break:normal}
        header.accepted{background:#57606a}.incomplete{background:#fff8c5;border:1px solid var(--warn);border-radius:6px;padding:10px 14px;margin:12px 32px}
        .tag.alt{background:#8250df}.tag.new{background:var(--bad)}.tag.unchanged{background:#57606a}.tag.absent{background:var(--ok)}
        h3.new{color:var(--bad)}h3.unchanged{color:var(--muted)}.alternative{margin-top:6px}.muted{color:var(--muted)}
        figure.share{max-width:640px;margin:8px 0 12px}.input{color:var(--muted);margin:4px 32px}
        """
}

/// Charts drawn as inline SVG: no script, no external asset.
enum HTMLCharts {
    static let colors: [LoggedAction: String] = [
        .allow: "#1a7f37", .block: "#cf222e", .upgrade: "#0969da", .error: "#bc4c00", .captured: "#8250df", .other: "#8c959f",
    ]

    /// Stacked bars of decisions per time slot (at most 60 slots over the logs' span), by action.
    static func timeline(_ buckets: TimeBuckets) -> String {
        let width = 640.0, height = 220.0, left = 46.0, right = 10.0, top = 24.0, bottom = 34.0
        guard let first = buckets.minutes.keys.min(), let last = buckets.minutes.keys.max() else {
            return "<p>no records</p>"
        }
        let span = last - first + 1
        let slotMinutes = max(1, (span + 59) / 60)
        let slots = Int((span + slotMinutes - 1) / slotMinutes)
        var stacks = [[Int]](repeating: [Int](repeating: 0, count: LoggedAction.allCases.count), count: slots)
        for (minute, counts) in buckets.minutes {
            let slot = Int((minute - first) / slotMinutes)
            for index in counts.indices { stacks[slot][index] += counts[index] }
        }
        let peak = max(1, stacks.map { $0.reduce(0, +) }.max() ?? 1)
        let plotWidth = width - left - right, plotHeight = height - top - bottom
        let barWidth = plotWidth / Double(slots)
        var svg = "<svg viewBox=\"0 0 \(Int(width)) \(Int(height))\" role=\"img\" aria-label=\"decisions over time\" "
            + "xmlns=\"http://www.w3.org/2000/svg\" font-family=\"system-ui,sans-serif\" font-size=\"11\">"
        // Axes and the peak's gridline.
        svg += "<line x1=\"\(left)\" y1=\"\(top)\" x2=\"\(width - right)\" y2=\"\(top)\" stroke=\"#d0d7de\" stroke-dasharray=\"3 3\"/>"
        svg += "<line x1=\"\(left)\" y1=\"\(top + plotHeight)\" x2=\"\(width - right)\" y2=\"\(top + plotHeight)\" stroke=\"#57606a\"/>"
        svg += "<text x=\"\(left - 6)\" y=\"\(top + 4)\" text-anchor=\"end\" fill=\"#57606a\">\(peak)</text>"
        svg += "<text x=\"\(left - 6)\" y=\"\(top + plotHeight + 4)\" text-anchor=\"end\" fill=\"#57606a\">0</text>"
        for (slot, stack) in stacks.enumerated() {
            var y = top + plotHeight
            let x = left + Double(slot) * barWidth + min(1, barWidth * 0.1)
            for action in LoggedAction.allCases where stack[action.rawValue] > 0 {
                let h = plotHeight * Double(stack[action.rawValue]) / Double(peak)
                y -= h
                svg += "<rect x=\(fmt(x)) y=\(fmt(y)) width=\(fmt(max(1, barWidth - min(2, barWidth * 0.2)))) height=\(fmt(h))"
                    + " fill=\"\(colors[action]!)\"><title>\(stack[action.rawValue]) \(action.name)</title></rect>"
            }
        }
        let startText = Timestamp.text(first * 60_000).prefix(16).replacingOccurrences(of: "T", with: " ")
        let endText = Timestamp.text((first + Int64(slots) * slotMinutes) * 60_000).prefix(16).replacingOccurrences(of: "T", with: " ")
        svg += "<text x=\"\(left)\" y=\"\(height - 16)\" fill=\"#57606a\">\(startText) UTC</text>"
        svg += "<text x=\"\(width - right)\" y=\"\(height - 16)\" text-anchor=\"end\" fill=\"#57606a\">\(endText) UTC</text>"
        svg += "<text x=\"\(left + plotWidth / 2)\" y=\"\(height - 16)\" text-anchor=\"middle\" fill=\"#57606a\">"
            + "\(slotMinutes) min per bar</text>"
        // Legend.
        var legendX = left
        for action in LoggedAction.allCases {
            svg += "<rect x=\(fmt(legendX)) y=\"6\" width=\"10\" height=\"10\" fill=\"\(colors[action]!)\"/>"
            svg += "<text x=\(fmt(legendX + 14)) y=\"15\">\(action.name)</text>"
            legendX += 74
        }
        return svg + "</svg>"
    }

    /// Horizontal bars of records per reason code (the twelve most frequent).
    static func reasons(_ counts: [String: Int]) -> String {
        let rows = counts.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }.prefix(12)
        guard !rows.isEmpty else {
            return "<svg viewBox=\"0 0 640 60\" xmlns=\"http://www.w3.org/2000/svg\" font-family=\"system-ui,sans-serif\" "
                + "font-size=\"13\"><text x=\"10\" y=\"34\" fill=\"#1a7f37\">no reasons: nothing was blocked or failed</text></svg>"
        }
        let width = 640.0, label = 170.0, rowHeight = 22.0, top = 6.0
        let height = top * 2 + rowHeight * Double(rows.count)
        let peak = Double(rows.first!.value)
        var svg = "<svg viewBox=\"0 0 \(Int(width)) \(Int(height))\" role=\"img\" aria-label=\"decisions by reason\" "
            + "xmlns=\"http://www.w3.org/2000/svg\" font-family=\"system-ui,sans-serif\" font-size=\"11\">"
        for (index, row) in rows.enumerated() {
            let y = top + Double(index) * rowHeight
            let barWidth = max(2, (width - label - 60) * Double(row.value) / peak)
            let color = DestinationJudge.proxyReasons.contains(row.key) || row.key.hasPrefix("upstream-")
                || !isATSReason(row.key) ? "#bc4c00" : "#cf222e"
            svg += "<text x=\(fmt(label - 8)) y=\(fmt(y + 15)) text-anchor=\"end\">\(HTMLPage.escape(row.key))</text>"
            svg += "<rect x=\(fmt(label)) y=\(fmt(y + 3)) width=\(fmt(barWidth)) height=\(fmt(rowHeight - 6)) fill=\"\(color)\"/>"
            svg += "<text x=\(fmt(label + barWidth + 6)) y=\(fmt(y + 15)) fill=\"#57606a\">\(row.value)</text>"
        }
        return svg + "</svg>"
    }

    /// One bar split by quantum-secure status, with a legend of counts and percentages.
    static func share(_ counts: [(QuantumStatus, Int)]) -> String {
        let colors: [QuantumStatus: String] = [.postQuantum: "#1a7f37", .classical: "#cf222e", .unknown: "#8c959f"]
        let total = max(1, counts.reduce(0) { $0 + $1.1 })
        let width = 640.0, barHeight = 26.0
        var svg = "<svg viewBox=\"0 0 \(Int(width)) 64\" role=\"img\" aria-label=\"quantum-secure share\" "
            + "xmlns=\"http://www.w3.org/2000/svg\" font-family=\"system-ui,sans-serif\" font-size=\"12\">"
        var x = 0.0
        for (status, count) in counts where count > 0 {
            let w = width * Double(count) / Double(total)
            svg += "<rect x=\(fmt(x)) y=\"4\" width=\(fmt(w)) height=\(fmt(barHeight)) fill=\"\(colors[status]!)\">"
                + "<title>\(count) \(status.rawValue)</title></rect>"
            x += w
        }
        var legendX = 0.0
        for (status, count) in counts {
            let percent = Int((100 * Double(count) / Double(total)).rounded())
            svg += "<rect x=\(fmt(legendX)) y=\"44\" width=\"10\" height=\"10\" fill=\"\(colors[status]!)\"/>"
            svg += "<text x=\(fmt(legendX + 14)) y=\"53\">\(status.rawValue): \(count) (\(percent)%)</text>"
            legendX += 200
        }
        return svg + "</svg>"
    }

    private static func isATSReason(_ reason: String) -> Bool {
        BlockReason(rawValue: reason) != nil && !DestinationJudge.proxyReasons.contains(reason)
    }

    private static func fmt(_ value: Double) -> String {
        "\"\((value * 10).rounded() / 10)\""
    }
}
