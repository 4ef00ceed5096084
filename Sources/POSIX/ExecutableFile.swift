import Glibc

/// The file this process was started from, as a path to start again: what an upgrade executes.
///
/// Not /proc/self/exe: a package upgrade writes the new binary beside the old one and renames it
/// over the path (dpkg does), so the running process's /proc/self/exe is the old file, now
/// unlinked ("/usr/bin/atsgate (deleted)"), and executing it would start the old version again. The
/// path the process was started by names the new one. It is recorded at start, because the
/// working directory and PATH it was resolved against may change.
public struct ExecutableFile: Equatable, Sendable, CustomStringConvertible {
    /// An absolute path; symbolic links are kept, so a link switched to a new release is followed.
    public let path: String
    /// The file the process runs (device and inode of /proc/self/exe at start).
    public let device: UInt64
    public let inode: UInt64

    public var description: String { path }

    /// Where this process was started from: `argv0` made absolute (against the working directory, or
    /// the first executable match on PATH when it has no slash, as execvp looks), when that names the
    /// file this process runs; otherwise (a launcher that set argv[0] to something else) the target
    /// of /proc/self/exe. Call it at start.
    public static func current(argv0: String = CommandLine.arguments.first ?? "") throws(SystemError) -> ExecutableFile {
        var running = stat()
        guard stat("/proc/self/exe", &running) == 0 else { throw SystemError(call: "stat /proc/self/exe", code: errno) }
        if let path = resolve(argv0) {
            var named = stat()
            if stat(path, &named) == 0, named.st_dev == running.st_dev, named.st_ino == running.st_ino {
                return ExecutableFile(path: path, device: UInt64(running.st_dev), inode: UInt64(running.st_ino))
            }
        }
        guard let target = readLink("/proc/self/exe") else { throw SystemError(call: "readlink /proc/self/exe", code: errno) }
        return ExecutableFile(path: target, device: UInt64(running.st_dev), inode: UInt64(running.st_ino))
    }

    public init(path: String, device: UInt64, inode: UInt64) {
        self.path = path
        self.device = device
        self.inode = inode
    }

    /// What is at `path` now, next to what was there at start.
    public enum Change: Equatable, Sendable {
        /// The same file: starting it runs the same binary again.
        case unchanged
        /// Another file (an upgrade renamed one over it, or a link now points elsewhere).
        case replaced
        /// Nothing that can be started (removed, or unreadable): the error's errno.
        case missing(Int32)
    }

    /// Whether the file at `path` is still the one this process runs.
    public func change() -> Change {
        var now = stat()
        guard stat(path, &now) == 0 else { return .missing(errno) }
        return UInt64(now.st_dev) == device && UInt64(now.st_ino) == inode ? .unchanged : .replaced
    }

    /// The target of a symbolic link (e.g. /proc/PID/exe, which ends in " (deleted)" once the file
    /// was unlinked or renamed over); nil when it cannot be read.
    public static func readLink(_ path: String) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink(path, &buffer, buffer.count - 1)
        guard count >= 0 else { return nil }
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// `name` as execvp would find it, absolute; nil when it finds nothing.
    static func resolve(_ name: String) -> String? {
        guard !name.isEmpty else { return nil }
        if name.hasPrefix("/") { return name }
        if name.contains("/") {
            guard let directory = workingDirectory() else { return nil }
            return directory + "/" + name
        }
        let search = getenv("PATH").map { String(cString: $0) } ?? "/usr/local/bin:/usr/bin:/bin"
        for directory in search.split(separator: ":", omittingEmptySubsequences: false) {
            // An empty entry is the working directory, as for execvp.
            let base = directory.isEmpty ? (workingDirectory() ?? ".") : String(directory)
            let candidate = (base.hasPrefix("/") ? base : (workingDirectory() ?? ".") + "/" + base) + "/" + name
            if access(candidate, X_OK) == 0 { return candidate }
        }
        return nil
    }

    private static func workingDirectory() -> String? {
        guard let directory = getcwd(nil, 0) else { return nil }
        defer { free(directory) }
        return String(cString: directory)
    }
}
