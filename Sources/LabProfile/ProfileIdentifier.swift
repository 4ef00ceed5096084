/// A reverse-DNS identifier (`com.example.lab.atsgate`): the profile's PayloadIdentifier, and the
/// prefix of each payload's. A device replaces an installed profile that has the same identifier, so
/// regenerating a lab's profile with the same prefix updates the devices instead of adding a second one.
package struct ProfileIdentifier: Hashable, Sendable, CustomStringConvertible {
    package let description: String

    /// Dot-separated labels of ASCII letters, digits and hyphens (a hyphen neither first nor last), two
    /// labels at least: the shape of a bundle identifier or a reversed DNS name.
    package init(parsing text: String) throws(ProfileInputError) {
        let example = "expected a reverse-DNS identifier such as com.example.lab"
        guard !text.isEmpty else { throw ProfileInputError("is empty; \(example)") }
        guard text.utf8.count <= 200 else {
            throw ProfileInputError("is longer than 200 characters (payload identifiers add a suffix to it)")
        }
        let labels = text.split(separator: ".", omittingEmptySubsequences: false)
        guard labels.count >= 2 else { throw ProfileInputError("has a single label; \(example)") }
        for label in labels {
            guard !label.isEmpty else { throw ProfileInputError("has an empty label (a leading, trailing or double dot); \(example)") }
            guard label.utf8.count <= 63 else { throw ProfileInputError("has a label longer than 63 characters") }
            if let bad = label.unicodeScalars.first(where: { !Self.isLabelCharacter($0) }) {
                let shown = bad.properties.generalCategory == .control || bad == " " ? "U+\(String(bad.value, radix: 16, uppercase: true))" : "'\(bad)'"
                throw ProfileInputError("has the character \(shown); \(example) (letters, digits and hyphens between dots)")
            }
            guard label.first != "-", label.last != "-" else {
                throw ProfileInputError("has a label that starts or ends with a hyphen ('\(label)')")
            }
        }
        description = text
    }

    /// This identifier with more labels: `lab.atsgate` + `ca.1` is `lab.atsgate.ca.1`.
    package func appending(_ suffix: String) -> String { description + "." + suffix }

    private static func isLabelCharacter(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case "a"..."z", "A"..."Z", "0"..."9", "-": true
        default: false
        }
    }
}
