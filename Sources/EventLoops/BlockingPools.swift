/// The proxy's blocking work, each kind on a bounded pool of its own, so that no kind of slow work can
/// delay another: a slow origin's probes never hold up a certificate verdict, and a burst of
/// password hashes never holds up either. Names are resolved by c-ares on a loop and need no pool.
/// Each queue is bounded by the connections waiting on it (at most --max-connections); /metrics shows
/// its length (`atsgate_blocking_queue_length`).
package enum BlockingPools {
    /// Certificate chain evaluations (R15-R17): CPU work of a millisecond or so each.
    package static let certificates = BlockingPool(threads: 4, name: "atsgate.certificates")
    /// Handshakes of our own with an origin (a TLS 1.3 server's certificate, the reason of a failed
    /// upgrade): network waits of up to the connect and handshake timeouts.
    package static let probes = BlockingPool(threads: 4, name: "atsgate.probes")
    /// Password hashes of `--auth-file` (bcrypt, SHA-512 crypt): deliberately slow CPU work.
    package static let passwords = BlockingPool(threads: 2, name: "atsgate.passwords")

    /// Each pool's name and the work waiting for a thread.
    package static var backlogs: [(pool: String, waiting: Int)] {
        [("certificates", certificates.backlog), ("probes", probes.backlog), ("passwords", passwords.backlog)]
    }
}
