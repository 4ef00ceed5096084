import ArgumentParser
import Systemd
import TLSClient

/// `atsgate version`: the program's version and the system libraries it runs against.
struct VersionCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "version",
        abstract: "Show atsgate's version and the libraries it is linked with."
    )

    func run() throws {
        print("atsgate \(AtsgateVersion.string)")
        print("tls: \(OpenSSLLibrary.version)")
        print("systemd: libsystemd linked; booted with systemd: \(SystemdEnvironment.isBooted ? "yes" : "no")")
    }
}
