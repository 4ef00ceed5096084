import ATSPolicy

extension Report {
    /// One JSON document with everything the other formats show.
    public var json: JSONValue { json(apps: .array(apps.map(\.json))) }

    func json(apps: JSONValue) -> JSONValue {
        .object([
            ("records", .int(summary.records)),
            ("profile", .string(options.profile.rawValue)),
            ("would_block", .bool(wouldBlock)),
            ("fails", .bool(fails)),
            ("complete", .bool(!isIncomplete)),
            ("missing_decisions", .int(missingDecisions)),
            ("require_quantum_secure", .bool(settings.requireQuantumSecure)),
            ("baseline", settings.baseline.map { baseline in
                let counts = baselineCounts
                return .object([
                    ("path", .string(baseline.path)),
                    ("new", .int(counts.new)),
                    ("unchanged", .int(counts.unchanged)),
                    ("absent", .int(counts.absent)),
                    ("absent_elsewhere", .array(absentElsewhere.map(\.json))),
                ])
            } ?? .null),
            ("inputs", .array(summary.inputs.map { input in
                .object([
                    ("path", .string(input.path)),
                    ("kind", .string(input.kind.rawValue)),
                    ("lines", .int(input.lines)),
                    ("records", .int(input.records)),
                    ("not_records", .int(input.notRecords)),
                    ("missing_fields", .int(input.missingFields)),
                    ("skipped", .object(input.skipped.sorted { $0.key < $1.key }.map { ($0.key, .int($0.value)) })),
                    ("first_skipped", input.firstSkipped.map { .object([("line", .int($0.line)), ("why", .string($0.why))]) } ?? .null),
                    ("creator", .optional(input.creator)),
                    ("log_overflow_records", .int(input.overflowRecords)),
                    ("dropped", .int(input.dropped)),
                ] + (summary.hasLedger ? [("ledger_records", .int(input.ledgerRecords))] : []))
            })),
        ] + (summary.hasLedger ? [
            // Only for logs with a run ledger: older logs' reports stay as they were.
            ("incomplete_runs", .int(incompleteRuns.count)),
            ("runs", runsJSON),
            ("run_notes", .array(runNotes.map(JSONValue.string))),
        ] : []) + [
            ("system", .array(system.map { traffic in
                .object([
                    ("url", .string(traffic.url)),
                    ("records", .int(traffic.records)),
                    ("bytes_up", .int(traffic.bytesUp)),
                    ("bytes_down", .int(traffic.bytesDown)),
                    ("devices", .object(traffic.devices.sorted { $0.key < $1.key }.map { ($0.key, .int($0.value)) })),
                    ("reasons", .object(traffic.reasons.sorted { $0.key < $1.key }.map { ($0.key, .int($0.value)) })),
                ])
            })),
            ("apps", apps),
        ])
    }
}

extension Report {
    /// The same document as `json.pretty`, as one String.
    public var jsonText: String {
        var out = ""
        writeJSON { out += $0 }
        return out
    }

    /// The same document as `json.pretty`, handed to `write` one destination at a time: the tree and
    /// text of a whole report of thousands of destinations would cost more memory than reading the logs.
    public func writeJSON(_ write: (String) -> Void) {
        var fields = json(apps: .array([])).fields
        fields.removeLast()
        write(String(JSONValue.object(fields).pretty.dropLast(2)) + ",\n  \"apps\": [")
        for (index, app) in apps.enumerated() {
            write(index == 0 ? "\n    " : ",\n    ")
            // The app's fields around a marker where its destinations go.
            let shell = JSONValue.indent(app.json(destinations: .string("\u{1}")).pretty, by: 4)
            let marker = shell.range(of: "\"\\u0001\"")!
            write(shell[..<marker.lowerBound] + "[")
            for (position, destination) in app.destinations.enumerated() {
                write((position == 0 ? "\n" : ",\n") + String(repeating: " ", count: 8)
                      + JSONValue.indent(destination.json.pretty, by: 8))
            }
            write((app.destinations.isEmpty ? "]" : "\n      ]") + shell[marker.upperBound...])
        }
        write(apps.isEmpty ? "]\n}" : "\n  ]\n}")
    }
}

extension JSONValue {
    /// The object's fields (empty for other values).
    var fields: [(String, JSONValue)] {
        if case .object(let fields) = self { return fields }
        return []
    }

    /// Pretty JSON text moved right by `spaces` on every line after the first.
    static func indent(_ text: String, by spaces: Int) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count + text.utf8.count / 8)
        for byte in text.utf8 {
            bytes.append(byte)
            if byte == UInt8(ascii: "\n") { bytes.append(contentsOf: repeatElement(UInt8(ascii: " "), count: spaces)) }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

extension AppReport {
    var json: JSONValue { json(destinations: .array(destinations.map(\.json))) }

    func json(destinations: JSONValue) -> JSONValue {
        .object([
            ("app", .string(app)),
            ("policy", .string(policy.origin)),
            ("policy_note", .optional(policyNote)),
            ("records", .int(records)),
            ("actions", .object(LoggedAction.allCases.map { ($0.name, .int(count($0))) })),
            ("reasons", .object(reasons.map { ($0.0, .int($0.1)) })),
            ("without_destination", .object(undirected.sorted { $0.key < $1.key }.map { ($0.key, .int($0.value)) })),
            ("blocked", .int(blocked.count)),
            ("not_checked", .int(notChecked.count)),
            ("devices", .object(devices.map { ($0.0, .int($0.1)) })),
            ("refused_by_app", .array(refusedByApp.map { destination in
                .object([
                    ("url", .string(destination.traffic.url)),
                    ("alerts", .object(destination.traffic.clientRefusals.sorted { $0.key < $1.key }.map { ($0.key, .int($0.value)) })),
                    ("devices", .array(destination.traffic.deviceNames.map(JSONValue.string))),
                ])
            })),
            ("outside_system_proxy", .array(outsideSystemProxy.map { outside in
                .object([("device", .string(outside.device)), ("connections", .int(outside.connections)),
                         ("destinations", .array(outside.destinations.map(JSONValue.string))),
                         ("summary", .string(outside.summary))])
            })),
            ("destinations", destinations),
            ("unused", .array(unused.enumerated().map { index, key in
                .object([
                    ("key_path", .array(key.change.keyPath.map(JSONValue.string))),
                    ("change", .string(key.change.summary)),
                    ("note", .string(key.note)),
                    ("baseline", .optional(index < unusedBaseline.count ? unusedBaseline[index].rawValue : nil)),
                ])
            })),
            ("absent", .array(absent.map(\.json))),
            ("quantum_secure", .object([
                ("recorded", .bool(recordsKeyExchange)),
                ("post_quantum", .array(quantum(.postQuantum).map { .string($0.traffic.url) })),
                ("classical", .array(quantum(.classical).map { destination in
                    .object([
                        ("url", .string(destination.traffic.url)),
                        ("groups", .array(destination.traffic.keyExchangeGroups.map(JSONValue.string))),
                        ("baseline", .optional(destination.quantumBaseline?.rawValue)),
                    ])
                })),
                ("unknown", .array(quantum(.unknown).map { .string($0.traffic.url) })),
            ])),
            ("suggestion", .object([
                ("proven", .bool(suggestion.isProven)),
                ("added", .array(suggestion.added.map(\.json))),
                ("removed", .array(suggestion.removed.map { $0.change.json })),
                ("kept_unused", .bool(suggestion.keptUnused)),
                ("unproven", .array(suggestion.unproven.map { item in
                    .object([("url", .string(item.url)), ("reasons", .array(item.reasons.map(JSONValue.string)))])
                })),
            ])),
        ])
    }
}

extension DestinationReport {
    var json: JSONValue {
        var fields: [(String, JSONValue)] = [
            ("url", .string(traffic.url)),
            ("scheme", .string(traffic.scheme)),
            ("host", .string(traffic.host)),
            ("port", .int(traffic.port)),
            ("records", .int(traffic.records)),
            ("actions", .object(LoggedAction.allCases.compactMap { action in
                traffic.count(action) == 0 ? nil : (action.name, .int(traffic.count(action)))
            })),
            ("reasons", .object(traffic.reasons.sorted { $0.key < $1.key }.map { ($0.key, .int($0.value)) })),
            ("first", .string(Timestamp.text(traffic.firstTime))),
            ("last", .string(Timestamp.text(traffic.lastTime))),
            ("tls_versions", .array(traffic.tlsVersions.map(JSONValue.string))),
            ("ciphers", .array(traffic.ciphers.map(JSONValue.string))),
            ("logged_exceptions", .array(traffic.exceptions.sorted().map(JSONValue.string))),
            ("certificate_findings", .array(traffic.certificateFindings.sorted().map(JSONValue.string))),
            ("report_only_blocks", .int(traffic.reportOnlyBlocks)),
            ("devices", .object(traffic.devices.sorted { $0.key < $1.key }.map { ($0.key, .int($0.value)) })),
            ("client_refusals", .object(traffic.clientRefusals.sorted { $0.key < $1.key }.map { ($0.key, .int($0.value)) })),
            ("contexts", .array(traffic.contexts.map { .string($0.rawValue) })),
            ("not_checked", .optional(notChecked)),
            ("quantum", .optional(quantum?.rawValue)),
            ("key_exchanges", .array(traffic.keyExchanges.map { exchange -> (String, JSONValue) in
                // Sorted by group, then offer (false, true, unknown), for a stable document.
                let order = "\(exchange.group ?? "")\u{0}\(exchange.pqOffered.map { $0 ? 1 : 0 } ?? 2)"
                return (order, .object([("group", .optional(exchange.group)),
                                        ("pq_offered", exchange.pqOffered.map(JSONValue.bool) ?? .null)]))
            }.sorted { $0.0 < $1.0 }.map(\.1))),
        ]
        if let decision {
            fields.append(("exception", .optional(decision.exception?.entry.displayName)))
            fields.append(("ats", .string(decision.ats.rawValue)))
            fields.append(("rule", .string(decision.rule)))
            fields.append(("class", .string(decision.destination.hostClass.rawValue)))
            fields.append(("direct", .bool(decision.direct)))
        }
        fields.append(("blocked", .bool(isBlocked)))
        fields.append(("baseline", .optional(baseline?.rawValue)))
        fields.append(("findings", .array(findings.map { finding in
            .object([("reason", .string(finding.reason)), ("detail", .string(finding.detail)), ("ats", .bool(finding.isATS))])
        })))
        if let fix {
            fields.append(("fix", .object([
                ("changes", .array(fix.changes.map(\.json))),
                ("scope", .optional(fix.scope)),
                ("justification", .bool(fix.needsJustification)),
                ("verified", .bool(fix.verified)),
                ("alternative", fix.alternative.map { alternative in
                    .object([
                        ("parent", .string(alternative.parent)),
                        ("changes", .array(alternative.changes.map(\.json))),
                        ("hosts", .array(alternative.hosts.map(JSONValue.string))),
                        ("destinations", .int(alternative.destinations)),
                        ("others", .int(alternative.others)),
                        ("opens", .string(alternative.opens)),
                    ])
                } ?? .null),
                ("no_key", .array(fix.unfixable.map { item in
                    .object([("reason", .string(item.finding.reason)), ("advice", .string(item.advice))])
                })),
            ])))
        } else {
            fields.append(("fix", .null))
        }
        return .object(fields)
    }
}

extension PolicyChange {
    var json: JSONValue {
        var fields: [(String, JSONValue)] = [
            ("key_path", .array(keyPath.map(JSONValue.string))),
            ("change", .string(summary)),
        ]
        switch self {
        case .setEntryKey(_, _, let value), .setGlobal(_, let value): fields.append(("value", value.json))
        default: fields.append(("value", .null))
        }
        fields.append(("justification", .bool(needsJustification)))
        return .object(fields)
    }
}

extension PlistValue {
    var json: JSONValue {
        switch self {
        case .bool(let flag): .bool(flag)
        case .integer(let number): .int(Int(number))
        case .real(let number): .double(number)
        case .string(let text): .string(text)
        case .date(let date): .string(date.formatted(.iso8601))
        case .data(let data): .string(data.base64EncodedString())
        case .array(let items): .array(items.map(\.json))
        case .dictionary(let items): .object(items.sorted { $0.key < $1.key }.map { ($0.key, $0.value.json) })
        case .null: .null
        }
    }
}

import Foundation
import TrafficLogs

extension AbsentFinding {
    var json: JSONValue {
        .object([
            ("rule", .string(rule)),
            ("app", .string(app)),
            ("subject", .string(subject)),
            ("reasons", .array(reasons.map(JSONValue.string))),
            ("summary", .string(summary)),
        ])
    }
}
