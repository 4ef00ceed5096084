import Foundation

/// The file formats an ATS policy is read from (ATS-SPEC section 1).
public enum PolicyFileFormat: String, Sendable {
    case xmlPlist = "xml-plist"
    case binaryPlist = "binary-plist"
    case json
}

/// Where the ATS dictionary sat in the file.
public enum PolicyRoot: String, Sendable {
    /// A whole Info.plist; the dictionary is its `NSAppTransportSecurity` value (absent: empty).
    case infoPlist = "Info.plist"
    /// The file's root is the ATS dictionary itself.
    case bare
}

/// An ATS dictionary as read from a file, before interpretation.
public struct PolicySource: Sendable {
    /// The file it came from, or a label such as `<embedded default>`.
    public var origin: String
    public var format: PolicyFileFormat?
    public var root: PolicyRoot
    /// The raw `NSAppTransportSecurity` dictionary.
    public var dictionary: [String: PlistValue]
    /// For an Info.plist, the keys of its root (so lint can spot a misspelled NSAppTransportSecurity).
    public var infoPlistKeys: [String] = []
    /// For a bundle of an .ipa or .app, its path inside (`Payload/Lab.app/PlugIns/Share.appex`):
    /// lint's key paths start with it.
    public var bundlePath: String?
    /// Key path prefix to the ATS dictionary inside the file, for findings (`NSAppTransportSecurity` or empty).
    public var keyPathPrefix: String { root == .infoPlist ? "NSAppTransportSecurity" : "" }

    public init(origin: String, format: PolicyFileFormat?, root: PolicyRoot, dictionary: [String: PlistValue]) {
        self.origin = origin
        self.format = format
        self.root = root
        self.dictionary = dictionary
    }

    /// The embedded default: an empty dictionary, full ATS.
    public static let empty = PolicySource(origin: "<embedded default>", format: nil, root: .bare, dictionary: [:])
}

/// Why a policy file could not be used. The description is one line naming the file, where in it the
/// problem is when that is known (`Info.plist:131:5: ...`, as compilers write it), and the problem.
public struct PolicyLoadError: Error, CustomStringConvertible, Sendable {
    public var path: String
    public var problem: String
    /// Where an XML plist or JSON document breaks: found by reading the text (PlistOutline), never taken
    /// from Foundation's message.
    public var position: TextPosition?
    /// Where a binary plist breaks, when that is known.
    public var byteOffset: Int?

    public init(path: String, problem: String, position: TextPosition? = nil, byteOffset: Int? = nil) {
        self.path = path
        self.problem = problem
        self.position = position
        self.byteOffset = byteOffset
    }

    public var description: String { described(as: path) }

    /// The one line with another name for the file (a bundle's `Info.plist` inside its archive).
    public func described(as name: String) -> String {
        position.map { "\(name):\($0): \(problem)" } ?? "\(name): \(problem)"
    }
}

public enum PolicyLoader {
    /// Key prefixes only an Info.plist has (bundle, Launch Services, UIKit and build keys). A root with
    /// such a key and no NSAppTransportSecurity is an Info.plist without ATS dictionary, i.e. full ATS,
    /// not a bare ATS dictionary full of unknown keys.
    private static let infoPlistKeyPrefixes = ["CFBundle", "LS", "UI", "DT", "MinimumOSVersion"]

    static func isInfoPlistKey(_ key: String) -> Bool {
        infoPlistKeyPrefixes.contains { key.hasPrefix($0) }
    }

    /// Reads a policy file: a whole Info.plist (XML or binary), a bare ATS dictionary plist, or JSON.
    public static func load(path: String) throws(PolicyLoadError) -> PolicySource {
        try parse(data: read(path: path), origin: path)
    }

    /// A policy file's bytes, with the same one-line errors as `load`.
    public static func read(path: String) throws(PolicyLoadError) -> Data {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw PolicyLoadError(path: path, problem: "no such file")
        }
        if isDirectory.boolValue {
            throw PolicyLoadError(path: path, problem: "is a directory, not a policy file")
        }
        do {
            return try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw PolicyLoadError(path: path, problem: "cannot read: \(readFailure(error))")
        }
    }

    /// The string values at the root of a plist or JSON document (an Info.plist's CFBundleIdentifier,
    /// CFBundleExecutable, CFBundleName); empty for anything else.
    public static func rootStrings(_ data: Data) -> [String: String] {
        let root: Any?
        if looksLikeJSON(data) {
            root = try? JSONSerialization.jsonObject(with: data)
        } else if data.starts(with: Array("bplist".utf8)), BinaryPlistValidator.problem([UInt8](data)) != nil {
            // Foundation's binary scanner traps on some malformed files: never hand it one.
            root = nil
        } else {
            root = try? PropertyListSerialization.propertyList(from: data, format: nil)
        }
        guard let dictionary = root as? [String: Any] else { return [:] }
        return dictionary.compactMapValues { $0 as? String }
    }

    /// The ID an app's policy goes by, as the proxy names it in its records: the ID given, else the
    /// file's CFBundleIdentifier, else the file's name without its extension.
    public static func appID(given id: String?, data: Data, path: String) -> String {
        id ?? rootStrings(data)["CFBundleIdentifier"] ?? URL(fileURLWithPath: path).deletingPathExtension().lastPathComponent
    }

    /// Parses policy bytes; `origin` names them in errors.
    public static func parse(data: Data, origin: String) throws(PolicyLoadError) -> PolicySource {
        let format = detectFormat(data)
        let rootValue: PlistValue
        do {
            switch format {
            case .json:
                // The strict reader first: JSONDecoder takes a trailing comma that JSON does not allow.
                if (try? PlistOutline(bytes: [UInt8](data), format: .json)) == nil {
                    throw PolicyLoadError(path: origin, problem: "not a valid \(PolicyFileFormat.json.displayName)")
                        .located(in: data, format: .json, failure: nil)
                }
                rootValue = try JSONDecoder().decode(PlistValue.self, from: data)
            case .xmlPlist, .binaryPlist:
                if format == .xmlPlist, xmlNestingDepth(data) > PlistValue.maximumDepth {
                    // Foundation's XML scanner recurses before any of our code runs.
                    throw PolicyLoadError(path: origin,
                                          problem: "nested deeper than \(PlistValue.maximumDepth) levels")
                }
                if format == .binaryPlist, let problem = BinaryPlistValidator.problem([UInt8](data)) {
                    // Foundation's binary scanner traps on some malformed files instead of throwing. The
                    // locator names the byte when the fault is in the trailer, the table or a marker.
                    let broken = "not a valid \(PolicyFileFormat.binaryPlist.displayName)"
                    let located = PolicyLoadError(path: origin, problem: broken).located(in: data, format: .binaryPlist, failure: nil)
                    throw located.byteOffset != nil ? located : PolicyLoadError(path: origin, problem: "\(broken): \(problem)")
                }
                var decoded = PropertyListSerialization.PropertyListFormat.xml
                rootValue = try PropertyListDecoder().decode(PlistValue.self, from: data, format: &decoded)
                // Foundation falls back to the OpenStep format, which reads a truncated `bplist` as a string
                // and `<616263>` as data: report the file as the broken plist it claims to be.
                guard decoded == (format == .binaryPlist ? .binary : .xml) else {
                    throw PolicyLoadError(path: origin, problem: "not a valid \(format!.displayName)")
                        .located(in: data, format: format!, failure: nil)
                }
            case nil:
                throw PolicyLoadError(path: origin, problem: data.isEmpty
                    ? "empty file; expected a property list or JSON"
                    : "not a property list (XML or binary) or JSON")
            }
        } catch let error as PolicyLoadError {
            throw error
        } catch {
            throw PolicyLoadError(path: origin, problem: "not a valid \(format!.displayName): \(decodeFailure(error))")
                .located(in: data, format: format!, failure: error)
        }
        guard case .dictionary(let root) = rootValue else {
            throw PolicyLoadError(path: origin,
                                  problem: "root is \(withArticle(rootValue.typeName)), expected a dictionary")
        }
        if let ats = root["NSAppTransportSecurity"] {
            guard case .dictionary(let dictionary) = ats else {
                throw PolicyLoadError(path: origin,
                                      problem: "NSAppTransportSecurity is \(withArticle(ats.typeName)), expected a dictionary")
            }
            var source = PolicySource(origin: origin, format: format, root: .infoPlist, dictionary: dictionary)
            source.infoPlistKeys = root.keys.sorted()
            return source
        }
        if root.keys.contains(where: isInfoPlistKey) {
            var source = PolicySource(origin: origin, format: format, root: .infoPlist, dictionary: [:])
            source.infoPlistKeys = root.keys.sorted()
            return source
        }
        return PolicySource(origin: origin, format: format, root: .bare, dictionary: root)
    }

    /// The deepest nesting of `<array>` and `<dict>` elements; self-closing ones do not nest.
    static func xmlNestingDepth(_ data: Data) -> Int {
        data.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) -> Int in
            var depth = 0, deepest = 0, index = 0
            let count = bytes.count
            func matches(_ word: StaticString, at offset: Int) -> Bool {
                let length = word.utf8CodeUnitCount
                guard offset + length <= count else { return false }
                return word.withUTF8Buffer { expected in
                    (0..<length).allSatisfy { bytes[offset + $0] == expected[$0] }
                }
            }
            while index < count {
                defer { index += 1 }
                guard bytes[index] == UInt8(ascii: "<") else { continue }
                let closing = index + 1 < count && bytes[index + 1] == UInt8(ascii: "/")
                let nameStart = closing ? index + 2 : index + 1
                let length: Int
                if matches("array", at: nameStart) { length = 5 } else if matches("dict", at: nameStart) { length = 4 } else { continue }
                let after = nameStart + length
                guard after < count else { break }
                if closing {
                    depth = max(0, depth - 1)
                } else if bytes[after] == UInt8(ascii: ">") {
                    depth += 1
                    deepest = max(deepest, depth)
                }
            }
            return deepest
        }
    }

    /// Whether the bytes are a JSON document (rather than a property list).
    public static func looksLikeJSON(_ data: Data) -> Bool { detectFormat(data) == .json }

    static func detectFormat(_ data: Data) -> PolicyFileFormat? {
        if data.starts(with: Array("bplist".utf8)) { return .binaryPlist }
        var bytes = data[...]
        // Skip a UTF-8 byte order mark and leading white space.
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes = bytes.dropFirst(3) }
        guard let first = bytes.first(where: { !($0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D) }) else {
            return nil
        }
        switch first {
        case UInt8(ascii: "{"), UInt8(ascii: "["): return .json
        case UInt8(ascii: "<"): return .xmlPlist
        default: return nil
        }
    }

    private static func readFailure(_ error: any Error) -> String {
        let nsError = error as NSError
        if let underlying = nsError.userInfo[NSUnderlyingErrorKey] as? NSError,
           underlying.domain == NSPOSIXErrorDomain,
           let message = strerror(Int32(underlying.code)) {
            return String(cString: message).lowercased()
        }
        if nsError.code == NSFileReadNoPermissionError { return "permission denied" }
        return nsError.localizedDescription
    }

    /// Foundation's reason, kept on one line: it quotes the file (`Encountered unknown tag plise as
    /// runni...`), and a crafted file could otherwise put line breaks, NULs or terminal escapes into
    /// the one-line error that lands in logs and the journal.
    private static func decodeFailure(_ error: any Error) -> String {
        let reason: String
        if case DecodingError.dataCorrupted(let context) = error {
            let detail = (context.underlyingError as NSError?)?.userInfo[NSDebugDescriptionErrorKey] as? String
            reason = (detail ?? context.debugDescription).trimmingCharacters(in: .whitespacesAndNewlines)
        } else {
            reason = String(describing: error)
        }
        var line = ""
        for scalar in reason.unicodeScalars {
            if scalar.properties.generalCategory == .control {
                line += scalar.escaped(asASCII: true)
            } else {
                line.unicodeScalars.append(scalar)
            }
        }
        return line
    }
}

extension PolicyFileFormat {
    var displayName: String {
        switch self {
        case .xmlPlist: "XML property list"
        case .binaryPlist: "binary property list"
        case .json: "JSON document"
        }
    }
}
