import ATSPolicy
import Foundation
import Glibc
import Testing
import TestSupport
import TLSClient

/// The trust store of Tests/Fixtures/make-trust-store.py (TestSupport's AppleLayoutTestStore), with
/// what the TLSClient tests make of it.
enum TestTrustStore {
    static func directory() throws -> URL { try AppleLayoutTestStore.directory() }

    static func path(_ name: String) throws -> String { try AppleLayoutTestStore.path(name) }

    /// The store directory in Apple's layout.
    static func storePath() throws -> String { try AppleLayoutTestStore.storePath() }

    /// The hashes of a certificate the script made ("root-distrusted"): upper-case hex.
    static func manifest(_ label: String) throws -> (sha256: String, spki: String, subject: String) {
        try AppleLayoutTestStore.manifest(label)
    }

    /// A date-based distrust of root-distrusted, from yesterday on, as Apple's table would list it.
    static func distrustOfTestRoot() throws -> DistrustedCA {
        let root = try manifest("root-distrusted")
        return DistrustedCA(certificateSHA256: root.sha256, spkiSHA256: root.spki,
                            distrust: ChainCertificate.Distrust(name: "atsgate Distrusted Root",
                                                                from: Date().addingTimeInterval(-86_400),
                                                                source: "make-trust-store.py"))
    }

    /// The store directory, with root-distrusted distrusted.
    static func store() throws -> TrustStore {
        try TrustStore(.directory(try storePath()), distrusted: [try distrustOfTestRoot()])
    }

    /// What a server sends for `leaf`: the leaf, then its intermediate, in DER.
    static func chain(_ leaf: String) throws -> [[UInt8]] {
        try splitDER([UInt8](Data(contentsOf: URL(fileURLWithPath: try path("\(leaf)-chain.der")))))
    }

    static func der(_ name: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: URL(fileURLWithPath: try path("\(name).der"))))
    }

    /// Concatenated DER certificates, one by one (each a SEQUENCE with a long-form length).
    static func splitDER(_ bytes: [UInt8]) throws -> [[UInt8]] {
        var result: [[UInt8]] = []
        var index = 0
        while index < bytes.count {
            try #require(bytes[index] == 0x30 && bytes[index + 1] & 0x80 != 0, "not a DER SEQUENCE at \(index)")
            let lengthBytes = Int(bytes[index + 1] & 0x7F)
            let length = bytes[(index + 2)..<(index + 2 + lengthBytes)].reduce(0) { $0 << 8 | Int($1) }
            let end = index + 2 + lengthBytes + length
            result.append(Array(bytes[index..<end]))
            index = end
        }
        return result
    }
}

