import Foundation
import Glibc
import Systemd
import Testing

extension ProcessState {
    /// sd_notify against a real datagram socket named by NOTIFY_SOCKET, as systemd provides it.
    @Suite struct ServiceNotifierTests {
        let notifier = ServiceNotifier()

        @Test func readyCarriesTheStatusLine() throws {
            let sink = try DatagramSink()
            try withEnvironment(managerVariablesUnset.merging(["NOTIFY_SOCKET": sink.path]) { $1 }) {
                #expect(notifier.isSupervised)
                try notifier.ready(status: "listening on 127.0.0.1:3128")
                #expect(try sink.receiveText() == "READY=1\nSTATUS=listening on 127.0.0.1:3128")
                try notifier.ready()
                #expect(try sink.receiveText() == "READY=1")
            }
        }

        @Test func statusIsOneLine() throws {
            let sink = try DatagramSink()
            try withEnvironment(managerVariablesUnset.merging(["NOTIFY_SOCKET": sink.path]) { $1 }) {
                try notifier.status("policy /etc/p.plist\nREADY=1\r\nend")
                #expect(try sink.receiveText() == "STATUS=policy /etc/p.plist READY=1 end")
            }
        }

        @Test func reloadingCarriesTheMonotonicClock() throws {
            let sink = try DatagramSink()
            try withEnvironment(managerVariablesUnset.merging(["NOTIFY_SOCKET": sink.path]) { $1 }) {
                let before = monotonicMicroseconds()
                try notifier.reloading(status: "reloading policy")
                let after = monotonicMicroseconds()
                let lines = try sink.receiveText().split(separator: "\n").map(String.init)
                #expect(lines.count == 3)
                #expect(lines.first == "RELOADING=1")
                #expect(lines.last == "STATUS=reloading policy")
                let stamp = try #require(lines.dropFirst().first?.firstMatch(of: /^MONOTONIC_USEC=(\d+)$/)
                    .flatMap { UInt64($0.1) })
                #expect(before <= stamp && stamp <= after)
            }
        }

        @Test func watchdogAndStopping() throws {
            let sink = try DatagramSink()
            try withEnvironment(managerVariablesUnset.merging(["NOTIFY_SOCKET": sink.path]) { $1 }) {
                try notifier.watchdog()
                try notifier.stopping(status: "draining 3 connections")
                try notifier.stopping()
                try notifier.notify([("ERRNO", "98"), ("STATUS", "port in use")])
                #expect(try sink.receiveText() == "WATCHDOG=1")
                #expect(try sink.receiveText() == "STOPPING=1\nSTATUS=draining 3 connections")
                #expect(try sink.receiveText() == "STOPPING=1")
                #expect(try sink.receiveText() == "ERRNO=98\nSTATUS=port in use")
            }
        }

        /// The upgrade's hand-over to systemd: the old main process names the new one, then waits
        /// until the manager has read that before it may exit.
        @Test func mainPIDThenABarrierThatTheManagerReleases() throws {
            let sink = try DatagramSink()
            try withEnvironment(managerVariablesUnset.merging(["NOTIFY_SOCKET": sink.path]) { $1 }) {
                try notifier.mainPID(4711, status: "upgraded: PID 4711 serves now")
                #expect(try sink.receiveText() == "MAINPID=4711\nSTATUS=upgraded: PID 4711 serves now")
                // The manager reads the barrier's datagram; its pipe, received and dropped, closes, and
                // that is what the barrier waits for.
                let fd = sink.fd
                let manager = Thread {
                    var datagram = [UInt8](repeating: 0, count: 256)
                    _ = recv(fd, &datagram, datagram.count, 0)
                }
                manager.start()
                try notifier.barrier(timeout: .seconds(10))
            }
        }

        @Test func aBarrierNobodyReadsTimesOut() throws {
            let sink = try DatagramSink()
            try withEnvironment(managerVariablesUnset.merging(["NOTIFY_SOCKET": sink.path]) { $1 }) {
                let error = #expect(throws: SystemdError.self) { try notifier.barrier(timeout: .milliseconds(100)) }
                #expect(error?.description == "sd_notify_barrier (BARRIER): \(String(cString: strerror(ETIMEDOUT)))")
            }
            #expect(try sink.receiveText() == "BARRIER=1")
            // Outside systemd there is nothing to wait for.
            try withEnvironment(managerVariablesUnset) { try notifier.barrier(timeout: .milliseconds(1)) }
        }

        @Test func withoutNotifySocketNothingIsSent() throws {
            let sink = try DatagramSink()
            try withEnvironment(managerVariablesUnset) {
                #expect(!notifier.isSupervised)
                try notifier.ready(status: "not sent")
                try notifier.watchdog()
                try notifier.stopping()
            }
            // Had any of those reached the socket, it would come before this one.
            try withEnvironment(managerVariablesUnset.merging(["NOTIFY_SOCKET": sink.path]) { $1 }) {
                try notifier.status("marker")
            }
            #expect(try sink.receiveText() == "STATUS=marker")
        }

        @Test func anUnreachableSocketIsAnError() throws {
            let path = "/tmp/atsgate-absent-\(getpid()).sock"
            withEnvironment(managerVariablesUnset.merging(["NOTIFY_SOCKET": path]) { $1 }) {
                let error = #expect(throws: SystemdError.self) { try notifier.ready() }
                #expect(error?.description.hasPrefix("sd_notify (READY): ") == true)
            }
        }

        @Test func watchdogIntervalFromTheManager() {
            let pid = String(getpid())
            withEnvironment(managerVariablesUnset.merging(["WATCHDOG_USEC": "30000000", "WATCHDOG_PID": pid]) { $1 }) {
                #expect(notifier.watchdogInterval == .seconds(30))
            }
            withEnvironment(managerVariablesUnset.merging(["WATCHDOG_USEC": "1500000"]) { $1 }) {
                #expect(notifier.watchdogInterval == .milliseconds(1500))
            }
            // The variable was meant for another process (the manager's main PID is someone else).
            withEnvironment(managerVariablesUnset.merging(["WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "1"]) { $1 }) {
                #expect(notifier.watchdogInterval == nil)
            }
            withEnvironment(managerVariablesUnset.merging(["WATCHDOG_USEC": "soon"]) { $1 }) {
                #expect(notifier.watchdogInterval == nil)
            }
            withEnvironment(managerVariablesUnset) {
                #expect(notifier.watchdogInterval == nil)
            }
        }
    }
}

private func monotonicMicroseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1_000
}
