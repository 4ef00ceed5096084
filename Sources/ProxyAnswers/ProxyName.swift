import HTTP1

/// `--proxy-name`: how the proxy names itself in `Proxy-Status` (RFC 9209 section 2: a member is an
/// sf-token or an sf-string). A name that is a token is written as one (`atsgate`); any other
/// printable ASCII text is written as a string (`"lab proxy 3"`).
public struct ProxyName: Sendable, Equatable, CustomStringConvertible {
    public let text: String
    /// The member as written in the field.
    package let member: String

    public static let atsgate = ProxyName(checked: "atsgate")

    /// Takes `text` as the name, or says why it cannot be one.
    public init(_ text: String) throws(ProxyNameError) {
        guard !text.isEmpty else { throw ProxyNameError(text: text, problem: "it is empty") }
        guard StructuredField.isStringContent(text) else {
            throw ProxyNameError(text: text, problem: "Proxy-Status names the proxy with an sf-token or an sf-string "
                                     + "(RFC 9209), which holds printable ASCII only (no control characters, no non-ASCII letters)")
        }
        self.init(checked: text)
    }

    private init(checked text: String) {
        self.text = text
        member = StructuredField.tokenOrString(text)
    }

    public var description: String { text }
}

/// Why a `--proxy-name` cannot be a Proxy-Status member.
public struct ProxyNameError: Error, CustomStringConvertible {
    public var text: String
    public var problem: String

    public var description: String { "--proxy-name '\(text)': \(problem)" }
}
