import CCrypt
import Foundation
import Synchronization

/// An htpasswd file for `--auth-file`: `user:hash` lines whose hashes the system's libcrypt checks.
/// Only slow, salted hashes are accepted (bcrypt `$2y$`/`$2b$`, SHA-512 crypt `$6$`): a lab's proxy
/// password travels with every request, and a fast hash of it in a leaked file would give it away.
public struct PasswordFile: Sendable {
    /// The file's path, for messages.
    public let path: String
    package let hashes: [String: String]

    public var users: [String] { hashes.keys.sorted() }

    /// Reads and checks the file; the error names the file and the line.
    public static func load(path: String) throws(PasswordFileError) -> PasswordFile {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw PasswordFileError(path: path, line: nil,
                                    problem: FileManager.default.fileExists(atPath: path) ? "cannot read" : "no such file")
        }
        return try parse(String(decoding: data, as: UTF8.self), path: path)
    }

    public static func parse(_ text: String, path: String) throws(PasswordFileError) -> PasswordFile {
        var hashes: [String: String] = [:]
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.hasSuffix("\r") ? raw.dropLast() : raw
            let number = index + 1
            if line.allSatisfy(\.isWhitespace) || line.hasPrefix("#") { continue }
            guard let colon = line.firstIndex(of: ":"), colon != line.startIndex else {
                throw PasswordFileError(path: path, line: number, problem: "expected 'user:hash'")
            }
            let user = String(line[..<colon])
            let hash = String(line[line.index(after: colon)...])
            if let refused = refusal(of: hash) {
                throw PasswordFileError(path: path, line: number, problem: "user '\(user)': \(refused)")
            }
            guard hashes[user] == nil else {
                throw PasswordFileError(path: path, line: number, problem: "user '\(user)' is listed twice")
            }
            hashes[user] = hash
        }
        return PasswordFile(path: path, hashes: hashes)
    }

    /// Why a hash is not accepted, or nil.
    package static func refusal(of hash: String) -> String? {
        if hash.hasPrefix("$2y$") || hash.hasPrefix("$2b$") {
            // $2y$NN$ and 53 characters of salt and hash.
            return hash.utf8.count == 60 ? nil : "malformed bcrypt hash"
        }
        if hash.hasPrefix("$6$") {
            return hash.split(separator: "$").count >= 3 ? nil : "malformed SHA-512 crypt hash"
        }
        if hash.hasPrefix("$apr1$") || hash.hasPrefix("$1$") {
            return "MD5 hashes are not accepted; use bcrypt (htpasswd -B) or SHA-512 crypt"
        }
        if hash.hasPrefix("{SHA}") { return "SHA-1 hashes are not accepted; use bcrypt (htpasswd -B) or SHA-512 crypt" }
        if hash.hasPrefix("$2a$") { return "bcrypt $2a$ is ambiguous; use $2y$ or $2b$ (htpasswd -B)" }
        if hash.hasPrefix("$") { return "unsupported hash scheme; use bcrypt (htpasswd -B) or SHA-512 crypt" }
        return "plain-text passwords (or crypt(3) DES) are not accepted; use bcrypt (htpasswd -B) or SHA-512 crypt"
    }

    /// Whether `password` is `user`'s. Slow on purpose (bcrypt): call it on the blocking pool only.
    package func verify(user: String, password: String) -> Bool {
        guard let hash = hashes[user] else {
            // Spend about the time of a real user's check (a hash of the file's own scheme and
            // cost), so timing does not tell which names exist.
            _ = PasswordFile.crypt(password, setting: hashes.values.first ?? PasswordFile.decoySetting)
            return false
        }
        guard let computed = PasswordFile.crypt(password, setting: hash) else { return false }
        return PasswordFile.constantTimeEqual(Array(computed.utf8), Array(hash.utf8))
    }

    private static let decoySetting = "$2y$10$abcdefghijklmnopqrstuu5Ft0dP4wZsWqXnHVyf0vBvD8qoA9WCa"

    /// libxcrypt's reentrant crypt with its state on the heap (struct crypt_data is 32 KiB).
    package static func crypt(_ phrase: String, setting: String) -> String? {
        let size = MemoryLayout<crypt_data>.size
        let data = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 16)
        defer {
            // The state holds the password: clear it before the memory goes back.
            memset(data, 0, size)
            data.deallocate()
        }
        memset(data, 0, size)
        guard let result = crypt_rn(phrase, setting, data, Int32(size)) else { return nil }
        let text = String(cString: result)
        // libxcrypt's failure tokens start with '*'.
        return text.hasPrefix("*") ? nil : text
    }

    package static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in a.indices { difference |= a[index] ^ b[index] }
        return difference == 0
    }
}

/// Why an auth file was refused: one line naming the file and the line.
public struct PasswordFileError: Error, CustomStringConvertible, Sendable {
    public var path: String
    public var line: Int?
    public var problem: String
    public var description: String { line.map { "\(path):\($0): \(problem)" } ?? "\(path): \(problem)" }
}

/// `Proxy-Authorization: Basic` credentials checked against one generation's password file. Verified
/// credentials are remembered for the generation (a reload, with a possibly changed file, starts
/// afresh), so the slow hash runs once per user and password, not once per connection; the key is a
/// digest of the credentials, never the password itself.
package final class ProxyAuthenticator: Sendable {
    package let file: PasswordFile
    private let verified = Mutex<[Int: (digest: [UInt8], user: String)]>([:])
    package static let capacity = 4096

    package init(file: PasswordFile) {
        self.file = file
    }

    /// The token of a `Basic TOKEN` field (the scheme in any case), not yet decoded; nil otherwise.
    package static func basicToken(_ field: String?) -> [UInt8]? {
        guard let field else { return nil }
        var bytes = Array(field.utf8)[...]
        guard bytes.count > 6, bytes.prefix(5).map({ $0 | 0x20 }) == Array("basic".utf8), bytes[bytes.startIndex + 5] == 0x20
        else { return nil }
        bytes = bytes.dropFirst(6)
        while bytes.first == 0x20 { bytes = bytes.dropFirst() }
        while bytes.last == 0x20 { bytes = bytes.dropLast() }
        return bytes.isEmpty ? nil : Array(bytes)
    }

    /// The user and password of a Basic credential field, or nil when it is not one.
    package static func basicCredentials(_ field: String?) -> (user: String, password: String, token: [UInt8])? {
        guard let token = basicToken(field), let data = Data(base64Encoded: Data(token)),
              let text = String(data: data, encoding: .utf8), let colon = text.firstIndex(of: ":") else { return nil }
        return (String(text[..<colon]), String(text[text.index(after: colon)...]), token)
    }

    /// The user of credentials verified before in this generation (their token as sent), else nil.
    /// A client that comes back with the same credentials costs a lookup: no decoding, no hash.
    package func knownUser(_ token: [UInt8]) -> String? {
        let key = token.hashValue
        guard let entry = verified.withLock({ $0[key] }),
              PasswordFile.constantTimeEqual(entry.digest, digest(token)) else { return nil }
        return entry.user
    }

    package func remember(_ token: [UInt8], user: String) {
        let value = (digest(token), user)
        verified.withLock { entries in
            if entries.count >= ProxyAuthenticator.capacity { entries.removeAll() }
            entries[token.hashValue] = value
        }
    }

    /// A keyed digest of the credentials (Hasher is seeded per process): what the cache compares.
    private func digest(_ token: [UInt8]) -> [UInt8] {
        var first = Hasher(), second = Hasher()
        first.combine(0x5A7)
        first.combine(token)
        second.combine(token)
        second.combine(0xA75)
        return withUnsafeBytes(of: (first.finalize(), second.finalize())) { Array($0) }
    }
}
