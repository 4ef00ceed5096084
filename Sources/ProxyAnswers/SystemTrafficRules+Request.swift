import ATSPolicy
import HTTP1
import ProxyAccess

extension SystemTrafficRules {
    /// Whether a proxied request is the device's own (`--system-traffic`): a certificate fetch, a
    /// captive probe, or a destination of the system-destinations table. `destination`: where the
    /// request goes (a CONNECT's authority, an absolute-form URL, a transparent request's Host).
    package func classify(_ head: RequestHead, userAgent: String?, destination: Destination?) -> SystemTraffic? {
        if head.method == "CONNECT" {
            guard let destination else { return nil }
            return classify(tunnelTo: destination.host, address: nil, port: UInt16(destination.port), userAgent: userAgent)
        }
        return classify(method: head.method, path: head.originForm, userAgent: userAgent,
                        contentType: head.field(named: "content-type"), host: destination?.host, address: nil,
                        port: UInt16(destination?.port ?? 80))
    }
}
