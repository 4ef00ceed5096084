import ArgumentParser
import Inspection
import ProxyCore

/// The transparent gate (docs/transparent-gate.md): the listeners a lab gateway's firewall sends its
/// devices' traffic to, whatever their proxy settings, and what happens to traffic the proxy path's
/// rules cannot judge as they stand (another protocol, a server name that does not match the address).
struct GatewayOptions: ParsableArguments {
    @Option(name: .customLong("listen-transparent"), help: ArgumentHelp("""
        Address where connections a firewall redirected arrive (repeatable; nftables redirect or dnat, \
        iptables REDIRECT): each is judged by its original destination (SO_ORIGINAL_DST). See deploy/gateway/.
        """, valueName: "host:port"))
    var listenTransparent: [String] = []

    @Option(name: .customLong("listen-tproxy"), help: ArgumentHelp("""
        Address where connections a TPROXY rule handed over arrive (repeatable; IP_TRANSPARENT, needs \
        CAP_NET_ADMIN): the local address of each is its original destination.
        """, valueName: "host:port"))
    var listenTProxy: [String] = []

    @Option(name: .customLong("listen-quic"), help: ArgumentHelp("""
        UDP address where the gateway's QUIC (UDP/443) is redirected (repeatable): each client's Initial is \
        read for its server name, recorded (quic-fallback) and dropped, so that the client falls back to TCP.
        """, valueName: "host:port"))
    var listenQUIC: [String] = []

    @Option(name: .customLong("transparent-other"), help: """
        A transparent connection that is neither TLS nor HTTP/1.x (other-protocol): block (closed) or allow \
        (relayed to its original destination as it is).
        """)
    var transparentOther: TransparentOtherAction = .block

    @Option(name: .customLong("sni-check"), help: """
        A transparent TLS connection whose server name does not resolve to its original destination \
        (sni-mismatch-address): off, report (recorded, the connection goes on) or block (access_denied).
        """)
    var sniCheck: SNIAddressCheck = .report

    func apply(to configuration: inout ProxyConfiguration) throws {
        configuration.listeners.transparent = try addresses(listenTransparent, flag: "--listen-transparent")
        configuration.listeners.tproxy = try addresses(listenTProxy, flag: "--listen-tproxy")
        configuration.listeners.quic = try addresses(listenQUIC, flag: "--listen-quic")
        configuration.transparent.other = transparentOther
        configuration.transparent.sniCheck = sniCheck
    }

    private func addresses(_ texts: [String], flag: String) throws -> [SocketAddress] {
        try texts.map { text in
            guard let address = SocketAddress(parsing: text) else {
                throw CommandFailure(message: "\(flag) \(text): expected IP:PORT, e.g. 10.50.0.1:3130 or [fd50::1]:3130")
            }
            return address
        }
    }
}

extension TransparentOtherAction: ExpressibleByArgument {}
extension SNIAddressCheck: ExpressibleByArgument {}
