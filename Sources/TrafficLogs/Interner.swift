/// Gives each distinct byte string of a log (a host, a reason, a suite name) a small number, without
/// making a String per record: the report's memory follows the number of distinct values, and its time
/// the bytes it reads, not the allocations.
package struct Interner {
    private var storage: [UInt8] = []
    private var offsets: [Int] = [0]
    /// Open addressing: slot -> id + 1 (0 is empty). The load factor stays at or below one half.
    private var slots: [Int32] = Array(repeating: 0, count: 64)
    private var hashes: [UInt64] = []
    private var strings: [String] = []

    package var count: Int { strings.count }

    /// The id of `bytes`, added when new.
    package mutating func id(_ bytes: UnsafeRawBufferPointer) -> Int {
        let hash = Interner.hash(bytes)
        let mask = slots.count - 1
        var slot = Int(truncatingIfNeeded: hash) & mask
        while true {
            let entry = Int(slots[slot])
            if entry == 0 { break }
            let id = entry - 1
            if hashes[id] == hash, equals(id, bytes) { return id }
            slot = (slot + 1) & mask
        }
        let id = strings.count
        storage.append(contentsOf: bytes)
        offsets.append(storage.count)
        hashes.append(hash)
        strings.append(String(decoding: bytes, as: UTF8.self))
        slots[slot] = Int32(id + 1)
        if strings.count * 2 > slots.count { grow() }
        return id
    }

    /// The id of a String (for values decoded from escapes).
    package mutating func id(_ text: String) -> Int {
        var text = text
        return text.withUTF8 { id(UnsafeRawBufferPointer($0)) }
    }

    package subscript(id: Int) -> String { strings[id] }

    private func equals(_ id: Int, _ bytes: UnsafeRawBufferPointer) -> Bool {
        let start = offsets[id], end = offsets[id + 1]
        guard end - start == bytes.count else { return false }
        return storage.withUnsafeBytes { all in
            bytes.count == 0 || memcmp(all.baseAddress! + start, bytes.baseAddress!, bytes.count) == 0
        }
    }

    private mutating func grow() {
        var bigger = [Int32](repeating: 0, count: slots.count * 2)
        let mask = bigger.count - 1
        for (id, hash) in hashes.enumerated() {
            var slot = Int(truncatingIfNeeded: hash) & mask
            while bigger[slot] != 0 { slot = (slot + 1) & mask }
            bigger[slot] = Int32(id + 1)
        }
        slots = bigger
    }

    /// FNV-1a, 64 bits: short keys, no allocation, good enough spread for open addressing.
    private static func hash(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
        }
        return hash ^ (hash >> 29)
    }
}

import Glibc
