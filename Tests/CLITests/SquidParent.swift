import Foundation
import Glibc
import Testing
import TestSupport

/// A real Squid (Debian's `squid`) of the test's own, as the corporate parent proxy: its own config on
/// a free loopback port, no cache, names from its own hosts file (never a DNS server), CONNECT allowed
/// to `connectPorts` only (403 for the others), and with `user` Basic credentials checked by
/// `basic_ncsa_auth`. Its access log says what it was asked and by which user.
final class SquidParent {
    let port: Int
    let directory: TemporaryDirectory
    private var process: BackgroundProcess?

    init(connectPorts: [Int], user: (name: String, password: String)? = nil, hosts: [String] = []) throws {
        directory = try TemporaryDirectory()
        let dir = directory.url.path
        // Squid started by root runs as the `proxy` user: it must read its files and write its logs.
        chmod(dir, 0o777)
        port = try freePort()
        var auth = ""
        if let user {
            let hash = try Subprocess.run("/usr/bin/openssl", ["passwd", "-apr1", user.password])
            guard hash.status == 0 else { throw HarnessError("openssl passwd: \(hash.stderr)") }
            try directory.write("passwd", "\(user.name):\(hash.stdout.trimmingCharacters(in: .whitespacesAndNewlines))\n")
            auth = """
                auth_param basic program /usr/lib/squid/basic_ncsa_auth \(dir)/passwd
                auth_param basic realm parent
                acl users proxy_auth REQUIRED
                http_access allow users
                """
        } else {
            auth = "http_access allow localhost"
        }
        try directory.write("hosts", hosts.map { "127.0.0.1 \($0)\n" }.joined())
        try directory.write("squid.conf", """
            http_port 127.0.0.1:\(port)
            acl CONNECT method CONNECT
            acl allowed_ports port \(connectPorts.map(String.init).joined(separator: " "))
            http_access deny CONNECT !allowed_ports
            \(auth)
            http_access deny all
            cache deny all
            access_log stdio:\(dir)/access.log
            cache_log \(dir)/cache.log
            pid_filename none
            coredump_dir \(dir)
            shutdown_lifetime 0 seconds
            netdb_filename none
            pinger_enable off
            hosts_file \(dir)/hosts
            dns_nameservers 127.0.0.1
            forwarded_for delete

            """)
        for file in ["passwd", "hosts", "squid.conf"] { chmod(dir + "/" + file, 0o644) }
        process = try BackgroundProcess("/usr/sbin/squid", ["-N", "-f", dir + "/squid.conf"])
        do {
            try waitUntilListening(port, timeout: 30)
        } catch {
            let log = (try? String(contentsOfFile: dir + "/cache.log", encoding: .utf8)) ?? ""
            throw HarnessError("squid did not start: \(process?.stderr ?? "") \(log)")
        }
    }

    var address: String { "127.0.0.1:\(port)" }

    /// The access log's lines so far (squid writes each when its transaction ends).
    var accessLog: [String] {
        let text = (try? String(contentsOfFile: directory.url.path + "/access.log", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").map(String.init)
    }

    /// Waits (bounded) until the access log has a line containing `text`.
    func waitForAccess(_ text: String) -> String? {
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if let line = accessLog.first(where: { $0.contains(text) }) { return line }
            usleep(50_000)
        }
        return nil
    }

    /// Stops it at once (SIGKILL: its port refuses from then on).
    func stop() {
        process?.stop(signal: SIGKILL)
        process = nil
    }

    deinit { stop() }
}
