import EventLoop
import POSIX
/// Idle keep-alive connections to origins, one pool per event-loop queue (so no locks), keyed by
/// the origin's address. A parked connection is watched: any event while idle (the origin closing
/// it, or bytes it should not send) removes and closes it.
package final class UpstreamPool {
    static let maximumIdlePerOrigin = 32

    private var idle: [SocketAddress: [Channel]] = [:]

    /// An idle connection to `address`, or nil.
    func take(_ address: SocketAddress) -> Channel? {
        guard var channels = idle[address], let channel = channels.popLast() else { return nil }
        idle[address] = channels.isEmpty ? nil : channels
        return channel
    }

    func park(_ channel: Channel, address: SocketAddress) {
        var channels = idle[address] ?? []
        guard channels.count < UpstreamPool.maximumIdlePerOrigin else { return channel.close() }
        channel.wantWrite(false)
        channel.onWritable {}
        channel.onReadable { [unowned self, unowned channel] in
            idle[address]?.removeAll { $0 === channel }
            channel.close()
        }
        channel.wantRead(true)
        channels.append(channel)
        idle[address] = channels
    }
}
