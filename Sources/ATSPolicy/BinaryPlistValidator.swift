/// A structural check of a whole `bplist00` document (BinaryPlistCheck only locates a failure) before Foundation reads it: Foundation's binary
/// plist scanner traps (it does not throw) on some malformed files, such as a dictionary whose key is
/// not a string (found by the PolicyLoader fuzz target), and a policy file must never crash `lint`,
/// `check` or a daemon's reload. Every object the top object reaches is checked once: its marker,
/// its length within the object area, its references within the object table, dictionary keys that
/// are strings, and no container that contains itself.
enum BinaryPlistValidator {
    static let maximumDepth = 512

    /// nil when the document is well formed; otherwise what is wrong, in words.
    static func problem(_ bytes: [UInt8]) -> String? {
        let header = Array("bplist00".utf8)
        guard bytes.count >= header.count + 32, Array(bytes.prefix(header.count)) == header else {
            return "shorter than a binary property list's header and trailer"
        }
        let trailer = bytes.count - 32
        let offsetSize = Int(bytes[trailer + 6]), referenceSize = Int(bytes[trailer + 7])
        guard (1...8).contains(offsetSize), (1...8).contains(referenceSize),
              let count = uint(bytes, trailer + 8, 8), let top = uint(bytes, trailer + 16, 8),
              let table = uint(bytes, trailer + 24, 8) else {
            return "its trailer is malformed"
        }
        guard count >= 1, count < UInt64(bytes.count), top < count, table >= UInt64(header.count),
              table <= UInt64(trailer), UInt64(trailer) - table >= count * UInt64(offsetSize) else {
            return "its trailer points outside the file"
        }
        var checker = Checker(bytes: bytes, objectCount: Int(count), offsetSize: offsetSize, referenceSize: referenceSize,
                              table: Int(table))
        return checker.check(Int(top), depth: 0)
    }

    /// A big-endian unsigned integer of `size` bytes at `at`; nil when it does not fit the file.
    static func uint(_ bytes: [UInt8], _ at: Int, _ size: Int) -> UInt64? {
        guard at >= 0, size >= 1, size <= 8, at + size <= bytes.count else { return nil }
        var value: UInt64 = 0
        for index in at..<(at + size) { value = value << 8 | UInt64(bytes[index]) }
        return value
    }

    private struct Checker {
        let bytes: [UInt8]
        let objectCount: Int
        let offsetSize: Int
        let referenceSize: Int
        let table: Int
        /// 0: not seen, 1: being checked (on the path from the top), 2: checked.
        var state: [UInt8]

        init(bytes: [UInt8], objectCount: Int, offsetSize: Int, referenceSize: Int, table: Int) {
            self.bytes = bytes
            self.objectCount = objectCount
            self.offsetSize = offsetSize
            self.referenceSize = referenceSize
            self.table = table
            state = [UInt8](repeating: 0, count: objectCount)
        }

        func offset(of object: Int) -> Int? {
            guard let value = uint(bytes, table + object * offsetSize, offsetSize), value >= 8, value < UInt64(table) else {
                return nil
            }
            return Int(value)
        }

        /// The object's marker and, for a sized object, its count and where its contents start.
        func sized(at start: Int) -> (count: Int, contents: Int)? {
            let low = Int(bytes[start] & 0x0F)
            guard low == 0x0F else { return (low, start + 1) }
            guard start + 1 < table, bytes[start + 1] & 0xF0 == 0x10 else { return nil }
            let size = 1 << Int(bytes[start + 1] & 0x0F)
            guard size <= 8, let value = uint(bytes, start + 2, size), value <= UInt64(Int.max) else { return nil }
            return (Int(value), start + 2 + size)
        }

        func fits(_ contents: Int, _ length: Int) -> Bool { length >= 0 && contents <= table && length <= table - contents }

        func isString(_ object: Int) -> Bool {
            guard let start = offset(of: object) else { return false }
            let kind = bytes[start] >> 4
            return kind == 0x5 || kind == 0x6
        }

        mutating func check(_ object: Int, depth: Int) -> String? {
            guard object < objectCount else { return "an object reference is outside the object table" }
            switch state[object] {
            case 2: return nil
            case 1: return "a container contains itself"
            default: break
            }
            guard depth <= BinaryPlistValidator.maximumDepth else { return "nested deeper than \(BinaryPlistValidator.maximumDepth) levels" }
            guard let start = offset(of: object) else { return "an object's offset is outside the object area" }
            let marker = bytes[start]
            let low = Int(marker & 0x0F)
            state[object] = 1
            defer { state[object] = 2 }
            switch marker >> 4 {
            case 0x0:
                guard [0x0, 0x8, 0x9, 0xF].contains(low) else { return "an unknown marker 0x\(hex(marker))" }
            case 0x1:
                guard low <= 4, fits(start + 1, 1 << low) else { return "an integer runs past the object area" }
            case 0x2:
                guard low == 2 || low == 3, fits(start + 1, 1 << low) else { return "a real is malformed" }
            case 0x3:
                guard marker == 0x33, fits(start + 1, 8) else { return "a date is malformed" }
            case 0x4, 0x5, 0x6, 0x8:
                guard let (count, contents) = sized(at: start) else { return "an object's length is malformed" }
                let length = count.multipliedReportingOverflow(by: marker >> 4 == 0x6 ? 2 : 1)
                let size = marker >> 4 == 0x8 ? low + 1 : length.partialValue
                guard !length.overflow, fits(contents, size) else { return "an object runs past the object area" }
            case 0xA, 0xC, 0xD:
                guard let (count, contents) = sized(at: start) else { return "a container's length is malformed" }
                let isDictionary = marker >> 4 == 0xD
                let references = count.multipliedReportingOverflow(by: isDictionary ? 2 : 1)
                let length = references.partialValue.multipliedReportingOverflow(by: referenceSize)
                guard !references.overflow, !length.overflow, fits(contents, length.partialValue) else {
                    return "a container runs past the object area"
                }
                for index in 0..<references.partialValue {
                    guard let reference = uint(bytes, contents + index * referenceSize, referenceSize),
                          reference < UInt64(objectCount) else {
                        return "an object reference is outside the object table"
                    }
                    if isDictionary, index < count, !isString(Int(reference)) {
                        return "a dictionary key is not a string"
                    }
                    if let problem = check(Int(reference), depth: depth + 1) { return problem }
                }
            default:
                return "an unknown marker 0x\(hex(marker))"
            }
            return nil
        }

        func hex(_ byte: UInt8) -> String {
            let digits = Array("0123456789abcdef")
            return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]])
        }
    }
}
