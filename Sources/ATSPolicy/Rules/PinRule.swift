import Foundation

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
            failures.append(RuleFailure(id, .certificatePin, depth: 0) {
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
