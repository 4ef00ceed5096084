import Foundation
import Glibc
import POSIX

/// A connection the new process received and said `took` for: build it and relay.
package enum AdoptedItem {
    case tunnel(TunnelHeader, AdoptedTunnel)
    case idle(IdleHeader, body: [UInt8], client: Int32)
}

/// A tunnel's descriptors and bytes, checked against its header.
package struct AdoptedTunnel {
    package var client: Int32
    package var origin: Int32
    package var upPipe: (read: Int32, write: Int32)?
    package var downPipe: (read: Int32, write: Int32)?
    package var upPending: [UInt8]
    package var downPending: [UInt8]
}

/// The new process's side of the items (design §4.4, new process step 4), on the link's reader
/// thread: each `tunnel` or `idle` message is checked (its descriptors are what its header names,
/// the pipes hold the bytes the old process counted into them), then acknowledged with `took`, and
/// only then handed to `adopt`: no byte is relayed here before the old process knows it must not
/// touch the connection any more. A message that does not check out is `refused`, with its
/// descriptors closed, and the old process keeps the connection. The other kinds go to `other`.
package final class UpgradeReceiver: @unchecked Sendable {
    private let link: HandOverLink
    private let adopt: @Sendable (AdoptedItem) -> Void
    private let other: @Sendable (HandOverKind, HandOverFrame) -> Void

    package init(link: HandOverLink, adopt: @escaping @Sendable (AdoptedItem) -> Void,
                 other: @escaping @Sendable (HandOverKind, HandOverFrame) -> Void) {
        self.link = link
        self.adopt = adopt
        self.other = other
    }

    /// Takes one message off the link (its reader thread calls this for each).
    package func received(_ frame: HandOverFrame) {
        guard let kind = HandOverKind(rawValue: frame.kind) else {
            for fd in frame.descriptors { SystemCall.close(fd) }
            return
        }
        switch kind {
        case .tunnel, .idle:
            let item: AdoptedItem
            do {
                item = try UpgradeReceiver.check(kind, frame)
            } catch {
                for fd in frame.descriptors { SystemCall.close(fd) }
                let id = (try? HandOverLink.decode(ItemID.self, from: frame))?.id ?? 0
                try? link.send(.refused, RefusedHeader(id: id, reason: error.description))
                return
            }
            let id: Int
            switch item {
            case .tunnel(let header, _): id = header.id
            case .idle(let header, _, _): id = header.id
            }
            do {
                try link.send(.took, TookHeader(ids: [id]))
            } catch {
                // The old process cannot hear it took place: it keeps the connection, so this one
                // must not relay it.
                for fd in frame.descriptors { SystemCall.close(fd) }
                return
            }
            adopt(item)
        default:
            for fd in frame.descriptors { SystemCall.close(fd) }
            other(kind, frame)
        }
    }

    private struct ItemID: Decodable { var id: Int }

    /// The item a message carries, checked; throws why it cannot be taken.
    static func check(_ kind: HandOverKind, _ frame: HandOverFrame) throws(HandOverError) -> AdoptedItem {
        let descriptors = frame.descriptors
        if kind == .idle {
            let header = try HandOverLink.decode(IdleHeader.self, from: frame)
            guard descriptors.count == 1, isSocket(descriptors[0]) else {
                throw HandOverError("an idle client needs one socket, not \(descriptors.count) descriptors")
            }
            return .idle(header, body: frame.body, client: descriptors[0])
        }
        let header = try HandOverLink.decode(TunnelHeader.self, from: frame)
        guard header.fds.count == descriptors.count, header.fds.count >= 2 else {
            throw HandOverError("tunnel \(header.id): \(descriptors.count) descriptors for \(header.fds.count) names")
        }
        guard isSocket(descriptors[0]), isSocket(descriptors[1]) else {
            throw HandOverError("tunnel \(header.id): its client and origin are not both sockets")
        }
        func pipe(_ state: PumpHeader, _ name: String) throws(HandOverError) -> (read: Int32, write: Int32)? {
            guard let indexes = state.pipe else {
                guard state.inPipe == 0 else { throw HandOverError("tunnel \(header.id): \(name) counts bytes in a pipe it does not hold") }
                return nil
            }
            guard indexes.count == 2, indexes.allSatisfy({ (2..<descriptors.count).contains($0) }) else {
                throw HandOverError("tunnel \(header.id): \(name)'s pipe is not among the descriptors")
            }
            let ends = (read: descriptors[indexes[0]], write: descriptors[indexes[1]])
            let held = (try? SystemCall.readableBytes(ends.read)) ?? -1
            guard held == state.inPipe else {
                throw HandOverError("tunnel \(header.id): \(name)'s pipe holds \(held) bytes, not the \(state.inPipe) counted")
            }
            return ends
        }
        func pending(_ state: PumpHeader, _ name: String) throws(HandOverError) -> [UInt8] {
            guard state.pending.count == 2, state.pending[0] >= 0, state.pending[1] >= 0,
                  state.pending[0] + state.pending[1] <= frame.body.count else {
                throw HandOverError("tunnel \(header.id): \(name)'s pending bytes are not in the message")
            }
            return Array(frame.body[state.pending[0]..<(state.pending[0] + state.pending[1])])
        }
        let tunnel = AdoptedTunnel(client: descriptors[0], origin: descriptors[1],
                                   upPipe: try pipe(header.up, "up"), downPipe: try pipe(header.down, "down"),
                                   upPending: try pending(header.up, "up"), downPending: try pending(header.down, "down"))
        return .tunnel(header, tunnel)
    }

    private static func isSocket(_ fd: Int32) -> Bool {
        var status = stat()
        return fstat(fd, &status) == 0 && status.st_mode & S_IFMT == S_IFSOCK
    }
}
