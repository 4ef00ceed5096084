import ATSPolicy
import POSIX

/// Builds the record as a JSON object (the journal's fields and the tests read this form).
package struct JSONObjectFields: LogFieldVisitor {
    package var fields: [(String, JSONValue)] = []

    package mutating func string(_ name: StaticString, _ value: String?) { add(name, .optional(value)) }
    package mutating func strings(_ name: StaticString, _ values: [String]) { add(name, .array(values.map(JSONValue.string))) }
    package mutating func int(_ name: StaticString, _ value: Int?) { add(name, value.map(JSONValue.int) ?? .null) }
    package mutating func bool(_ name: StaticString, _ value: Bool?) { add(name, value.map(JSONValue.bool) ?? .null) }
    package mutating func time(_ name: StaticString, _ value: Double) { add(name, .string(DecisionRecord.timestamp(value))) }
    package mutating func milliseconds(_ name: StaticString, _ value: Double) { add(name, .double((value * 1000).rounded() / 1000)) }
    package mutating func address(_ name: StaticString, _ value: SocketAddress) { add(name, .string(value.description)) }
    package mutating func host(_ name: StaticString, _ value: Host?) { add(name, .optional(value?.description)) }
    package mutating func ip(_ name: StaticString, _ value: IPAddress?) { add(name, .optional(value?.description)) }

    package mutating func replayed(_ name: String, _ value: JSONValue) { fields.append((name, value)) }

    private mutating func add(_ name: StaticString, _ value: JSONValue) { fields.append((name.description, value)) }

    /// The fields as journald fields: `ATS_` and the name in upper case, a string as it is and any
    /// other value as its JSON text; nulls are left out.
    package var journalFields: [(String, String)] {
        fields.compactMap { name, value in
            let text: String
            switch value {
            case .null: return nil
            case .string(let string): text = string
            default: text = value.compact
            }
            return ("ATS_" + name.uppercased(), text)
        }
    }
}

/// Writes the record as one compact JSON object straight into a byte buffer: the same text as
/// `JSONObjectFields` rendered by `JSONValue.appendCompact`, without building the tree, the
/// timestamp, address and number strings in between (a third of the proxy's own time per tunnel).
package struct JSONLineWriter: LogFieldVisitor {
    private(set) var bytes: [UInt8]
    private var fieldCount = 0

    /// Takes `buffer` over (leaving it empty, so the bytes stay uniquely referenced and are never
    /// copied) and starts an object at its end; `finish()` hands it back.
    package init(taking buffer: inout [UInt8]) {
        bytes = []
        swap(&bytes, &buffer)
        bytes.append(UInt8(ascii: "{"))
    }

    /// Closes the object and hands the buffer back.
    package consuming func finish() -> [UInt8] {
        bytes.append(UInt8(ascii: "}"))
        return bytes
    }

    package mutating func string(_ name: StaticString, _ value: String?) {
        key(name)
        guard let value else { return null() }
        JSONValue.appendString(value, to: &bytes)
    }

    package mutating func strings(_ name: StaticString, _ values: [String]) {
        key(name)
        bytes.append(UInt8(ascii: "["))
        for (index, value) in values.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            JSONValue.appendString(value, to: &bytes)
        }
        bytes.append(UInt8(ascii: "]"))
    }

    package mutating func int(_ name: StaticString, _ value: Int?) {
        key(name)
        guard let value else { return null() }
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        appendDecimal(value.magnitude)
    }

    package mutating func bool(_ name: StaticString, _ value: Bool?) {
        key(name)
        guard let value else { return null() }
        literal(value ? "true" : "false")
    }

    package mutating func time(_ name: StaticString, _ value: Double) {
        key(name)
        bytes.append(UInt8(ascii: "\""))
        LogText.appendTimestamp(value, to: &bytes)
        bytes.append(UInt8(ascii: "\""))
    }

    package mutating func milliseconds(_ name: StaticString, _ value: Double) {
        // Swift prints a Double rounded to three decimals with its shortest digits and at least one
        // decimal (`12.0`, `0.25`, `1.375`); so does this, from the whole number of microseconds.
        let micros = (value * 1000).rounded()
        key(name)
        guard micros.magnitude < 1e15 else {
            // Never a real duration; kept identical to JSONValue's rendering all the same.
            return micros.isFinite ? bytes.append(contentsOf: String(micros / 1000).utf8) : null()
        }
        let total = Int(micros)
        if micros.sign == .minus { bytes.append(UInt8(ascii: "-")) } // -0.0 too, as Swift prints it
        appendDecimal(total.magnitude / 1000)
        bytes.append(UInt8(ascii: "."))
        var fraction = total.magnitude % 1000
        guard fraction != 0 else { return bytes.append(UInt8(ascii: "0")) }
        var width = 3
        while fraction % 10 == 0 { fraction /= 10; width -= 1 }
        appendDecimal(fraction, width: width)
    }

    package mutating func address(_ name: StaticString, _ value: SocketAddress) {
        key(name)
        bytes.append(UInt8(ascii: "\""))
        if case .v4 = value.ip {
            appendIP(value.ip)
        } else {
            bytes.append(UInt8(ascii: "["))
            appendIP(value.ip)
            bytes.append(UInt8(ascii: "]"))
        }
        bytes.append(UInt8(ascii: ":"))
        appendDecimal(UInt(value.port))
        bytes.append(UInt8(ascii: "\""))
    }

    package mutating func host(_ name: StaticString, _ value: Host?) {
        switch value {
        case .name(let text)?: string(name, text)
        case .address(let address)?: ip(name, address)
        case nil: string(name, nil)
        }
    }

    package mutating func ip(_ name: StaticString, _ value: IPAddress?) {
        key(name)
        guard let value else { return null() }
        bytes.append(UInt8(ascii: "\""))
        appendIP(value)
        bytes.append(UInt8(ascii: "\""))
    }

    package mutating func replayed(_ name: String, _ value: JSONValue) {
        if fieldCount > 0 { bytes.append(UInt8(ascii: ",")) }
        fieldCount += 1
        JSONValue.appendString(name, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
        value.appendCompact(to: &bytes)
    }

    // MARK: Pieces

    private mutating func key(_ name: StaticString) {
        if fieldCount > 0 { bytes.append(UInt8(ascii: ",")) }
        fieldCount += 1
        bytes.append(UInt8(ascii: "\""))
        literal(name)
        literal("\":")
    }

    private mutating func null() { literal("null") }

    private mutating func literal(_ text: StaticString) {
        bytes.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// An IP address as `IPAddress.description` spells it (dotted quad, or RFC 5952).
    private mutating func appendIP(_ ip: IPAddress) {
        switch ip {
        case .v4(let value):
            for shift in stride(from: 24, through: 0, by: -8) {
                appendDecimal(UInt((value >> UInt32(shift)) & 0xFF))
                if shift > 0 { bytes.append(UInt8(ascii: ".")) }
            }
        case .v6:
            bytes.append(contentsOf: ip.description.utf8)
        }
    }

    private mutating func appendDecimal(_ value: UInt, width: Int = 1) {
        LogText.appendDecimal(value, width: width, to: &bytes)
    }
}
