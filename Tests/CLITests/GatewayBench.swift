import Foundation
import Glibc
import Testing
import TestSupport

/// The transparent gate's lab with atsgate in it (GatewayLab's namespaces, the shipped ruleset): the
/// origin network's services (Tests/Fixtures/lab_origin.py, with a PKI of the test's own), and the
/// daemon in the gateway with the listeners of deploy/gateway/README.md, the lab allowed as clients, the
/// test CA trusted, and every name the tests use pinned (its resolver points at nothing, so no lookup
/// leaves the gateway). A device has no proxy setting unless a test gives curl one.
///
/// Origin addresses: 198.18.2.2 and fd00:18:2::2 serve `good.test` (also named `alias.test`) on 443,
/// plain HTTP on 80 and a line protocol on 5222; 198.18.2.3 speaks only TLS 1.0 (`tls10.test`);
/// 198.18.2.4 serves a certificate for another name (`wrong.test` reaches it).
final class GatewayBench {
    static let transparentPort = 3130
    static let quicPort = 3443
    static let proxy = "198.18.1.1:3128"
    static let admin = "127.0.0.1:9090"
    static let good = "198.18.2.2"
    static let goodV6 = "fd00:18:2::2"
    static let tls10 = "198.18.2.3"
    static let wrong = "198.18.2.4"

    let lab: GatewayLab
    let directory: TemporaryDirectory
    let origin: LabProcess
    private(set) var daemon: LabProcess
    private let daemonArguments: [String]

    /// `extra`: more `atsgate run` flags (a policy, --cleartext, --transparent-other, ...);
    /// `services`: more lab_origin.py services (`--tls ADDRESS:PORT CERT KEY`, `--raw ...`), their
    /// files named relative to the lab's PKI directory.
    init(_ extra: [String] = [], services: [String] = []) throws {
        lab = try GatewayLab()
        try lab.loadGatewayRuleset(transparentPort: Self.transparentPort, quicPort: Self.quicPort)
        directory = try TemporaryDirectory()
        let pki = try Self.pki.get()
        try lab[.origin].run("ip addr add \(Self.tls10)/24 dev wan0\nip addr add \(Self.wrong)/24 dev wan0")
        origin = try lab[.origin].start([pythonExecutable, fixturePath("lab_origin.py"),
            "--tls", "\(Self.good):443", "\(pki)/good.pem", "\(pki)/good.key",
            "--tls", "[\(Self.goodV6)]:443", "\(pki)/good.pem", "\(pki)/good.key",
            "--tls10", "\(Self.tls10):443", "\(pki)/tls10.pem", "\(pki)/tls10.key",
            "--tls", "\(Self.wrong):443", "\(pki)/wrong.pem", "\(pki)/wrong.key",
            "--http", "\(Self.good):80", "--raw", "\(Self.good):5222"]
            + services.map { $0.hasSuffix(".pem") || $0.hasSuffix(".key") ? "\(pki)/\($0)" : $0 })
        try origin.wait(timeout: 20) { out, _ in out.contains("ready") }
        daemonArguments = [Atsgate.binary.path, "run", "--listen", Self.proxy,
            "--listen-transparent", "\(GatewayLab.gatewayLabIPv4):\(Self.transparentPort)",
            "--listen-transparent", "[\(GatewayLab.gatewayLabIPv6)]:\(Self.transparentPort)",
            "--listen-quic", "\(GatewayLab.gatewayLabIPv4):\(Self.quicPort)",
            "--listen-quic", "[\(GatewayLab.gatewayLabIPv6)]:\(Self.quicPort)",
            "--admin", Self.admin, "--allow-client", "198.18.1.0/24", "--allow-client", "fd00:18:1::/64",
            "--ca-file", "\(pki)/ca.pem", "--dns-server", "127.0.0.1:53", "--dns-timeout", "1",
            "--resolve", "good.test=\(Self.good)", "--resolve", "good.test=\(Self.goodV6)", "--resolve", "plain.test=\(Self.good)",
            "--resolve", "tls10.test=\(Self.tls10)", "--resolve", "wrong.test=\(Self.wrong)",
            // Another address than the one the device reaches it at: a forged (or a CDN's other) name.
            "--resolve", "alias.test=198.18.2.99",
            "--device", "phone=\(GatewayLab.deviceIPv4)", "--device", "phone=\(GatewayLab.deviceIPv6)"] + extra
        daemon = try lab[.gateway].start(daemonArguments)
        try daemon.wait(timeout: 20) { _, err in err.contains("listening on") }
    }

    deinit { lab.close() }

    var ca: String { (try? Self.pki.get()).map { $0 + "/ca.pem" } ?? "" }

    /// The lab's PKI, made once per test process (RSA keys take seconds on a busy machine).
    static let pki: Result<String, HarnessError> = {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("atsgate-gateway-pki-\(getpid())").path
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try makePKI(in: directory)
            return .success(directory)
        } catch {
            return .failure(HarnessError("\(error)"))
        }
    }()

    /// curl in the device, with no proxy setting unless `arguments` give one; names resolve as the lab's.
    func curl(_ arguments: [String], in host: GatewayLab.Host = .device) throws -> LabCommand.Result {
        try lab[host].call(["curl", "--silent", "--show-error", "--max-time", "8", "--cacert", ca,
                            "--resolve", "good.test:443:\(Self.good)", "--resolve", "alias.test:443:\(Self.good)",
                            "--resolve", "tls10.test:443:\(Self.tls10)", "--resolve", "wrong.test:443:\(Self.wrong)",
                            "--resolve", "plain.test:80:\(Self.good)"] + arguments, timeout: 20)
    }

    /// The daemon's records so far (waiting for at least `count`), the run ledger's left out as
    /// DaemonHarness leaves them: they are no decisions.
    func records(atLeast count: Int = 0, timeout: TimeInterval = 10) throws -> [[String: Any]] {
        try daemon.wait(timeout: timeout) { out, _ in out.split(separator: "\n").count { !$0.contains(#""ledger":"#) } >= count }
        return try daemon.stdout.split(separator: "\n").filter { !$0.contains(#""ledger":"#) }.map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
        }
    }

    /// The records after the first `skipping`, once there are `count` of them.
    func newRecords(_ count: Int, after skipping: Int) throws -> [[String: Any]] {
        Array(try records(atLeast: skipping + count).dropFirst(skipping))
    }

    /// The daemon's /metrics, read inside the gateway.
    func metrics() throws -> String {
        try lab[.gateway].check(["curl", "--silent", "--max-time", "5", "http://\(Self.admin)/metrics"])
    }

    /// Stops the daemon (SIGTERM); its records.
    func stopDaemon() throws -> [[String: Any]] {
        daemon.stop()
        return try records()
    }

    /// A CA, and leaves it signed: good.pem (good.test, alias.test and the good origin's addresses),
    /// tls10.pem (tls10.test), wrong.pem (other.test only).
    static func makePKI(in directory: String) throws {
        let script = """
            cd '\(directory)'
            cat > ext.cnf <<'CNF'
            [good]
            subjectAltName = DNS:good.test, DNS:alias.test, IP:\(Self.good), IP:\(Self.goodV6)
            extendedKeyUsage = serverAuth
            [tls10]
            subjectAltName = DNS:tls10.test
            extendedKeyUsage = serverAuth
            [wrong]
            subjectAltName = DNS:other.test
            extendedKeyUsage = serverAuth
            CNF
            openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 30 -subj '/CN=atsgate gateway lab CA' 2>/dev/null
            for leaf in good tls10 wrong; do
                openssl req -new -newkey rsa:2048 -nodes -keyout $leaf.key -out $leaf.csr -subj "/CN=$leaf" 2>/dev/null
                openssl x509 -req -in $leaf.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out $leaf.pem -days 30 \
                    -sha256 -extfile ext.cnf -extensions $leaf 2>/dev/null
            done
            """
        let run = try LabCommand.run(["/bin/sh", "-ec", script], timeout: 60)
        guard run.status == 0 else { throw HarnessError("making the lab's PKI: \(run.stderr)") }
    }
}
