import Foundation
import Glibc

/// Passwords for `atsgate profile`, from where they do not end up in shell history or the process
/// list: a file (one line), standard input (`-`), or a prompt on the terminal with echo off.
enum SecretInput {
    /// The password a file holds, or standard input's for `-`: one line, its line break left out. `flag` names the option in errors; the password itself is never part of a message.
    static func read(_ path: String, flag: String) throws -> String {
        let data: Data
        let origin = path == "-" ? "\(flag) - (standard input)" : "\(flag) \(path)"
        if path == "-" {
            data = FileHandle.standardInput.readDataToEndOfFile()
        } else {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
                throw CommandFailure(message: "\(origin): no such file")
            }
            guard !isDirectory.boolValue else { throw CommandFailure(message: "\(origin): is a directory") }
            guard let contents = FileManager.default.contents(atPath: path) else {
                throw CommandFailure(message: "\(origin): cannot read it: \(String(cString: strerror(errno)))")
            }
            data = contents
        }
        guard var text = String(data: data, encoding: .utf8) else {
            throw CommandFailure(message: "\(origin): is not UTF-8 text")
        }
        // "\r\n" is one Character in Swift: one removal takes either line break.
        if text.last?.isNewline == true { text.removeLast() }
        guard !text.contains(where: \.isNewline) else {
            // A second line is more likely a wrong file (a whole htpasswd file, a key) than a password.
            throw CommandFailure(message: "\(origin): holds more than one line; give a file with the password alone")
        }
        guard !text.isEmpty else { throw CommandFailure(message: "\(origin): is empty") }
        return text
    }

    /// Whether a prompt can be shown: standard input and standard error are a terminal.
    static var canPrompt: Bool { isatty(STDIN_FILENO) == 1 && isatty(STDERR_FILENO) == 1 }

    /// Asks on the terminal with echo off; nil when the answer is empty (the profile then carries no
    /// password).
    static func prompt(_ question: String) -> String? {
        var saved = termios()
        let echoOff = tcgetattr(STDIN_FILENO, &saved) == 0
        if echoOff {
            SavedTerminal.state = saved
            // Ctrl-C at the prompt must not leave the terminal without echo.
            signal(SIGINT) { signal in
                if var state = SavedTerminal.state { tcsetattr(STDIN_FILENO, TCSAFLUSH, &state) }
                Glibc.signal(signal, SIG_DFL)
                raise(signal)
            }
            var quiet = saved
            quiet.c_lflag &= ~tcflag_t(ECHO)
            tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet)
        }
        // Asked only once echo is off: nothing typed in answer can appear on the screen.
        FileHandle.standardError.write(Data("\(question): ".utf8))
        let line = Swift.readLine(strippingNewline: true)
        if echoOff {
            tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved)
            signal(SIGINT, SIG_DFL)
            SavedTerminal.state = nil
        }
        // The Return the user typed was not echoed either.
        FileHandle.standardError.write(Data("\n".utf8))
        guard let line, !line.isEmpty else { return nil }
        return line
    }

    /// The terminal's settings before echo was switched off, for the SIGINT handler.
    private enum SavedTerminal {
        nonisolated(unsafe) static var state: termios?
    }
}
