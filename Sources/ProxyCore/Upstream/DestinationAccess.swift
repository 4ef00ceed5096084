import ATSPolicy
import ProxyAccess
import ProxyAnswers

/// The result of the destination ACL on the addresses of one destination.
enum DestinationAccess {
    /// The addresses this client may reach, in the resolver's order.
    case allowed([IPAddress])
    /// None of them: 403 with reason `destination-not-allowed` (enforced in report mode too).
    case denied(Verdict)
}

/// The destination ACL at its one place in the upstream path (UpstreamConnector): between the
/// resolver, which yields addresses (after --resolve), and the connect, which tries them in turn.
/// Every address that could be tried is checked here, for tunnels, forwarded requests (pooled
/// connections included) and upgrades alike, so a name that resolves to loopback is caught as the
/// literal would be.
extension DestinationACL {
    /// Filters `addresses` (what `destination`'s host resolved to) through the ACL. When none is left,
    /// the verdict names the rule that refused the first one, and the flag that opens it.
    func permitted(_ addresses: [IPAddress], for destination: Destination, client: IPAddress) -> DestinationAccess {
        let name: String? = if case .name(let name) = destination.host { name } else { nil }
        var allowed: [IPAddress] = []
        var firstDenial: DestinationDenial?
        for address in addresses {
            if let denial = check(name: name, address: address, client: client) {
                firstDenial = firstDenial ?? denial
            } else {
                allowed.append(address)
            }
        }
        if let firstDenial, allowed.isEmpty {
            return .denied(.block(.destinationNotAllowed, message: firstDenial.message))
        }
        return .allowed(allowed)
    }

    /// Through a parent proxy, which resolves: the host as the client named it (a literal as its
    /// address, a name against the name rules). nil when it may go on.
    func refusalThroughParent(_ destination: Destination, client: IPAddress) -> Verdict? {
        check(host: destination.host, client: client).map { .block(.destinationNotAllowed, message: $0.message) }
    }
}
