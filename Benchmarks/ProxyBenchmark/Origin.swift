import Foundation
import Glibc

/// The origin every column measures against: nginx serving /small (100 bytes of `x`) and /big (a
/// sparse 1 GiB file, read into the page cache first) on 127.0.0.1:18080, and the same over TLS on
/// 18443 with a P-256 certificate for IP 127.0.0.1 from a CA made for the run.
extension Bench {
    var tlsDirectory: String { tmp + "/tls" }

    func startOrigin() throws {
        if Loopback.isOpen(Bench.originPort) {
            throw BenchmarkError("127.0.0.1:\(Bench.originPort) is in use; the origin needs it")
        }
        if tlsRows.tls, Loopback.isOpen(Bench.tlsPort) {
            throw BenchmarkError("127.0.0.1:\(Bench.tlsPort) is in use; the TLS origin needs it")
        }
        let files = FileManager.default
        try files.createDirectory(atPath: tmp + "/www", withIntermediateDirectories: true)
        try files.createDirectory(atPath: tmp + "/nginx-tmp", withIntermediateDirectories: true)
        try String(repeating: "x", count: 100).write(toFile: tmp + "/www/small", atomically: false, encoding: .utf8)
        if tlsRows.plain {
            _ = files.createFile(atPath: tmp + "/www/big", contents: nil)
            let big = try FileHandle(forWritingTo: URL(fileURLWithPath: tmp + "/www/big"))
            try big.truncate(atOffset: 1 << 30)
            try big.close()
            // The page cache warm before the first bulk run.
            readThrough(tmp + "/www/big")
        }
        // The TLS origin's certificate is also what the proxies' TLS listeners present.
        try makeCertificates()
        if tlsRows.tls {
            try render("nginx-tls.conf", to: tmp + "/nginx-tls.conf")
        } else {
            try "".write(toFile: tmp + "/nginx-tls.conf", atomically: false, encoding: .utf8)
        }
        try render("nginx.conf", to: tmp + "/nginx.conf")
        try render("absolute.lua", to: tmp + "/absolute.lua")
        let nginx = try Command.start(
            "nginx", ["-p", tmp, "-c", tmp + "/nginx.conf", "-e", tmp + "/nginx-error.log"],
            stdout: tmp + "/nginx.out", stderr: tmp + "/nginx.out")
        for port in [Bench.originPort] + (tlsRows.tls ? [Bench.tlsPort] : []) where !Loopback.waitOpen(port, while: nginx) {
            FileHandle.standardError.write(Data((readText(tmp + "/nginx.out") + readText(tmp + "/nginx-error.log")).utf8))
            throw BenchmarkError("nginx did not start on 127.0.0.1:\(port)")
        }
        originPID = nginx.pid
    }

    private func readThrough(_ path: String) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        defer { close(fd) }
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: 1 << 20, alignment: 4096)
        defer { buffer.deallocate() }
        while read(fd, buffer, 1 << 20) > 0 {}
    }

    /// A P-256 CA (CA:TRUE) and a P-256 leaf for IP:127.0.0.1 (serverAuth, SHA-256, 30 days), which
    /// meets R15; atsgate gets the CA with --ca-file, so its certificate checks pass only because it
    /// really evaluated the chain.
    private func makeCertificates() throws {
        let dir = tlsDirectory
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try [
            "basicConstraints=critical,CA:FALSE", "keyUsage=critical,digitalSignature", "extendedKeyUsage=serverAuth",
            "subjectAltName=IP:127.0.0.1", "subjectKeyIdentifier=hash", "authorityKeyIdentifier=keyid",
        ].joined(separator: "\n").appending("\n").write(toFile: dir + "/server.ext", atomically: false, encoding: .utf8)
        let steps: [[String]] = [
            ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-sha256", "-days", "30",
             "-subj", "/CN=atsgate benchmark CA", "-keyout", "ca.key", "-out", "ca.pem",
             "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"],
            ["req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=127.0.0.1",
             "-keyout", "server.key", "-out", "server.csr"],
            ["x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-sha256",
             "-days", "30", "-extfile", "server.ext", "-out", "server.pem"],
            ["verify", "-CAfile", "ca.pem", "server.pem"],
        ]
        for step in steps {
            guard let result = Command.run("openssl", step, timeout: 60, directory: dir, scratch: tmp + "/openssl"),
                  result.status == 0
            else {
                throw BenchmarkError("cannot make the TLS origin's certificate with openssl: \(readText(tmp + "/openssl.err"))")
            }
        }
    }
}
