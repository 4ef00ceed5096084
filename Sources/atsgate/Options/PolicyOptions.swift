import ArgumentParser
import ATSPolicy
import Foundation
import ProxyAccess
import ProxyCore

/// The flags `run` and `check` share (INTERFACE.md): which policy, and the engine's options.
struct PolicyOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("""
        ATS policy (repeatable): Info.plist (XML or binary), bare ATS dictionary plist, JSON, or an .ipa or \
        .app (one policy per bundle: the app, its extensions, watch app and App Clips, each under its \
        CFBundleIdentifier). ID= names a single file's policy (default: its CFBundleIdentifier, else the \
        file name). check and diagnose use the first.
        """, valueName: "[id=]file"))
    var policy: [String] = []

    @Option(name: .long, help: "Which OS generation's rules apply: ios9, ios10 or ios17.")
    var profile: Profile = .ios17

    @Option(name: .long, help: "What happens to cleartext HTTP a host forbids: block, upgrade or redirect.")
    var cleartext: CleartextMode = .block

    @Flag(name: .long, help: "Do not apply the built-in exceptions (apple.com and others).")
    var noBuiltinExceptions = false

    @Option(name: .long, help: ArgumentHelp("A local network (repeatable; replaces the default list).",
                                            valueName: "cidr"))
    var localNetwork: [IPNetwork] = []

    /// Loads the first policy (the embedded empty default without --policy); errors name the file.
    func loadPolicy() throws -> Policy {
        guard let first = policy.first else { return .empty }
        return Policy(try PolicyOptions.load(first)[0].source)
    }

    /// One loaded policy and what identifies it.
    struct Loaded {
        var id: String
        var source: PolicySource
        /// The file, and for a bundle of an .ipa or .app its path inside.
        var label: String
        var executable: String?
        var name: String?
    }

    /// Every --policy, in order (an .ipa or .app gives its bundles in order: the app first); IDs unique.
    func loadPolicies() throws -> [Loaded] {
        var loaded: [Loaded] = []
        var seen: [String: String] = [:]
        for spec in policy {
            for item in try PolicyOptions.load(spec) {
                if item.id == SystemTraffic.app {
                    throw CommandFailure(message: "--policy \(spec): the policy ID '\(item.id)' is the device's own traffic"
                                         + " in the log (trustd's certificate fetches): give the app another ID (ID=FILE)")
                }
                if let other = seen[item.id] {
                    throw CommandFailure(message: "--policy: duplicate policy ID '\(item.id)' (from \(other) and \(item.label))")
                }
                seen[item.id] = item.label
                loaded.append(item)
            }
        }
        return loaded
    }

    /// `[ID=]FILE`: the ID is given when the text before '=' is no path and the whole is no file.
    static func split(_ spec: String) -> (id: String?, path: String) {
        guard let equals = spec.firstIndex(of: "="), !spec[..<equals].contains("/"), equals != spec.startIndex,
              !FileManager.default.fileExists(atPath: spec) else { return (nil, spec) }
        return (String(spec[..<equals]), String(spec[spec.index(after: equals)...]))
    }

    static func load(_ spec: String) throws -> [Loaded] {
        let (id, path) = split(spec)
        if AppBundles.isBundle(path) {
            if let id {
                throw CommandFailure(message: "--policy \(spec): an .ipa or .app gives one policy per bundle, "
                    + "each under its CFBundleIdentifier; '\(id)=' cannot name them")
            }
            do {
                return try AppBundles.load(path: path).map { bundle in
                    Loaded(id: bundle.identifier, source: bundle.source, label: "\(path):\(bundle.bundlePath)",
                           executable: bundle.executable, name: bundle.name)
                }
            } catch {
                throw CommandFailure(message: error.description)
            }
        }
        let data: Data
        let source: PolicySource
        do {
            data = try PolicyLoader.read(path: path)
            source = try PolicyLoader.parse(data: data, origin: path)
        } catch {
            throw CommandFailure(message: error.description)
        }
        let strings = PolicyLoader.rootStrings(data)
        return [Loaded(id: PolicyLoader.appID(given: id, data: data, path: path), source: source, label: path,
                       executable: strings["CFBundleExecutable"], name: strings["CFBundleName"])]
    }

    var engineOptions: EngineOptions {
        EngineOptions(profile: profile, builtinExceptions: !noBuiltinExceptions,
                      localNetworks: localNetwork.isEmpty ? EngineOptions.defaultLocalNetworks : localNetwork,
                      cleartext: cleartext)
    }
}

extension Profile: ExpressibleByArgument {}
extension LoadContext: ExpressibleByArgument {}
extension CleartextMode: ExpressibleByArgument {}

extension IPNetwork: ExpressibleByArgument {
    /// CIDR text, or a single address as a /32 or /128.
    public init?(argument: String) {
        if let parsed = IPNetwork.parse(argument[...]) {
            self = parsed.network
        } else if let address = IPAddress.parseStrict(argument[...]) {
            self.init(address: address, prefixLength: address.isIPv4 ? 32 : 128)
        } else {
            return nil
        }
    }
}

extension PolicyOptions {
    /// `atsgate run`'s policies: every `--policy` (an .ipa or .app gives one per bundle) under the
    /// engine's options, the first also as the engine of requests no route chose.
    func apply(to configuration: inout ProxyConfiguration) throws {
        let engineOptions = engineOptions
        configuration.apps = try loadPolicies().map { policy in
            AppPolicy(id: policy.id, engine: DecisionEngine(policy: Policy(policy.source), options: engineOptions),
                      label: policy.label, executable: policy.executable, name: policy.name)
        }
        if let first = configuration.apps.first {
            configuration.engine = first.engine
            configuration.policyLabel = first.label
        } else {
            configuration.engine = DecisionEngine(policy: .empty, options: engineOptions)
        }
    }
}
