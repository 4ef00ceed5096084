import Testing
@testable import ATSPolicy

/// JSON text as the log and `check` write it: escapes, order, and the same bytes either way.
@Suite struct JSONValueTests {
    static let value: JSONValue = .object([
        ("plain", "api.example.com"), ("quote", "say \"hi\"\\now"), ("control", "line\nnext\ttab\u{01}"),
        ("unicode", "bücher.example ✓"), ("n", .int(-3)), ("x", .double(1.5)), ("b", true), ("z", nil),
        ("list", .array(["a", .array([])])), ("empty", .object([])),
    ])

    @Test func compactTextEscapesWhatJSONRequires() {
        #expect(Self.value.compact == #"{"plain":"api.example.com","quote":"say \"hi\"\\now","control":"line\nnext\ttab\u0001","unicode":"bücher.example ✓","n":-3,"x":1.5,"b":true,"z":null,"list":["a",[]],"empty":{}}"#)
    }

    @Test func theLogsBytesAreTheSameText() {
        var bytes: [UInt8] = Array("prefix ".utf8)
        Self.value.appendCompact(to: &bytes)
        #expect(bytes == Array(("prefix " + Self.value.compact).utf8))
    }
}
