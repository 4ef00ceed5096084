/// An open-addressing hash table from host names to values, looked up by UTF-8 bytes.
///
/// The subdomain walk (R7) looks up every suffix of a host; hashing bytes directly and comparing with
/// memcmp avoids building a String or hashing a Substring for each suffix.
package struct NameTable<Value: Sendable>: Sendable {
    private var bytes: [UInt8] = []
    private var starts: [Int] = []
    private var lengths: [Int] = []
    private var hashes: [UInt64] = []
    private var values: [Value] = []
    /// Index into the arrays above plus one; 0 marks an empty slot.
    private var slots: [Int32]
    private var mask: Int

    init(_ entries: some Collection<(key: String, value: Value)>) {
        var capacity = 16
        while capacity < entries.count * 2 { capacity <<= 1 }
        slots = Array(repeating: 0, count: capacity)
        mask = capacity - 1
        for (key, value) in entries { insert(key, value) }
    }

    var isEmpty: Bool { values.isEmpty }

    private mutating func insert(_ key: String, _ value: Value) {
        let keyBytes = Array(key.utf8)
        let hash = keyBytes.withUnsafeBufferPointer { NameTable.hash($0) }
        var slot = Int(truncatingIfNeeded: hash) & mask
        while slots[slot] != 0 {
            let index = Int(slots[slot]) - 1
            if hashes[index] == hash, bytes[starts[index]..<(starts[index] + lengths[index])].elementsEqual(keyBytes) {
                values[index] = value
                return
            }
            slot = (slot + 1) & mask
        }
        starts.append(bytes.count)
        lengths.append(keyBytes.count)
        bytes.append(contentsOf: keyBytes)
        hashes.append(hash)
        values.append(value)
        slots[slot] = Int32(values.count)
    }

    /// The value for the name spelled by `key`.
    func lookup(_ key: UnsafeBufferPointer<UInt8>) -> Value? {
        let hash = NameTable.hash(key)
        var slot = Int(truncatingIfNeeded: hash) & mask
        return bytes.withUnsafeBufferPointer { stored in
            while true {
                let marker = slots[slot]
                if marker == 0 { return nil }
                let index = Int(marker) - 1
                if hashes[index] == hash, lengths[index] == key.count,
                   bytesEqual(stored.baseAddress.map { $0 + starts[index] }, key.baseAddress, key.count) {
                    return values[index]
                }
                slot = (slot + 1) & mask
            }
        }
    }

    /// FNV-1a with a final avalanche; keys are short ASCII names.
    @inline(__always)
    private static func hash(_ key: UnsafeBufferPointer<UInt8>) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in key { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        hash ^= hash >> 29
        hash = hash &* 0xbf58_476d_1ce4_e5b9
        return hash ^ (hash >> 32)
    }
}

@inline(__always)
private func bytesEqual(_ a: UnsafePointer<UInt8>?, _ b: UnsafePointer<UInt8>?, _ count: Int) -> Bool {
    guard count > 0, let a, let b else { return true }
    for offset in 0..<count where a[offset] != b[offset] { return false }
    return true
}
