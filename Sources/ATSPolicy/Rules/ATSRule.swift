/// The ATS-SPEC rule that decided a TLS-level outcome: R14 (version, cipher suite), R15 and R15a
/// (certificate), R16 (Certificate Transparency), R17 (pins), R18 (system connections).
/// "ATS-SPEC Rn", here and in every comment, is the rule of docs/reference/ats-rules.md.
public enum RuleID: String, Sendable, CaseIterable, Comparable {
    case r14 = "R14"
    case r15 = "R15"
    case r15a = "R15a"
    case r16 = "R16"
    case r17 = "R17"
    case r18 = "R18"

    public static func < (lhs: RuleID, rhs: RuleID) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }
}

/// Why a rule refused: its id, the stable reason code, and a message built only when someone reads it
/// (most failures of a busy proxy are counted, not read).
public struct RuleFailure: Sendable, CustomStringConvertible {
    public let rule: RuleID
    public let reason: BlockReason
    /// The certificate of the chain the failure is about (0 = the leaf, then each issuer up to the
    /// anchor), when it is about one: the record's `certificate_depth`.
    public let depth: Int?
    private let makeMessage: @Sendable () -> String

    public init(_ rule: RuleID, _ reason: BlockReason, depth: Int? = nil, message: @escaping @Sendable () -> String) {
        self.rule = rule
        self.reason = reason
        self.depth = depth
        self.makeMessage = message
    }

    /// The same failure, about the certificate at `depth`.
    public func at(depth: Int?) -> RuleFailure {
        RuleFailure(rule, reason, depth: depth, message: makeMessage)
    }

    /// Names the host, what is wrong, and the key (or server change) that would change the outcome.
    public var message: String { makeMessage() }

    /// "R15a certificate-lifetime: ...".
    public var description: String { "\(rule.rawValue) \(reason.rawValue): \(message)" }
}

/// The outcome of one rule, or of a composite that stopped at its first failure.
public enum RuleResult: Sendable {
    case passes
    case fails(RuleFailure)

    public var failure: RuleFailure? {
        if case .fails(let failure) = self { return failure }
        return nil
    }

    public var passed: Bool { failure == nil }
}

/// One ATS rule over plain facts (no OpenSSL, no sockets): TLSWire and TLSClient extract the facts,
/// every caller (the proxy's inspection, the probe, the upgrade path, `diagnose`) asks the same rule.
public protocol ATSRule<Facts>: Sendable {
    associatedtype Facts
    /// The rule of ATS-SPEC this type implements.
    var id: RuleID { get }
    func evaluate(_ facts: Facts) -> RuleResult
}

/// Rules over the same facts, tried in order; the first failure is the answer, passed through as is.
/// An empty set passes: it asks for nothing (unlike an "any of", which would have to fail closed).
public struct AllRules<Facts>: Sendable {
    public let rules: [any ATSRule<Facts>]

    public init(_ rules: [any ATSRule<Facts>]) {
        self.rules = rules
    }

    public func evaluate(_ facts: Facts) -> RuleResult {
        for rule in rules {
            if case .fails(let failure) = rule.evaluate(facts) { return .fails(failure) }
        }
        return .passes
    }

    /// Every rule's failure, in order: for reports that list all findings, not only the deciding one.
    public func failures(_ facts: Facts) -> [RuleFailure] {
        rules.compactMap { $0.evaluate(facts).failure }
    }
}
