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
        return 0
    }
    fuzzCheck(source.format != nil, "a policy loaded without a format")

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
