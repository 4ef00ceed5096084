import ArgumentParser
import ATSPolicy

/// The flags `run` and `check` share (INTERFACE.md): which policy, and the engine's options.
struct PolicyOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("ATS policy: Info.plist (XML or binary), bare ATS dictionary plist, or JSON.",
                                            valueName: "file"))
    var policy: String?

    @Option(name: .long, help: "Which OS generation's rules apply: ios9, ios10 or ios17.")
    var profile: Profile = .ios17

    @Option(name: .long, help: "What happens to cleartext HTTP a host forbids: block, upgrade or redirect.")
    var cleartext: CleartextMode = .block

    @Flag(name: .long, help: "Do not apply the built-in exceptions (apple.com and others).")
    var noBuiltinExceptions = false

    @Option(name: .long, help: ArgumentHelp("A local network (repeatable; replaces the default list).",
                                            valueName: "cidr"))
    var localNetwork: [IPNetwork] = []

    /// Loads the policy (the embedded empty default without --policy); errors name the file.
    func loadPolicy() throws -> Policy {
        guard let path = policy else { return .empty }
        do {
            return Policy(try PolicyLoader.load(path: path))
        } catch {
            throw CommandFailure(message: error.description)
        }
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
