import ATSPolicy
import TLSClient
import TLSWire

/// `diagnose` output: nscurl-like text, or one JSON object per test.
struct DiagnoseReport {
    let url: String
    let destination: Destination
    let outcomes: [DiagnoseOutcome]
    let caFiles: [String]
    /// The addresses --resolve pinned (or the IP literal); empty when the name was resolved.
    let pinnedAddresses: [String]
    /// `--system`: one test by Apple's system connection rules (R18) instead of the ATS matrix.
    var system = false
    /// The trust store chains were judged against (`--trust-store`), and that in one phrase.
    var store: TrustStore?
    var storeSummary = ""
    /// R16: nil when off, "counted" without a log list, "verified" with one.
    var transparency: String?
    /// The answer to the X25519MLKEM768 offer; nil for an http:// URL (nothing to ask).
    var postQuantum: KeyExchangeProbeResult?

    private static let rule = String(repeating: "=", count: 80)

    var text: String {
        var out = system ? "Starting System Connection Diagnostics\n\n" : "Starting ATS Diagnostics\n\n"
        let scheme = destination.scheme == .https ? "HTTPS" : "HTTP"
        if system {
            out += "Judging \(url) by Apple's requirements for system connections (rule R18, docs/reference/ats-rules.md): TLS 1.2 or"
                + " later, a forward-secrecy cipher suite, certificates as R15/R15a, and on TLS 1.2 the extended"
                + " master secret (RFC 7627).\n"
        } else {
            out += "Configuring ATS Info.plist keys and displaying the result of \(scheme) loads to \(url).\n"
            out += "A test will \"PASS\" if the handshake and the certificate satisfy the configuration"
                + " (rules R13-R17, docs/reference/ats-rules.md), and \"FAIL\" otherwise, with the reason code.\n"
        }
        if !storeSummary.isEmpty { out += "Trust store: \(storeSummary).\n" }
        if let transparency {
            out += transparency == "verified"
                ? "Certificate Transparency (R16): SCTs verified against the log list.\n"
                : "Certificate Transparency (R16): SCTs counted, NOT verified (no --ct-log-list).\n"
        }
        if !pinnedAddresses.isEmpty {
            out += "Connecting to \(pinnedAddresses.joined(separator: ", ")).\n"
        }
        if !caFiles.isEmpty { out += "Extra trusted roots: \(caFiles.joined(separator: ", ")).\n" }
        out += Self.rule + "\n"
        var section = ""
        for outcome in outcomes {
            if outcome.section != section {
                if !section.isEmpty { out += "\n" + Self.rule + "\n" }
                section = outcome.section
                out += "\n\(section)\n---\n"
            }
            out += describe(outcome)
        }
        if let postQuantum {
            out += "\n" + Self.rule + "\n\nPost-Quantum Key Exchange (iOS 26, macOS 26)\n---\n" + describe(postQuantum)
        }
        out += "\n" + Self.rule + "\n"
        if let certificate = outcomes.lazy.compactMap(\.session).first?.certificate {
            out += "\n" + describe(certificate)
        }
        let passed = outcomes.filter(\.passed).count
        let verdict = outcomes.first?.passed == true ? "passes" : "fails"
        out += system
            ? "\nThe server \(verdict == "passes" ? "meets" : "does not meet") Apple's requirements for system connections.\n"
            : "\n\(passed) of \(outcomes.count) tests passed; the default ATS configuration \(verdict).\n"
        return out
    }

    private func describe(_ outcome: DiagnoseOutcome) -> String {
        var out = "\(outcome.name)\n"
        if let dictionary = outcome.dictionaryText { out += "ATS Dictionary:\n\(dictionary)\n" }
        if let note = outcome.note { out += "Note: \(note)\n" }
        if outcome.passed {
            out += "Result : PASS\n"
        } else {
            out += "Result : FAIL (\(outcome.reason ?? "unknown")) \(outcome.message ?? "")\n"
            if let rule = outcome.rule { out += "Rule : \(rule)\n" }
        }
        if let session = outcome.probe?.session {
            out += "Negotiated : \(session.protocolVersion), \(session.cipher)\n"
            if system, session.tlsVersion.map({ $0 < .tls13 }) == true {
                out += "Extended master secret : \(session.extendedMasterSecret ? "yes" : "no")\n"
            }
            for finding in session.certificate.toleratedFindings {
                out += "Tolerated : \(finding.reason.rawValue): \(finding.message)\n"
            }
        } else if let open = outcome.probe?.failure?.unrestricted {
            out += "Server speaks : \(open.protocolVersion), \(open.cipher) (handshake offering everything)\n"
            if system, open.tlsVersion.map({ $0 < .tls13 }) == true {
                out += "Extended master secret : \(open.extendedMasterSecret ? "yes" : "no")\n"
            }
        }
        return out + "---\n"
    }

    /// The post-quantum section: what was offered, and the server's choice in one Result line.
    private func describe(_ answer: KeyExchangeProbeResult) -> String {
        let others = KeyExchangeProbe.offeredGroups.filter { $0 != answer.offered }.map(\.name).joined(separator: ", ")
        var out = "Offered : \(answer.offered) (the only key share); also listed: \(others)\n"
        out += "Result : \(Self.postQuantumResult(answer))\n"
        if let message = answer.failure?.message { out += "Reason : \(message)\n" }
        return out + "---\n"
    }

    /// `QUANTUM-SECURE (X25519MLKEM768, TLSv1.3)`, `CLASSICAL (x25519 by HelloRetryRequest, TLSv1.3): ...`,
    /// `UNKNOWN (tls-handshake)`.
    static func postQuantumResult(_ answer: KeyExchangeProbeResult) -> String {
        if let failure = answer.failure { return "UNKNOWN (\(failure.code.rawValue))" }
        let version = answer.negotiatedVersion.map(TLSProtocolVersion.name(for:)) ?? "unknown version"
        let group = answer.group.map { answer.helloRetryRequest ? "\($0) by HelloRetryRequest" : $0.name }
            ?? "no key-exchange group"
        if answer.quantumSecure { return "QUANTUM-SECURE (\(group), \(version))" }
        let why = answer.negotiatedVersion.map { $0 < TLSProtocolVersion.tls13 } == true
            ? "TLS 1.2 and below have no post-quantum key exchange"
            : "recorded traffic could be decrypted once quantum computers exist"
        return "CLASSICAL (\(group), \(version)): \(why)"
    }

    private func describe(_ verdict: CertificateVerdict) -> String {
        guard let leaf = verdict.leaf else { return "Certificate: none presented\n" }
        var out = "Certificate presented for \(verdict.host):\n"
        out += "  Subject   : \(leaf.subject)\n"
        out += "  Issuer    : \(leaf.issuer)\n"
        out += "  Key       : \(leaf.key)\n"
        out += "  Signature : \(leaf.signatureAlgorithm)\n"
        if let notAfter = leaf.notAfter { out += "  Not after : \(notAfter.formatted(.iso8601))\n" }
        if !leaf.subjectAlternativeNames.isEmpty {
            out += "  SANs      : \(leaf.subjectAlternativeNames.joined(separator: ", "))\n"
        }
        out += "  SPKI      : \(leaf.spkiSHA256) (SHA-256, for NSPinnedLeafIdentities)\n"
        out += verdict.trusted
            ? "  Chain     : trusted (\(verdict.verifiedChain.joined(separator: " <- ")))"
                + (verdict.anchor == .system ? ", \(store?.name ?? "system") trust store\n" : ", operator CA file\n")
            : "  Chain     : not trusted\n"
        if let fetched = verdict.aiaFetched {
            out += "  AIA       : the missing intermediate was fetched from \(fetched)\n"
        }
        for finding in verdict.findings where finding.reason != .certificatePin {
            out += "  Finding   : \(finding.reason.rawValue) (\(finding.rule.rawValue)): \(finding.message)\n"
        }
        if let depth = verdict.certificateDepth {
            out += "  Depth     : \(depth) (certificate_depth: the certificate the failure is about; 0 = the leaf)\n"
        }
        return out
    }

    var jsonLines: String {
        outcomes.map { json(for: $0).compact + "\n" }.joined()
    }

    private func json(for outcome: DiagnoseOutcome) -> JSONValue {
        let session = outcome.probe?.session
        let observed = session ?? outcome.probe?.failure?.unrestricted
        let handshake: JSONValue = session != nil ? "requirements" : observed != nil ? "unrestricted" : .null
        return .object([
            ("url", .string(url)),
            ("section", .string(outcome.section)),
            ("test", .string(outcome.name)),
            ("result", .string(outcome.passed ? "PASS" : "FAIL")),
            ("reason", .optional(outcome.reason)),
            ("rule", .optional(outcome.rule)),
            ("message", .optional(outcome.message)),
            ("tls_version", .optional(observed?.protocolVersion)),
            ("cipher", .optional(observed?.cipher)),
            ("extended_master_secret", observed.map { .bool($0.extendedMasterSecret) } ?? .null),
            ("handshake", handshake),
            ("address", .optional(outcome.probe?.address)),
            ("trust_store", .optional(store?.name)),
            ("trust_store_version", .optional(store?.version)),
            ("certificate_depth", outcome.passed ? .null : (session?.certificate.certificateDepth).map { .int($0) } ?? .null),
            ("aia_fetched", .optional(observed?.certificate.aiaFetched)),
            ("certificate", observed.map { json(for: $0.certificate) } ?? .null),
            ("tolerated", .array((session?.certificate.toleratedFindings ?? []).map {
                .object([("reason", .string($0.reason.rawValue)), ("rule", .string($0.rule.rawValue)),
                         ("message", .string($0.message))])
            })),
            ("requirements", outcome.requirements.json),
            ("ats_dictionary", outcome.dictionaryJSON ?? .null),
            ("note", .optional(outcome.note)),
            ("post_quantum", postQuantum.map(Self.json(for:)) ?? .null),
        ])
    }

    /// The server's answer to the X25519MLKEM768 offer (the same on every line: it is the server's).
    static func json(for answer: KeyExchangeProbeResult) -> JSONValue {
        .object([
            ("offered", .string(answer.offered.name)),
            ("group", .optional(answer.group?.name)),
            ("quantum_secure", answer.failure == nil ? .bool(answer.quantumSecure) : .null),
            ("hello_retry_request", .bool(answer.helloRetryRequest)),
            ("tls_version", .optional(answer.negotiatedVersion.map(TLSProtocolVersion.name(for:)))),
            ("address", .optional(answer.address)),
            ("reason", .optional(answer.failure?.code.rawValue)),
            ("message", .optional(answer.failure?.message)),
        ])
    }

    private func json(for verdict: CertificateVerdict) -> JSONValue {
        guard let leaf = verdict.leaf else { return .null }
        return .object([
            ("subject", .string(leaf.subject)),
            ("issuer", .string(leaf.issuer)),
            ("key", .string(leaf.key.description)),
            ("signature", .string(leaf.signatureAlgorithm)),
            ("not_after", .optional(leaf.notAfter?.formatted(.iso8601))),
            ("san", .array(leaf.subjectAlternativeNames.map(JSONValue.string))),
            ("spki_sha256", .string(leaf.spkiSHA256)),
            ("trusted", .bool(verdict.trusted)),
            ("anchor", .string(Self.anchorName(verdict.anchor))),
            ("lifetime_days", leaf.notBefore.flatMap { start in
                leaf.notAfter.map { .int(Int(($0.timeIntervalSince(start) / 86_400).rounded(.up))) }
            } ?? .null),
            ("extended_key_usage", leaf.extendedKeyUsages.map { .array($0.map(JSONValue.string)) } ?? .null),
            ("scts", .int(verdict.facts.scts.count)),
            ("findings", .array(verdict.findings.map {
                .object([("reason", .string($0.reason.rawValue)), ("rule", .string($0.rule.rawValue)),
                         ("message", .string($0.message)), ("blocking", .bool($0.blocking))])
            })),
        ])
    }
}

extension DiagnoseReport {
    static func anchorName(_ anchor: TrustAnchor) -> String {
        switch anchor {
        case .system: "system"
        case .operator: "operator"
        case .untrusted: "none"
        }
    }
}

extension DiagnoseOutcome {
    var session: NegotiatedSession? { probe?.session ?? probe?.failure?.unrestricted }
}
