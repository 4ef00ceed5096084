/// A proxy login for the device to send (`ProxyUsername`, `ProxyPassword`). The password is kept for
/// the profile and never shown: `description` leaves it out.
package struct ProxyCredentials: Sendable, Equatable, CustomStringConvertible {
    package let user: String
    /// nil: the profile names the user only.
    package let password: String?

    /// The user name is what `--auth-file` lists: no colon, since Basic credentials are `user:password`.
    package init(user: String, password: String?) throws(ProfileInputError) {
        try Self.checkUser(user)
        if let password { try Self.checkPassword(password) }
        self.user = user
        self.password = password
    }

    /// A user name: not empty, no colon, nothing a property list cannot hold.
    package static func checkUser(_ user: String) throws(ProfileInputError) {
        try ProfileText.check(user)
        guard !user.contains(":") else {
            throw ProfileInputError("contains ':', which Basic proxy credentials (user:password) cannot carry in a user name")
        }
    }

    /// A password: not empty, nothing a property list cannot hold.
    package static func checkPassword(_ password: String) throws(ProfileInputError) {
        try ProfileText.check(password)
    }

    package var description: String { password == nil ? "user \(user) without a password" : "user \(user) with a password" }
}
