import Foundation
import Glibc

/// Everything the daemon talks to, in one temporary directory: nginx as the healthy origin (plain
/// HTTP with keep-alive, a TLS 1.2-only and a TLS 1.3-only server with a certificate for
/// `*.soak.test` from the run's own CA), the fault origin, a late DNS resolver, three apps'
/// policies (one rewritten before every reload), and the users' password file.
final class World: @unchecked Sendable {
    let directory: String
    let plainPort: Int
    let tls12Port: Int
    let tls13Port: Int
    let faults: FaultOrigin
    let resolver: SlowResolver
    private var nginx: Child?

    /// Users and the app each is routed to; every user's password is `soak`.
    static let users = [("alice", "appA"), ("bob", "appB"), ("carol", "appC")]
    static let password = "soak"
    /// Names pinned to 127.0.0.1 for the TLS origins: a few stay in the verdict cache, the rest
    /// come round again after their verdict expired (--verdict-ttl), so both kinds keep coming.
    static let tlsNames = 48
    static let cachedTLSNames = 3

    var caFile: String { directory + "/tls/ca.pem" }
    var authFile: String { directory + "/users.htpasswd" }
    func policyFile(_ app: String) -> String { directory + "/\(app).json" }

    init() throws {
        let template = NSTemporaryDirectory() + "atsgate-soak.XXXXXX"
        var bytes = Array(template.utf8CString)
        guard mkdtemp(&bytes) != nil else { throw SoakError("mkdtemp failed") }
        directory = String(decoding: bytes.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        chmod(directory, 0o755)
        plainPort = try World.freePort()
        tls12Port = try World.freePort()
        tls13Port = try World.freePort()
        faults = try FaultOrigin()
        resolver = try SlowResolver(delay: 1.0)
        try makeCertificates()
        try writePolicies(generation: 0)
        try writePasswords()
        try startNginx()
    }

    func stop() {
        nginx?.stop()
        faults.stop()
        resolver.stop()
    }

    /// The apps' policies: appA full ATS, appB arbitrary loads, appC an exception for
    /// www.soak.test on even generations only (a reload that really changes a decision).
    func writePolicies(generation: Int) throws {
        try "{}\n".write(toFile: policyFile("appA"), atomically: true, encoding: .utf8)
        try #"{"NSAllowsArbitraryLoads": true}"#.write(toFile: policyFile("appB"), atomically: true, encoding: .utf8)
        let appC = generation % 2 == 0
            ? #"{"NSExceptionDomains": {"www.soak.test": {"NSExceptionAllowsInsecureHTTPLoads": true}}}"#
            : #"{"NSExceptionDomains": {"other.soak.test": {"NSExceptionAllowsInsecureHTTPLoads": true}}}"#
        try appC.write(toFile: policyFile("appC"), atomically: true, encoding: .utf8)
    }

    private func writePasswords() throws {
        let hashed = Child.run("openssl", ["passwd", "-6", "-salt", "soaksalt", World.password])
        let hash = hashed.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        guard hashed.status == 0, hash.hasPrefix("$6$") else { throw SoakError("openssl passwd -6: \(hashed.stderr)") }
        try World.users.map { "\($0.0):\(hash)\n" }.joined().write(toFile: authFile, atomically: true, encoding: .utf8)
    }

    /// A P-256 CA and a P-256 leaf for *.soak.test (serverAuth, SHA-256): what full ATS accepts
    /// once the daemon trusts the CA (--ca-file).
    private func makeCertificates() throws {
        let tls = directory + "/tls"
        try FileManager.default.createDirectory(atPath: tls, withIntermediateDirectories: true)
        try ["basicConstraints=critical,CA:FALSE", "keyUsage=critical,digitalSignature", "extendedKeyUsage=serverAuth",
             "subjectAltName=DNS:*.soak.test", "subjectKeyIdentifier=hash", "authorityKeyIdentifier=keyid"]
            .joined(separator: "\n").appending("\n").write(toFile: tls + "/server.ext", atomically: true, encoding: .utf8)
        let steps: [[String]] = [
            ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-sha256", "-days", "30",
             "-subj", "/CN=atsgate soak CA", "-keyout", "ca.key", "-out", "ca.pem",
             "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"],
            ["req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=soak.test",
             "-keyout", "server.key", "-out", "server.csr"],
            ["x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-sha256",
             "-days", "30", "-extfile", "server.ext", "-out", "server.pem"],
        ]
        for step in steps {
            let result = Child.run("openssl", step, directory: tls)
            guard result.status == 0 else { throw SoakError("openssl \(step[0]): \(result.stderr)") }
        }
    }

    private func startNginx() throws {
        let dir = directory
        try FileManager.default.createDirectory(atPath: dir + "/nginx-tmp", withIntermediateDirectories: true)
        let tls = { (port: Int, version: String) in """
                server {
                    listen 127.0.0.1:\(port) ssl;
                    ssl_certificate \(dir)/tls/server.pem;
                    ssl_certificate_key \(dir)/tls/server.key;
                    ssl_protocols \(version);
                    location / { return 200 "tls ok\\n"; }
                }
            """ }
        let config = """
            # The soak's healthy origin: any path answers 200 (a body sent with the request is read and
            # dropped), on plain HTTP with keep-alive, TLS 1.2 only and TLS 1.3 only.
            worker_processes 1;
            daemon off;
            \(getuid() == 0 ? "user root;" : "")
            pid \(dir)/nginx.pid;
            error_log \(dir)/nginx-error.log error;
            events { worker_connections 4096; }
            http {
                access_log off;
                keepalive_timeout 30s;
                keepalive_requests 100000;
                client_body_temp_path \(dir)/nginx-tmp;
                proxy_temp_path \(dir)/nginx-tmp;
                fastcgi_temp_path \(dir)/nginx-tmp;
                uwsgi_temp_path \(dir)/nginx-tmp;
                scgi_temp_path \(dir)/nginx-tmp;
                server {
                    listen 127.0.0.1:\(plainPort);
                    location / { return 200 "ok\\n"; }
                }
            \(tls(tls12Port, "TLSv1.2"))
            \(tls(tls13Port, "TLSv1.3"))
            }

            """
        try config.write(toFile: dir + "/nginx.conf", atomically: true, encoding: .utf8)
        let child = try Child("nginx", ["-p", dir, "-c", dir + "/nginx.conf", "-e", dir + "/nginx-error.log"],
                              stdout: dir + "/nginx.out", stderr: dir + "/nginx.out")
        nginx = child
        for port in [plainPort, tls12Port, tls13Port] where !World.waitOpen(port, while: child) {
            throw SoakError("nginx did not start on 127.0.0.1:\(port): \(readText(dir + "/nginx.out"))\(readText(dir + "/nginx-error.log"))")
        }
    }

    /// A port nothing listens on now (bound at 0 and released).
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { Glibc.close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard ok else { throw SoakError("cannot find a free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Waits up to 10 s for the port to accept, while `child` runs.
    static func waitOpen(_ port: Int, while child: Child) -> Bool {
        for _ in 0..<200 {
            if (try? Wire(port: port, timeout: 1)) != nil { return true }
            if !child.isRunning { return false }
            usleep(50_000)
        }
        return false
    }
}
