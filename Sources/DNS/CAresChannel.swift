import ATSPolicy
import CAres
import EventLoops
import Glibc
import POSIX

/// One c-ares channel, confined to one event loop: its sockets are watched by the loop's poller (c-ares
/// tells which through its socket-state callback) and its retransmissions and timeouts run on the
/// loop's clock, so a lookup costs no thread and never blocks. The only code that touches c-ares.
final class CAresChannel {
    private var channel: ares_channel?
    private let loop: EventLoop
    private var sockets: [Int32: Channel] = [:]
    /// Lookups started and not yet called back.
    private(set) var pending = 0

    /// Reads /etc/resolv.conf (servers, search, ndots, timeout, attempts) and the hosts lookup order,
    /// as the system resolver does; `servers` (`--dns-server`) replaces the configured servers.
    init(loop: EventLoop, servers: [SocketAddress]) throws(LookupFailure) {
        self.loop = loop
        CAresChannel.initializeLibrary
        var options = ares_options()
        options.sock_state_cb = { data, fd, readable, writable in
            guard let data else { return }
            Unmanaged<CAresChannel>.fromOpaque(data).takeUnretainedValue()
                .socketState(fd, readable: readable != 0, writable: writable != 0)
        }
        options.sock_state_cb_data = Unmanaged.passUnretained(self).toOpaque()
        var created: ares_channel?
        let status = ares_init_options(&created, &options, ARES_OPT_SOCK_STATE_CB)
        guard status == ARES_SUCCESS, let created else {
            throw LookupFailure(.failure, "the resolver cannot start: \(CAresChannel.describe(status))")
        }
        channel = created
        guard !servers.isEmpty else { return }
        let list = servers.map(\.description).joined(separator: ",")
        let set = ares_set_servers_ports_csv(created, list)
        guard set == ARES_SUCCESS else {
            ares_destroy(created)
            channel = nil
            throw LookupFailure(.failure, "--dns-server \(list): \(CAresChannel.describe(set))")
        }
    }

    private static let initializeLibrary: Void = {
        _ = ares_library_init(ARES_LIB_INIT_ALL)
    }()

    /// Cancels what is in flight (each lookup is called back with a failure) and closes the sockets.
    /// Never from inside a c-ares callback.
    func destroy() {
        guard let channel else { return }
        self.channel = nil
        ares_destroy(channel)
        loop.clock.cancel(self)
        for socket in sockets.values { socket.detach() }
        sockets = [:]
    }

    /// The addresses of one family for `name`, with the smallest TTL of the answer (0 for the hosts
    /// file); `completion` runs on the loop.
    func lookup(_ name: String, family: AddressFamily, completion: @escaping (Result<Answer, LookupFailure>) -> Void) {
        guard let channel else {
            return completion(.failure(LookupFailure(.failure, "the resolver is stopping")))
        }
        pending += 1
        if pending == 1 { startClock() }
        var hints = ares_addrinfo_hints()
        hints.ai_family = family == .v6 ? AF_INET6 : AF_INET
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        // No sorting: c-ares would connect(2) a UDP socket to every address to rank it (RFC 6724);
        // Happy Eyeballs orders the candidates itself.
        hints.ai_flags = ARES_AI_NOSORT
        let request = Unmanaged.passRetained(Request(self, name: name, family: family, completion)).toOpaque()
        ares_getaddrinfo(channel, name, nil, &hints, { argument, status, _, result in
            guard let argument else { return }
            let request = Unmanaged<Request>.fromOpaque(argument).takeRetainedValue()
            let outcome = CAresChannel.outcome(status: status, result: result, request)
            if let result { ares_freeaddrinfo(result) }
            request.owner?.finished()
            request.completion(outcome)
        }, request)
    }

    private final class Request {
        weak var owner: CAresChannel?
        let name: String
        let family: AddressFamily
        let completion: (Result<Answer, LookupFailure>) -> Void

        init(_ owner: CAresChannel, name: String, family: AddressFamily,
             _ completion: @escaping (Result<Answer, LookupFailure>) -> Void) {
            self.owner = owner
            self.name = name
            self.family = family
            self.completion = completion
        }
    }

    private func finished() {
        pending -= 1
        if pending == 0 { loop.clock.cancel(self) }
    }

    private static func outcome(status: Int32, result: UnsafeMutablePointer<ares_addrinfo>?,
                                _ request: Request) -> Result<Answer, LookupFailure> {
        let what = "\(request.name) (\(request.family == .v6 ? "AAAA" : "A"))"
        switch status {
        case ARES_SUCCESS:
            var addresses: [IPAddress] = []
            var ttl: Int?
            var node = result?.pointee.nodes
            while let current = node {
                if let raw = current.pointee.ai_addr, let address = SocketAddress(raw, length: Int(current.pointee.ai_addrlen)),
                   !addresses.contains(address.ip) {
                    addresses.append(address.ip)
                    ttl = min(ttl ?? Int.max, max(0, Int(current.pointee.ai_ttl)))
                }
                node = current.pointee.ai_next
            }
            guard !addresses.isEmpty else {
                return .failure(LookupFailure(.noData, "\(what): the name has no address of this family (NODATA)"))
            }
            return .success(Answer(addresses: addresses, ttl: ttl ?? 0))
        case ARES_ENOTFOUND:
            return .failure(LookupFailure(.nxdomain, "\(what): no such name (NXDOMAIN)"))
        case ARES_ENODATA:
            return .failure(LookupFailure(.noData, "\(what): the name has no address of this family (NODATA)"))
        case ARES_ETIMEOUT:
            return .failure(LookupFailure(.timeout, "\(what): the resolver did not answer"))
        default:
            return .failure(LookupFailure(.failure, "\(what): \(describe(status))", rcode: rcode(status)))
        }
    }

    /// The RCODE a c-ares status stands for, when it stands for one.
    static func rcode(_ status: Int32) -> String? {
        switch status {
        case ARES_ESERVFAIL: "SERVFAIL"
        case ARES_EREFUSED: "REFUSED"
        case ARES_ENOTIMP: "NOTIMP"
        case ARES_EFORMERR: "FORMERR"
        default: nil
        }
    }

    static func describe(_ status: Int32) -> String {
        let text = String(cString: ares_strerror(status))
        switch status {
        case ARES_ESERVFAIL: return "the resolver failed (SERVFAIL)"
        case ARES_EREFUSED: return "the resolver refused the query (REFUSED)"
        case ARES_EBADRESP: return "the resolver's answer is malformed (\(text))"
        // c-ares ends here when every server failed: SERVFAIL, REFUSED, a broken TCP answer, or no
        // server reachable at all.
        case ARES_ECONNREFUSED: return "no DNS server gave an answer (SERVFAIL, REFUSED, a broken answer, or unreachable)"
        default: return text
        }
    }

    // MARK: the loop's side

    /// c-ares opened, changed or is about to close one of its sockets.
    private func socketState(_ fd: Int32, readable: Bool, writable: Bool) {
        guard readable || writable else {
            sockets.removeValue(forKey: fd)?.detach() // c-ares closes it right after
            return
        }
        let socket: Channel
        if let known = sockets[fd] {
            socket = known
        } else {
            socket = Channel(fd: fd, poller: loop.poller)
            socket.onReadable { [unowned self] in process(read: fd) }
            socket.onWritable { [unowned self] in process(write: fd) }
            sockets[fd] = socket
        }
        socket.wantRead(readable)
        socket.wantWrite(writable)
    }

    private func process(read: Int32 = ARES_SOCKET_BAD, write: Int32 = ARES_SOCKET_BAD) {
        guard let channel else { return }
        ares_process_fd(channel, read, write)
    }

    /// Retransmissions and c-ares' own timeouts, checked on the loop's clock while lookups are pending.
    private func startClock() {
        loop.clock.schedule(self, after: LoopClock.resolution, repeating: true) { [unowned self] in process() }
    }
}

/// One family's answer: the addresses and the smallest TTL among them, in seconds.
struct Answer {
    var addresses: [IPAddress]
    var ttl: Int
}
