import POSIX

/// Idle keep-alive connections to origins (and to parent proxies, kept apart: a parent's address
/// may also be an origin's), one pool per event-loop queue (so no locks), keyed by the address
/// connected to. A parked connection is watched: any event while idle (the peer closing it, or bytes
/// it should not send) removes and closes it.
package final class UpstreamPool {
    package static let maximumIdlePerOrigin = 32

    private struct Key: Hashable {
        var address: SocketAddress
        var viaParent: Bool
    }

    private var idle: [Key: [Channel]] = [:]

    package init() {}

    /// An idle connection to `address`, or nil.
    package func take(_ address: SocketAddress, viaParent: Bool = false) -> Channel? {
        let key = Key(address: address, viaParent: viaParent)
        guard var channels = idle[key], let channel = channels.popLast() else { return nil }
        idle[key] = channels.isEmpty ? nil : channels
        return channel
    }

    package func park(_ channel: Channel, address: SocketAddress, viaParent: Bool = false) {
        let key = Key(address: address, viaParent: viaParent)
        var channels = idle[key] ?? []
        guard channels.count < UpstreamPool.maximumIdlePerOrigin else { return channel.close() }
        channel.wantWrite(false)
        channel.onWritable {}
        channel.onReadable { [unowned self, unowned channel] in
            idle[key]?.removeAll { $0 === channel }
            channel.close()
        }
        channel.wantRead(true)
        channels.append(channel)
        idle[key] = channels
    }
}
