import Foundation

/// R15: the chain leads to a trusted root (the system store or an operator's CA file).
public struct ChainTrustRule: ATSRule {
    public var id: RuleID { .r15 }
    public init() {}

    public func evaluate(_ facts: CertificateChainFacts) -> RuleResult {
        let host = facts.host
        guard let leaf = facts.leaf else {
            let problem = facts.leafProblem ?? "\(host) presented no certificate"
            return .fails(RuleFailure(id, .certificateUntrusted) { problem })
        }
        guard case .untrusted(let problem) = facts.anchor else { return .passes }
        return .fails(RuleFailure(id, .certificateUntrusted) {
            "certificate chain of \(host) does not lead to a trusted root: \(problem)"
                + " (leaf \(leaf.subject), issuer \(leaf.issuer)); trust its CA (--ca-file)"
        })
    }
}

/// R15: one certificate of the chain is within its validity period at `now`.
public struct ValidityPeriodRule: ATSRule {
    public var now: Date
    public var id: RuleID { .r15 }

    public init(now: Date) {
        self.now = now
    }

    public func evaluate(_ certificate: DatedCertificate) -> RuleResult {
        if let notAfter = certificate.notAfter, notAfter < now {
            return .fails(RuleFailure(id, .certificateExpired) {
                "\(certificate.label) expired on \(DateText.iso8601(notAfter))"
            })
        }
        if let notBefore = certificate.notBefore, notBefore > now {
            return .fails(RuleFailure(id, .certificateExpired) {
                "\(certificate.label) is not valid until \(DateText.iso8601(notBefore))"
            })
        }
        if certificate.notAfter == nil || certificate.notBefore == nil {
            return .fails(RuleFailure(id, .certificateExpired) { "\(certificate.label) has an unreadable validity period" })
        }
        return .passes
    }
}

/// R15a: names come from subjectAltName only; a leaf without one matches no host (iOS 13 and later
/// ignore the subject's CN).
public struct SubjectAltNameRule: ATSRule {
    public var id: RuleID { .r15a }
    public init() {}

    public func evaluate(_ facts: CertificateChainFacts) -> RuleResult {
        guard let leaf = facts.leaf, leaf.subjectAlternativeNames.isEmpty else { return .passes }
        let host = facts.host
        return .fails(RuleFailure(id, .certificateHostname) {
            "certificate for \(host) (\(leaf.subject)) has no subjectAltName; Apple matches names against"
                + " subjectAltName only, never the CN (reissue it with subjectAltName=DNS:\(host))"
        })
    }
}

/// R15: one of the leaf's subjectAltNames names the host. A leaf without any is `SubjectAltNameRule`'s
/// failure, not this one's, so a report names the cause once.
public struct HostNameRule: ATSRule {
    public var id: RuleID { .r15 }
    public init() {}

    public func evaluate(_ facts: CertificateChainFacts) -> RuleResult {
        guard let leaf = facts.leaf, !leaf.subjectAlternativeNames.isEmpty, !leaf.matchesHost else { return .passes }
        let host = facts.host
        return .fails(RuleFailure(id, .certificateHostname) {
            "certificate for \(leaf.nameSummary) does not match host \(host)"
        })
    }
}

/// R15: the leaf's key is RSA of at least 2048 bits or ECC of at least 256 bits; no other type passes.
public struct KeySizeRule: ATSRule {
    public var id: RuleID { .r15 }
    public init() {}

    public static func isStrongEnough(_ key: PublicKeyFacts) -> Bool {
        switch key.kind {
        case .rsa: key.bits >= 2048
        case .ec: key.bits >= 256
        case .other: false
        }
    }

    public func evaluate(_ facts: CertificateChainFacts) -> RuleResult {
        guard let leaf = facts.leaf, !Self.isStrongEnough(leaf.key) else { return .passes }
        let host = facts.host
        return .fails(RuleFailure(id, .certificateKeySize) {
            "certificate for \(host) has a \(leaf.key) key; ATS requires RSA of at least 2048 bits"
                + " or ECC of at least 256 bits"
        })
    }
}

/// R15: the leaf is signed with SHA-256 or stronger.
public struct SignatureHashRule: ATSRule {
    public var id: RuleID { .r15 }
    public init() {}

    public func evaluate(_ facts: CertificateChainFacts) -> RuleResult {
        guard let leaf = facts.leaf, !leaf.signatureHash.isStrongEnough else { return .passes }
        let host = facts.host
        return .fails(RuleFailure(id, .certificateSignatureHash) {
            "certificate for \(host) is signed with \(leaf.signatureAlgorithm); ATS requires a"
                + " SHA-256 or stronger signature hash"
        })
    }
}

/// R15a: the leaf is valid for at most 825 days from any CA, and at most 398 days when it was issued
/// on or after 2020-09-01 and chains to a root of the system store (Apple support 103769, 102028).
public struct LifetimeRule: ATSRule {
    public static let maximumDays = 825
    public static let publicMaximumDays = 398
    /// 2020-09-01T00:00:00Z: leaves issued (notBefore) on or after it get the 398-day limit.
    public static let publicLimitStart = Date(timeIntervalSince1970: 1_598_918_400)

    public var id: RuleID { .r15a }
    public init() {}

    /// The limit in days for this leaf, and why.
    static func limit(_ leaf: CertificateChainFacts.Leaf, anchor: TrustAnchor) -> (days: Int, why: String) {
        if anchor == .system, let notBefore = leaf.notBefore, notBefore >= publicLimitStart {
            return (publicMaximumDays, "a leaf issued on or after 2020-09-01 that chains to a root of the system"
                    + " store may be valid for at most \(publicMaximumDays) days")
        }
        return (maximumDays, "Apple accepts leaves valid for at most \(maximumDays) days from any CA")
    }

    public func evaluate(_ facts: CertificateChainFacts) -> RuleResult {
        guard let leaf = facts.leaf, let lifetime = leaf.lifetime else { return .passes }
        let (days, why) = Self.limit(leaf, anchor: facts.anchor)
        guard lifetime > TimeInterval(days) * 86_400 else { return .passes }
        let host = facts.host
        return .fails(RuleFailure(id, .certificateLifetime) {
            let actual = (lifetime / 86_400).rounded(.up)
            return "certificate for \(host) is valid for \(Int(actual)) days"
                + " (\(DateText.iso8601(leaf.notBefore)) to \(DateText.iso8601(leaf.notAfter))); \(why)"
                + " (reissue it valid for \(days) days or fewer)"
        })
    }
}

/// R15a: when the leaf has an extended key usage extension, it includes serverAuth (or
/// anyExtendedKeyUsage, which Apple accepts too). A leaf without the extension passes.
public struct ExtendedKeyUsageRule: ATSRule {
    public var id: RuleID { .r15a }
    public init() {}

    public func evaluate(_ facts: CertificateChainFacts) -> RuleResult {
        guard let leaf = facts.leaf, let usages = leaf.extendedKeyUsages,
              !usages.contains(ExtendedKeyUsage.serverAuth), !usages.contains(ExtendedKeyUsage.any)
        else { return .passes }
        let host = facts.host
        return .fails(RuleFailure(id, .certificateUsage) {
            let names = usages.isEmpty ? "no purpose" : usages.map(ExtendedKeyUsage.name).joined(separator: ", ")
            return "certificate for \(host) has an extended key usage of \(names) without serverAuth; Apple"
                + " requires serverAuth when the extension is present (reissue it with extendedKeyUsage=serverAuth)"
        })
    }
}

/// R17: each NSPinnedDomains identity array that is present has a match; CA identities count only for
/// CA certificates of the verified chain (anyone can send a CA certificate alongside a leaf).
public struct PinRule: ATSRule {
    public var pin: PinnedDomain
    public var id: RuleID { .r17 }

    public init(pin: PinnedDomain) {
        self.pin = pin
    }

    public func evaluate(_ facts: CertificateChainFacts) -> RuleResult {
        failures(facts).first.map(RuleResult.fails) ?? .passes
    }

    /// The leaf pin's failure and the CA pin's failure, each when present: a report names both.
    public func failures(_ facts: CertificateChainFacts) -> [RuleFailure] {
        guard let leaf = facts.leaf else { return [] }
        var failures: [RuleFailure] = []
        let host = facts.host
        let entry = "NSPinnedDomains entry \(pin.key)"
        if let identities = pin.leafIdentities, !identities.contains(leaf.spkiSHA256) {
            let hash = leaf.spkiSHA256.base64EncodedString()
            failures.append(RuleFailure(id, .certificatePin) {
                "no NSPinnedLeafIdentities value of the \(entry) matches the leaf key of \(host)"
                    + " (its SPKI-SHA256-BASE64 is \(hash))"
            })
        }
        if let identities = pin.caIdentities {
            let authorities = facts.authoritySPKIs
            if authorities.isEmpty {
                failures.append(RuleFailure(id, .certificatePin) {
                    "no NSPinnedCAIdentities value of the \(entry) can match: the certificate chain of"
                        + " \(host) does not lead to a trusted root"
                })
            } else if !authorities.contains(where: { identities.contains($0.digest) }) {
                failures.append(RuleFailure(id, .certificatePin) {
                    let seen = authorities.map { "\($0.subject) \($0.digest.base64EncodedString())" }
                    return "no NSPinnedCAIdentities value of the \(entry) matches a CA of the verified chain of"
                        + " \(host) (CA keys: \(seen.joined(separator: "; ")))"
                })
            }
        }
        return failures
    }
}

/// Dates as messages print them: ISO 8601 in UTC, to the second, as the rest of atsgate prints dates.
public enum DateText {
    public static func iso8601(_ date: Date?) -> String {
        date?.formatted(.iso8601) ?? "an unreadable date"
    }
}
