/// The two address families a name is asked for (AAAA and A), in Happy Eyeballs' order of preference.
package enum AddressFamily: Sendable, Hashable, CaseIterable {
    case v6
    case v4

    /// The record type asked for.
    package var recordType: String { self == .v6 ? "AAAA" : "A" }
}
