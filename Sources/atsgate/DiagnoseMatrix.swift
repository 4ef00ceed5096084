import ATSPolicy

/// One configuration of `nscurl --ats-diagnostics`' matrix: the ATS dictionary it stands for and the
/// requirements that dictionary gives the host (R10, R13).
struct DiagnoseConfiguration {
    enum Dictionary {
        /// `{}`: full ATS.
        case atsDefault
        /// `NSAllowsArbitraryLoads = YES`.
        case arbitraryLoads
        /// One NSExceptionDomains entry for the host with these keys; nil keys are absent.
        case exception(minimumTLSVersion: TLSVersion?, requiresForwardSecrecy: Bool?, allowsInsecureHTTPLoads: Bool?)
    }

    /// nscurl's section heading, e.g. "Configuring TLS exceptions for api.example.com".
    var section: String
    /// nscurl's test name, e.g. "TLSv1.2 with PFS disabled".
    var name: String
    var dictionary: Dictionary
    /// The host the exception entries are for.
    var host: String

    /// Requirements as the engine derives them; the local exemption (R11) is not applied, because the
    /// matrix asks what the server satisfies, as nscurl does.
    var requirements: Requirements {
        switch dictionary {
        case .atsDefault: .full
        case .arbitraryLoads: .none
        case .exception(let version, let pfs, let http):
            Requirements(entry: ExceptionEntry(key: host, allowsInsecureHTTPLoads: http ?? false,
                                               minimumTLSVersion: version ?? .tls12,
                                               requiresForwardSecrecy: pfs ?? true))
        }
    }

    /// The entry's keys in the order Apple's plist description sorts them.
    private var entryKeys: [(String, JSONValue)] {
        guard case .exception(let version, let pfs, let http) = dictionary else { return [] }
        var keys: [(String, JSONValue)] = []
        if let http { keys.append(("NSExceptionAllowsInsecureHTTPLoads", .bool(http))) }
        if let version { keys.append(("NSExceptionMinimumTLSVersion", .string(version.rawValue))) }
        if let pfs { keys.append(("NSExceptionRequiresForwardSecrecy", .bool(pfs))) }
        return keys
    }

    /// The dictionary in Apple's plist description style, as nscurl prints it.
    var dictionaryText: String {
        switch dictionary {
        case .atsDefault:
            return "{\n}"
        case .arbitraryLoads:
            return "{\n    NSAllowsArbitraryLoads = true;\n}"
        case .exception:
            let body = entryKeys.map { key, value in
                let text = switch value {
                case .string(let string): "\"\(string)\""
                case .bool(let flag): flag ? "true" : "false"
                default: value.compact
                }
                return "            \(key) = \(text);"
            }.joined(separator: "\n")
            return "{\n    NSExceptionDomains = {\n        \"\(host)\" = {\n\(body)\n        };\n    };\n}"
        }
    }

    /// The dictionary as JSON, the shape `--policy` reads.
    var dictionaryJSON: JSONValue {
        switch dictionary {
        case .atsDefault:
            return .object([])
        case .arbitraryLoads:
            return .object([("NSAllowsArbitraryLoads", true)])
        case .exception:
            return .object([("NSExceptionDomains", .object([(host, .object(entryKeys))]))])
        }
    }

    /// nscurl's matrix, in nscurl's order.
    static func matrix(host: String) -> [DiagnoseConfiguration] {
        let versions = TLSVersion.allCases.reversed()
        func test(_ section: String, _ name: String, _ dictionary: Dictionary) -> DiagnoseConfiguration {
            DiagnoseConfiguration(section: section, name: name, dictionary: dictionary, host: host)
        }
        var tests = [
            test("Default ATS Secure Connection", "ATS Default Connection", .atsDefault),
            test("Allowing Arbitrary Loads", "Allow All Loads", .arbitraryLoads),
        ]
        tests += versions.map {
            test("Configuring TLS exceptions for \(host)", $0.rawValue,
                 .exception(minimumTLSVersion: $0, requiresForwardSecrecy: nil, allowsInsecureHTTPLoads: nil))
        }
        tests.append(test("Configuring PFS exceptions for \(host)", "Disabling Perfect Forward Secrecy",
                          .exception(minimumTLSVersion: nil, requiresForwardSecrecy: false, allowsInsecureHTTPLoads: nil)))
        tests.append(test("Configuring PFS exceptions and allowing insecure HTTP for \(host)",
                          "Disabling Perfect Forward Secrecy and Allowing Insecure HTTP",
                          .exception(minimumTLSVersion: nil, requiresForwardSecrecy: false, allowsInsecureHTTPLoads: true)))
        tests += versions.map {
            test("Configuring TLS exceptions with PFS disabled for \(host)", "\($0.rawValue) with PFS disabled",
                 .exception(minimumTLSVersion: $0, requiresForwardSecrecy: false, allowsInsecureHTTPLoads: nil))
        }
        tests += versions.map {
            test("Configuring TLS exceptions with PFS disabled and insecure HTTP allowed for \(host)",
                 "\($0.rawValue) with PFS disabled and insecure HTTP allowed",
                 .exception(minimumTLSVersion: $0, requiresForwardSecrecy: false, allowsInsecureHTTPLoads: true))
        }
        return tests
    }
}
