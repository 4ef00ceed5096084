extension Requirements {
    /// INTERFACE.md's `requirements` object, plus the cipher policy the requirements imply (R14).
    public var json: JSONValue {
        .object([
            ("cleartextAllowed", .bool(cleartextAllowed)),
            ("minimumTLSVersion", .optional(minimumTLSVersion?.rawValue)),
            ("forwardSecrecy", .bool(forwardSecrecy)),
            ("certificateChecks", .bool(certificateChecks)),
            ("cipherSuites", .string(cipherPolicy.rawValue)),
        ])
    }
}

extension Decision {
    /// The decision fields shared by `check` output and the decision log (INTERFACE.md), in order.
    public var jsonFields: [(String, JSONValue)] {
        var fields: [(String, JSONValue)] = [
            ("scheme", .string(destination.scheme.rawValue)),
            ("host", .string(destination.host.description)),
            ("port", .int(destination.port)),
            ("class", .string(destination.hostClass.rawValue)),
            ("direct", .bool(direct)),
            ("exception", .optional(exception?.entry.displayName)),
            ("ats", .string(ats.rawValue)),
            ("action", .string(action.rawValue)),
            ("reason", .optional(reason?.rawValue)),
            ("message", .string(message)),
            ("requirements", requirements.json),
            ("rule", .string(rule)),
            ("context", .string(context.rawValue)),
            ("profile", .string(profile.rawValue)),
        ]
        if let match = exception { fields.append(("match", .string(match.kind.rawValue))) }
        if let upgradeVia { fields.append(("upgradeVia", .string(upgradeVia.rawValue))) }
        if let pin {
            fields.append(("pinnedDomain", .object([
                ("key", .string(pin.key)),
                ("caIdentities", .int(pin.caIdentities?.count ?? 0)),
                ("leafIdentities", .int(pin.leafIdentities?.count ?? 0)),
            ])))
        }
        return fields
    }
}
