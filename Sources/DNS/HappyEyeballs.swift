import EventLoops
import POSIX

/// Happy Eyeballs version 2 (RFC 8305) for one upstream connection: the addresses of each family are
/// raced as their answers come, families interleaved (IPv6 first), a new attempt every 250 ms (or at
/// once when the one before fails), and the first connection to complete wins; the others are
/// closed. An IPv6 path that black-holes costs 250 ms, not the connect timeout.
///
/// Confined to the connection's loop. The connection owns it while connecting, hands it each
/// resolution as it arrives (`add`, `familyFailed`) and cancels it on its own timeout.
package final class HappyEyeballs {
    /// RFC 8305 section 5's recommended Connection Attempt Delay.
    package static let connectionAttemptDelay = 0.25
    /// Section 3's Resolution Delay: an A answer waits this long for the AAAA one.
    package static let resolutionDelay = 0.05

    package enum Outcome {
        case connected(Channel, SocketAddress)
        /// Every address failed (or there was none): the last error.
        case failed(String)
    }

    private let loop: EventLoop
    private var remaining: [AddressFamily: [SocketAddress]] = [.v6: [], .v4: []]
    /// Answers still to come (one per family, or one for a literal or a pinned name).
    private var answersPending: Int
    private var attempts: [(channel: Channel, address: SocketAddress)] = []
    private var lastFamily: AddressFamily?
    private var started = false
    /// A timer is set (the resolution delay, or the next attempt's delay).
    private var timerArmed = false
    private var lastError: String?
    private var completion: ((Outcome) -> Void)?
    /// How many attempts were made, for the message of a failure.
    package private(set) var attempted = 0

    package init(loop: EventLoop, answers: Int, completion: @escaping (Outcome) -> Void) {
        self.loop = loop
        self.answersPending = answers
        self.completion = completion
    }

    /// One answer's addresses (`family` nil: a literal or a pinned name, every family at once).
    package func add(_ addresses: [SocketAddress], family: AddressFamily?) {
        guard completion != nil else { return }
        answersPending = max(0, answersPending - 1)
        for address in addresses {
            remaining[address.ip.isIPv4 ? .v4 : .v6, default: []].append(address)
        }
        if !started {
            // An A answer first waits a moment for the AAAA one (section 3).
            if family == .v4, answersPending > 0, remaining[.v6, default: []].isEmpty {
                guard !timerArmed else { return }
                return arm(after: HappyEyeballs.resolutionDelay)
            }
            return begin()
        }
        // New addresses while nothing is scheduled (every earlier attempt is older than the delay,
        // or failed): try one now.
        if !timerArmed { next() }
    }

    /// One family's lookup gave no address.
    package func familyFailed() {
        guard completion != nil else { return }
        answersPending = max(0, answersPending - 1)
        if !started {
            if answersPending == 0 || !remaining[.v4, default: []].isEmpty { begin() }
            return
        }
        if !timerArmed { next() }
    }

    /// Closes every attempt; nothing is reported.
    package func cancel() {
        completion = nil
        loop.clock.cancel(self)
        for attempt in attempts { attempt.channel.close() }
        attempts = []
    }

    private func begin() {
        started = true
        loop.clock.cancel(self)
        timerArmed = false
        next()
    }

    private func arm(after seconds: Double) {
        timerArmed = true
        loop.clock.schedule(self, after: seconds, repeating: false) { [unowned self] in
            timerArmed = false
            if started { next() } else { begin() }
        }
    }

    /// The next address, the other family than the last attempt's when it has one.
    private func popCandidate() -> SocketAddress? {
        let preferred: [AddressFamily] = lastFamily == .v6 ? [.v4, .v6] : [.v6, .v4]
        for family in preferred where !remaining[family, default: []].isEmpty {
            lastFamily = family
            return remaining[family]!.removeFirst()
        }
        return nil
    }

    /// Starts the next attempt (and arms the delay before the one after), or reports the failure when
    /// nothing is left to try and nothing more can come.
    private func next() {
        while completion != nil {
            guard let address = popCandidate() else {
                if attempts.isEmpty, answersPending == 0 {
                    report(.failed(lastError ?? "no address"))
                }
                return
            }
            attempted += 1
            let fd: Int32
            do {
                fd = try Socket.startConnect(to: address)
            } catch {
                lastError = error.description // a blackhole route, no route: the next one at once
                continue
            }
            switch Socket.connectProgress(fd, to: address) {
            case .connected:
                return report(.connected(Channel(fd: fd, poller: loop.poller), address))
            case .failed(let code):
                SystemCall.close(fd)
                lastError = SystemError(call: "connect \(address)", code: code).description
                continue
            case .inProgress:
                break
            }
            let channel = Channel(fd: fd, poller: loop.poller)
            attempts.append((channel, address))
            channel.onWritable { [unowned self, unowned channel] in finished(channel, address) }
            channel.wantWrite(true)
            arm(after: HappyEyeballs.connectionAttemptDelay)
            return
        }
    }

    private func finished(_ channel: Channel, _ address: SocketAddress) {
        guard completion != nil else { return }
        channel.wantWrite(false)
        let code = Socket.connectResult(channel.fd)
        attempts.removeAll { $0.channel === channel }
        if code == 0 { return report(.connected(channel, address)) }
        channel.close()
        lastError = SystemError(call: "connect \(address)", code: code).description
        // A failed attempt makes way for the next at once (section 5).
        loop.clock.cancel(self)
        timerArmed = false
        next()
    }

    private func report(_ outcome: Outcome) {
        guard let completion else { return }
        self.completion = nil
        loop.clock.cancel(self)
        timerArmed = false
        for attempt in attempts { attempt.channel.close() }
        attempts = []
        // The winner's handler points here: the connection binds its own.
        if case .connected(let channel, _) = outcome { channel.onWritable {} }
        completion(outcome)
    }
}
