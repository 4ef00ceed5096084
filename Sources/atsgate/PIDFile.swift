import Foundation
import Glibc

/// `--pid-file`: the PID of the process that serves, for `atsgate upgrade --pid-file` and init
/// scripts. Written whole (a temporary file renamed over it), so a reader never sees half a number;
/// removed only by the process it names, so an old process that upgraded never removes its
/// successor's.
enum PIDFile {
    static func write(_ path: String) {
        let temporary = path + ".tmp.\(getpid())"
        do {
            try Data("\(getpid())\n".utf8).write(to: URL(fileURLWithPath: temporary))
            guard rename(temporary, path) == 0 else {
                throw CommandFailure(message: String(cString: strerror(errno)))
            }
        } catch {
            unlink(temporary)
            ServiceManager.say("--pid-file \(path): cannot write it: \(error)")
        }
    }

    /// The PID the file names, if it names one.
    static func read(_ path: String) -> Int32? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        return Int32(text.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    static func remove(_ path: String) {
        if read(path) == getpid() { unlink(path) }
    }
}
