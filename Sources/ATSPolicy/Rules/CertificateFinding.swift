import Foundation

/// One thing wrong with a server's certificate (R15, R15a, R16, R17), with whether it blocks.
public struct CertificateFinding: Sendable, Equatable {
    /// The rule and reason, and the lazily built problem statement.
    public var failure: RuleFailure
    /// false when the requirements tolerate the finding (cleartext allowed, R15); pin failures always block.
    public var blocking: Bool
    /// What follows the problem: whether it is tolerated and what would change the outcome.
    var note: String

    public init(_ failure: RuleFailure, blocking: Bool, note: String) {
        self.failure = failure
        self.blocking = blocking
        self.note = note
    }

    /// One of the certificate-* codes.
    public var reason: BlockReason { failure.reason }
    public var rule: RuleID { failure.rule }
    /// The certificate the finding is about (0 = the leaf), when it is about one: `certificate_depth`.
    public var depth: Int? { failure.depth }
    /// Names the host and what is wrong, and what would change the outcome.
    public var message: String { failure.message + note }

    public static func == (lhs: CertificateFinding, rhs: CertificateFinding) -> Bool {
        lhs.rule == rhs.rule && lhs.reason == rhs.reason && lhs.depth == rhs.depth && lhs.blocking == rhs.blocking
            && lhs.message == rhs.message
    }
}
