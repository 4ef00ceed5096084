import ATSPolicy
import Foundation
import ZIPFoundation

/// One bundle of an .ipa or .app (the app, an extension, a watch app, an App Clip): its own
/// Info.plist's ATS dictionary under its CFBundleIdentifier.
struct BundlePolicy {
    /// The bundle's path inside the archive or directory (`Payload/Lab.app/PlugIns/Share.appex`).
    var bundlePath: String
    var identifier: String
    var executable: String?
    var name: String?
    var source: PolicySource
}

/// Why an .ipa or .app could not be read: one line naming the file.
struct BundleLoadError: Error, CustomStringConvertible {
    var path: String
    var problem: String
    var description: String { "\(path): \(problem)" }
}

/// Reads the bundles of an .ipa (a zip of `Payload/NAME.app/...`) or an .app directory in memory:
/// only Info.plist files are read, and nothing is written to disk.
enum AppBundles {
    /// Bigger Info.plist files are not real ones: an archive declaring (or inflating to) more is refused.
    static let maximumInfoPlistBytes = 1 << 20
    /// No entry of an app archive declares more (a bomb's entries do).
    static let maximumEntryBytes: UInt64 = 8 << 30
    static let maximumEntries = 500_000

    /// Whether `path` names an .ipa file or an .app directory.
    static func isBundle(_ path: String) -> Bool {
        var isDirectory: ObjCBool = false
        let exists = FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory)
        if path.lowercased().hasSuffix(".ipa") { return true }
        return exists && isDirectory.boolValue && (path.hasSuffix("/") ? String(path.dropLast()) : path).hasSuffix(".app")
    }

    static func load(path: String) throws(BundleLoadError) -> [BundlePolicy] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw BundleLoadError(path: path, problem: "no such file")
        }
        if isDirectory.boolValue {
            return try loadDirectory(path)
        }
        return try loadArchive(path)
    }

    // MARK: .ipa

    private static func loadArchive(_ path: String) throws(BundleLoadError) -> [BundlePolicy] {
        let archive: Archive
        do {
            archive = try Archive(url: URL(fileURLWithPath: path), accessMode: .read)
        } catch {
            throw BundleLoadError(path: path, problem: "not a valid zip archive (corrupt or truncated .ipa)")
        }
        var plists: [String: Entry] = [:]
        var count = 0
        for entry in archive {
            count += 1
            guard count <= maximumEntries else {
                throw BundleLoadError(path: path, problem: "more than \(maximumEntries) entries: refused as a zip bomb")
            }
            let entryPath = entry.path
            if escapes(entryPath) {
                throw BundleLoadError(path: path, problem: "entry '\(entryPath)' escapes the archive")
            }
            if entry.uncompressedSize > maximumEntryBytes {
                throw BundleLoadError(path: path, problem: "entry '\(entryPath)' declares \(entry.uncompressedSize) bytes, "
                    + "over the limit of \(maximumEntryBytes): refused as a zip bomb")
            }
            if entry.type == .file, entryPath.hasSuffix("/Info.plist") { plists[normalized(entryPath)] = entry }
        }
        return try bundles(in: path, plists: Array(plists.keys)) { plist throws(BundleLoadError) in
            let entry = plists[plist]!
            if entry.uncompressedSize > UInt64(maximumInfoPlistBytes) {
                throw BundleLoadError(path: path, problem: "entry '\(plist)' declares \(entry.uncompressedSize) bytes, "
                    + "over the Info.plist limit of \(maximumInfoPlistBytes): refused as a zip bomb")
            }
            var data = Data()
            do {
                _ = try archive.extract(entry, skipCRC32: false) { chunk in
                    data.append(chunk)
                    if data.count > maximumInfoPlistBytes { throw Inflated() }
                }
            } catch is Inflated {
                throw BundleLoadError(path: path, problem: "entry '\(plist)' inflates past the Info.plist limit of "
                    + "\(maximumInfoPlistBytes) bytes (it declares \(entry.uncompressedSize)): refused as a zip bomb")
            } catch {
                throw BundleLoadError(path: path, problem: "entry '\(plist)' is corrupt: \(error)")
            }
            return data
        }
    }

    private struct Inflated: Error {}

    /// An absolute path or a `..` component would leave the directory an archive is unpacked into.
    static func escapes(_ entryPath: String) -> Bool {
        if entryPath.hasPrefix("/") || entryPath.hasPrefix("\\") { return true }
        return entryPath.split(whereSeparator: { $0 == "/" || $0 == "\\" }).contains("..")
    }

    private static func normalized(_ entryPath: String) -> String {
        entryPath.hasPrefix("./") ? String(entryPath.dropFirst(2)) : entryPath
    }

    // MARK: .app

    private static func loadDirectory(_ path: String) throws(BundleLoadError) -> [BundlePolicy] {
        let root = URL(fileURLWithPath: path).standardizedFileURL
        let appName = root.lastPathComponent
        guard appName.hasSuffix(".app") else {
            throw BundleLoadError(path: path, problem: "is a directory, not an .app bundle or a policy file")
        }
        // Only the places bundles live: the app, PlugIns, Extensions, Watch and AppClips, two levels deep.
        var plists: [String] = []
        func collect(_ directory: URL, as relative: String, depth: Int) {
            if FileManager.default.fileExists(atPath: directory.appendingPathComponent("Info.plist").path) {
                plists.append(relative + "/Info.plist")
            }
            guard depth < 3 else { return }
            for container in ["PlugIns", "Extensions", "Watch", "AppClips"] {
                let folder = directory.appendingPathComponent(container)
                let children = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
                for child in children.sorted() where child.hasSuffix(".appex") || child.hasSuffix(".app") {
                    collect(folder.appendingPathComponent(child), as: "\(relative)/\(container)/\(child)", depth: depth + 1)
                }
            }
        }
        collect(root, as: "Payload/" + appName, depth: 0)
        return try bundles(in: path, plists: plists) { plist throws(BundleLoadError) in
            let file = root.deletingLastPathComponent().appendingPathComponent(String(plist.dropFirst("Payload/".count)))
            let size = (try? FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int) ?? 0
            if size > maximumInfoPlistBytes {
                throw BundleLoadError(path: path, problem: "\(plist) is \(size) bytes, over the Info.plist limit")
            }
            guard let data = FileManager.default.contents(atPath: file.path) else {
                throw BundleLoadError(path: path, problem: "cannot read \(plist)")
            }
            return data
        }
    }

    // MARK: the bundles of an app

    /// The bundles among `plists` (paths of Info.plist files): each `Payload/NAME.app`, and below
    /// it `PlugIns/*.appex`, `Extensions/*.appex`, `Watch/*.app` and `AppClips/*.app`, recursively.
    private static func bundles(in path: String, plists: [String],
                                read: (String) throws(BundleLoadError) -> Data) throws(BundleLoadError) -> [BundlePolicy] {
        let bundlePaths = Set(plists.map { String($0.dropLast("/Info.plist".count)) })
        let apps = bundlePaths.filter { candidate in
            let parts = candidate.split(separator: "/")
            return parts.count == 2 && parts[0] == "Payload" && parts[1].hasSuffix(".app")
        }.sorted()
        guard !apps.isEmpty else {
            throw BundleLoadError(path: path, problem: "no app in it (expected Payload/NAME.app/Info.plist)")
        }
        var found: [String] = []
        func walk(_ bundle: String) {
            found.append(bundle)
            let nested = bundlePaths.filter { candidate in
                guard candidate.hasPrefix(bundle + "/") else { return false }
                let rest = candidate.dropFirst(bundle.count + 1).split(separator: "/")
                guard rest.count == 2 else { return false }
                switch rest[0] {
                case "PlugIns", "Extensions": return rest[1].hasSuffix(".appex")
                case "Watch", "AppClips": return rest[1].hasSuffix(".app")
                default: return false
                }
            }
            for child in nested.sorted() { walk(child) }
        }
        for app in apps { walk(app) }
        var result: [BundlePolicy] = []
        for bundle in found {
            let plist = bundle + "/Info.plist"
            let data = try read(plist)
            let origin = "\(path):\(plist)"
            var source: PolicySource
            do {
                source = try PolicyLoader.parse(data: data, origin: origin)
                source.bundlePath = bundle
            } catch {
                throw BundleLoadError(path: path, problem: error.described(as: plist))
            }
            let strings = PolicyLoader.rootStrings(data)
            guard let identifier = strings["CFBundleIdentifier"], !identifier.isEmpty else {
                throw BundleLoadError(path: path, problem: "\(plist) has no CFBundleIdentifier")
            }
            result.append(BundlePolicy(bundlePath: bundle, identifier: identifier,
                                       executable: strings["CFBundleExecutable"], name: strings["CFBundleName"],
                                       source: source))
        }
        return result
    }
}
