// libFuzzer target: PolicyLoader.parse over a policy file's bytes (XML or binary plist, JSON), then
// what atsgate does with a loaded policy: interpret it, decide loads with it, lint it.
import Foundation
@testable import ATSLint
@testable import ATSPolicy

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPolicyLoader(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = data.map { Data(bytes: $0, count: size) } ?? Data()
    let source: PolicySource
    do {
        source = try PolicyLoader.parse(data: bytes, origin: "fuzz.plist")
    } catch {
        // One line for the log and the journal, whatever the file held.
        fuzzCheck(!error.description.unicodeScalars.contains { $0.properties.generalCategory == .control },
                  "a load error with a line break or control character: \(error.description.debugDescription)")
        // Where the text breaks is a place in the text.
        if let position = error.position {
            let lines = bytes.reduce(1) { $0 + ($1 == 0x0A ? 1 : 0) }
            fuzzCheck(position.line >= 1 && position.line <= lines && position.column >= 1,
                      "a load error at \(position), outside a text of \(lines) lines")
        }
        if let offset = error.byteOffset {
            fuzzCheck(offset >= 0 && offset <= bytes.count, "a load error at byte \(offset) of \(bytes.count)")
        }
        return 0
    }
    fuzzCheck(source.format != nil, "a policy loaded without a format")
    if source.format != .binaryPlist { checkOutline(bytes, source) }

    // Decisions for the hosts the policy names, and a few it does not.
    let policy = Policy(source)
    let engine = DecisionEngine(policy: policy)
    var hosts = ["example.com", "localhost", "10.0.0.1", "[::1]", "a.b.c.example.org"]
    for key in Array(policy.exceptionDomains.keys.prefix(8)) + Array(policy.pinnedDomains.keys.prefix(4)) {
        hosts += [key, "sub.\(key)"]
    }
    for host in hosts {
        for scheme in ["http", "https"] {
            guard let destination = try? Destination.parse(url: "\(scheme)://\(host)/") else { continue }
            for context in LoadContext.allCases {
                let decision = engine.decide(destination, context: context)
                _ = decision.message
                _ = decision.requirements.json
                fuzzCheck(engine.decide(destination, context: context).action == decision.action,
                          "two decisions for \(destination)")
            }
        }
    }

    let text = source.format == .binaryPlist ? nil : String(decoding: bytes, as: UTF8.self)
    let result = Linter().lintFile(source, text: text)
    _ = LintReport(profile: .ios17, files: [result]).json
    checkDuplicateKeyFindings(result.findings, text: text)

    // The dictionary, written as a binary plist inside an Info.plist, loads back as itself.
    guard !containsNullOrNaN(.dictionary(source.dictionary)) else { return 0 }
    let encoder = PropertyListEncoder()
    encoder.outputFormat = .binary
    guard let written = try? encoder.encode(["NSAppTransportSecurity": EncodablePlist(.dictionary(source.dictionary))]) else {
        fuzzFail("a loaded dictionary could not be written as a binary plist")
    }
    do {
        let again = try PolicyLoader.parse(data: written, origin: "again.plist")
        fuzzCheck(again.root == .infoPlist && again.dictionary == source.dictionary,
                  "the dictionary changed on its way through a binary plist")
    } catch {
        fuzzFail("a loaded dictionary written as a binary plist does not load: \(error)")
    }
    return 0
}

/// Foundation read the text, so the outline reads it too, and following each key to the value the decoder
/// kept (the last of duplicates in a plist, the first in JSON) gives the loaded dictionary back.
func checkOutline(_ bytes: Data, _ source: PolicySource) {
    let outline: PlistOutline
    do {
        outline = try PlistOutline(bytes: [UInt8](bytes), format: source.format!)
    } catch {
        fuzzFail("Foundation read a document the outline refuses at byte \(error.offset): \(error.problem)")
    }
    var node = outline.root
    if source.root == .infoPlist {
        guard let ats = outline.child(of: node, key: "NSAppTransportSecurity") else {
            fuzzCheck(source.dictionary.isEmpty, "an ATS dictionary the outline does not find")
            return
        }
        node = ats.value
    }
    guard !containsNullOrNaN(.dictionary(source.dictionary)) else { return }
    fuzzCheck(kept(node, in: outline) == .dictionary(source.dictionary),
              "the outline's kept values differ from the loaded dictionary")
}

/// A node's value with each dictionary key followed to the value the decoder kept.
func kept(_ node: Int, in outline: PlistOutline) -> PlistValue? {
    switch outline.nodes[node].kind {
    case .scalar:
        return outline.value(of: node)
    case .array:
        var values: [PlistValue] = []
        for element in outline.nodes[node].elements {
            guard let value = kept(element, in: outline) else { return nil }
            values.append(value)
        }
        return .array(values)
    case .dictionary:
        var values: [String: PlistValue] = [:]
        for entry in outline.nodes[node].entries where values[entry.key] == nil {
            guard let child = outline.child(of: node, key: entry.key), let value = kept(child.value, in: outline) else {
                return nil
            }
            values[entry.key] = value
        }
        return .dictionary(values)
    }
}

/// A key written twice is reported at a line of the text, names another line (the one used), and says both.
func checkDuplicateKeyFindings(_ findings: [LintFinding], text: String?) {
    let lines = text.map { $0.utf8.reduce(1) { $0 + ($1 == 0x0A ? 1 : 0) } } ?? 0
    for finding in findings where finding.rule == .duplicateKey || finding.rule == .duplicateKeySameValue {
        guard let line = finding.line, let used = finding.related.first?.line else {
            fuzzFail("a duplicate-key finding without its two lines: \(finding.message)")
        }
        // Two keys on one line name that line twice.
        fuzzCheck(text != nil && (1...lines).contains(line) && (1...lines).contains(used),
                  "a duplicate-key finding at lines \(line) and \(used) of \(lines)")
        fuzzCheck(finding.message.contains("line \(line)") && finding.message.contains("line \(used)"),
                  "a duplicate-key message without its lines: \(finding.message)")
    }
}

/// JSON `null` has no plist form, and NaN is not equal to itself.
func containsNullOrNaN(_ value: PlistValue) -> Bool {
    switch value {
    case .null: true
    case .real(let real): real.isNaN
    case .array(let values): values.contains(where: containsNullOrNaN)
    case .dictionary(let values): values.values.contains(where: containsNullOrNaN)
    default: false
    }
}

/// A PlistValue written back with its type: the loader only reads them.
struct EncodablePlist: Encodable {
    var value: PlistValue
    init(_ value: PlistValue) { self.value = value }

    private struct Key: CodingKey {
        var stringValue: String
        init(stringValue: String) { self.stringValue = stringValue }
        var intValue: Int? { nil }
        init?(intValue: Int) { nil }
    }

    func encode(to encoder: any Encoder) throws {
        switch value {
        case .array(let values):
            var list = encoder.unkeyedContainer()
            for value in values { try list.encode(EncodablePlist(value)) }
        case .dictionary(let values):
            var keyed = encoder.container(keyedBy: Key.self)
            for (key, value) in values { try keyed.encode(EncodablePlist(value), forKey: Key(stringValue: key)) }
        default:
            var single = encoder.singleValueContainer()
            switch value {
            case .bool(let bool): try single.encode(bool)
            case .integer(let integer): try single.encode(integer)
            case .real(let real): try single.encode(real)
            case .string(let string): try single.encode(string)
            case .date(let date): try single.encode(date)
            case .data(let data): try single.encode(data)
            case .null, .array, .dictionary: try single.encodeNil()
            }
        }
    }
}
