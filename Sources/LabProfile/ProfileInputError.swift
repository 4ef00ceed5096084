/// Why a value cannot go into a profile. The command line names the flag and the value; this says
/// what is wrong with it.
package struct ProfileInputError: Error, CustomStringConvertible, Sendable, Equatable {
    package var problem: String

    package init(_ problem: String) { self.problem = problem }

    package var description: String { problem }
}
