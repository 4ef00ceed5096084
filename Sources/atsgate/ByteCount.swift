import ArgumentParser

/// A size in bytes as an operator writes it: `65536`, `64K`, `16M`, `1G` (powers of 1024).
struct ByteCount: ExpressibleByArgument, Equatable {
    var bytes: Int

    init(bytes: Int) { self.bytes = bytes }

    init?(argument: String) {
        let text = argument.uppercased()
        let shifts: [Character: Int] = ["K": 10, "M": 20, "G": 30]
        var digits = Substring(text)
        var shift = 0
        if let last = digits.last, let unit = shifts[last] {
            shift = unit
            digits = digits.dropLast()
        }
        guard !digits.isEmpty, digits.allSatisfy(\.isASCII), let value = Int(digits), value >= 0,
              value <= Int.max >> shift else { return nil }
        bytes = value << shift
    }

    var defaultValueDescription: String { "\(bytes)" }
}
