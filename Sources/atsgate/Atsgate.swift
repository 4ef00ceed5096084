import ArgumentParser
import Foundation

/// The `atsgate` command. Exit codes are part of the interface (INTERFACE.md): usage and input errors
/// exit 2, never ArgumentParser's 64, so CI scripts can tell "blocked" (1) from "broken" (2).
@main
struct Atsgate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "atsgate",
        abstract: "Enforce and explain Apple's App Transport Security policy.",
        version: AtsgateVersion.string,
        subcommands: [RunCommand.self, CheckCommand.self, LintCommand.self, ReportCommand.self, DiagnoseCommand.self,
                      HealthCommand.self, ProfileCommand.self, DoctorCommand.self, VersionCommand.self]
    )

    static func main() {
        do {
            let arguments = try ConfigFile.expand(Array(CommandLine.arguments.dropFirst()))
            var command = try parseAsRoot(arguments)
            try command.run()
        } catch let failure as CommandFailure {
            FileHandle.standardError.write(Data("atsgate: \(failure.message)\n".utf8))
            Foundation.exit(failure.exitCode)
        } catch {
            let code = exitCode(for: error)
            let message = UsageHints.rewrite(fullMessage(for: error))
            if code == .success {
                if !message.isEmpty { print(message) }
                Foundation.exit(0)
            }
            if let explicit = error as? ExitCode { Foundation.exit(explicit.rawValue) }
            FileHandle.standardError.write(Data("\(message)\n".utf8))
            Foundation.exit(2)
        }
    }
}

/// An error that ends a command with a one-line message and a chosen exit code.
struct CommandFailure: Error {
    var message: String
    var exitCode: Int32 = 2
}

enum AtsgateVersion {
    static let string = "0.1.0"
}
