import ATSPolicy
import DecisionLog
import EventLoops
import POSIX

/// Items made from, and made back into, a connection's parts: ProxyConnection+HandOver.swift hands
/// over what only the connection knows, the rest is here.
extension HandOverItem {
    /// A plain tunnel in its relay phase: its sockets, its two directions (EventLoops' pump
    /// snapshots, with the pipes of the directions that have bytes in flight), and its record as it
    /// would be written now (`policy`: the generation's name for it).
    package static func tunnel(id: Int, client: (fd: Int32, address: SocketAddress), localPort: Int,
                               origin: (fd: Int32, address: SocketAddress), started: Double, lastActivity: Double,
                               up: Pump.Snapshot, down: Pump.Snapshot, record: DecisionRecord, policy: String,
                               proxyUser: String?) -> HandOverItem? {
        var descriptors = [client.fd, origin.fd]
        var names = ["client", "origin"]
        var body: [UInt8] = []
        func direction(_ snapshot: Pump.Snapshot, _ name: String) -> PumpHeader {
            var indexes: [Int]?
            if let pipe = snapshot.pipe {
                descriptors += [pipe.read, pipe.write]
                names += ["\(name).pipe.read", "\(name).pipe.write"]
                indexes = [descriptors.count - 2, descriptors.count - 1]
            }
            body += snapshot.pending
            return PumpHeader(pending: [body.count - snapshot.pending.count, snapshot.pending.count], pipe: indexes,
                              inPipe: snapshot.inPipe, bytes: snapshot.bytes, sourceEnded: snapshot.sourceEnded,
                              finished: snapshot.finished)
        }
        let upHeader = direction(up, "up"), downHeader = direction(down, "down")
        let labels = RecordLabels(time: record.time, method: record.method, app: record.app, device: record.device,
                                  enforced: record.enforced, parent: record.parent, upstreamIP: record.upstreamIP?.description,
                                  connectedAfter: record.connectedAfter, bytesUp: record.bytesUp, bytesDown: record.bytesDown)
        let header = TunnelHeader(id: id, client: client.address.description, localPort: localPort,
                                  upstream: origin.address.description, started: started, lastActivity: lastActivity,
                                  up: upHeader, down: downHeader, record: record.frozen(policy: policy), labels: labels,
                                  proxyUser: proxyUser, fds: names)
        guard let encoded = try? HandOverLink.encode(header) else { return nil }
        return HandOverItem(id: id, kind: .tunnel, header: encoded, body: body, descriptors: descriptors)
    }

    /// A plain keep-alive client between requests, with what it sent of its next request head.
    package static func idle(id: Int, client: (fd: Int32, address: SocketAddress), localPort: Int, inbound: [UInt8],
                             proxyUser: String?, verifiedCredentials: [UInt8]?) -> HandOverItem? {
        let header = IdleHeader(id: id, client: client.address.description, localPort: localPort, proxyUser: proxyUser,
                                verifiedCredentials: verifiedCredentials)
        guard let encoded = try? HandOverLink.encode(header) else { return nil }
        return HandOverItem(id: id, kind: .idle, header: encoded, body: inbound, descriptors: [client.fd])
    }
}

extension TunnelHeader {
    /// The record to write when the tunnel ends here: the old process's, frozen, with its counts
    /// so far and `note` added to its message.
    package func record(client: SocketAddress, note: String) -> DecisionRecord {
        var record = DecisionRecord(thawing: self.record, client: client, method: labels.method)
        record.time = labels.time
        record.app = labels.app
        record.device = labels.device
        record.enforced = labels.enforced
        record.parent = labels.parent
        record.upstreamIP = labels.upstreamIP.flatMap { IPAddress.parseStrict(Substring($0)) }
        record.connectedAfter = labels.connectedAfter
        record.bytesUp = labels.bytesUp
        record.bytesDown = labels.bytesDown
        record.appendNote(note)
        return record
    }
}

extension AdoptedTunnel {
    /// The two directions, where the old process left them.
    package func pumps(_ header: TunnelHeader, client: Channel, origin: Channel, loop: EventLoop) -> (up: Pump, down: Pump) {
        func pump(_ state: PumpHeader, _ pending: [UInt8], _ pipe: (read: Int32, write: Int32)?, from: Channel, to: Channel) -> Pump {
            Pump(resuming: Pump.Snapshot(pending: pending, pipe: pipe, inPipe: state.inPipe, bytes: state.bytes,
                                         sourceEnded: state.sourceEnded, finished: state.finished),
                 from: from, to: to, loop: loop)
        }
        return (pump(header.up, upPending, upPipe, from: client, to: origin),
                pump(header.down, downPending, downPipe, from: origin, to: client))
    }

    /// Closes every descriptor (a tunnel that cannot be built).
    package func closeAll() {
        for fd in [client, origin, upPipe?.read, upPipe?.write, downPipe?.read, downPipe?.write].compactMap({ $0 }) {
            SystemCall.close(fd)
        }
    }
}
