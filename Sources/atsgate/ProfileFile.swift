import Foundation
import Glibc

/// Writes `atsgate profile --output FILE`: whole or not at all (a temporary file in the same
/// directory, renamed over FILE), and readable by its owner only when it holds a password, from the
/// moment it exists: mkstemp creates it 0600, and only a profile without secrets is opened up to the
/// umask's usual 0644.
enum ProfileFile {
    static func write(_ data: Data, to path: String, ownerOnly: Bool) throws {
        let directory = (path as NSString).deletingLastPathComponent
        var template = Array(((directory.isEmpty ? "." : directory) + "/.atsgate-profile-XXXXXX").utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else { throw failure(path, errno) }
        let temporary = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        var written = 0
        var code: Int32 = 0
        data.withUnsafeBytes { bytes in
            while written < bytes.count {
                let n = Glibc.write(fd, bytes.baseAddress! + written, bytes.count - written)
                if n < 0 {
                    if errno == EINTR { continue }
                    code = errno
                    return
                }
                written += n
            }
        }
        if code == 0, !ownerOnly {
            let mask = umask(0o022)
            umask(mask)
            if fchmod(fd, 0o666 & ~mask) != 0 { code = errno }
        }
        if code == 0, fsync(fd) != 0 { code = errno }
        if close(fd) != 0, code == 0 { code = errno }
        if code == 0, rename(temporary, path) != 0 { code = errno }
        if code != 0 {
            unlink(temporary)
            throw failure(path, code)
        }
    }

    private static func failure(_ path: String, _ code: Int32) -> CommandFailure {
        CommandFailure(message: "--output \(path): cannot write: \(String(cString: strerror(code)))")
    }
}
