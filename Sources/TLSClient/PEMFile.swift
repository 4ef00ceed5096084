import COpenSSL
import Foundation
import Glibc

/// PEM files as the operator names them (CA files, the TLS listener's certificate and key): read
/// whole by us, so that a missing or unreadable file is reported in words a person acts on rather
/// than as OpenSSL's "system library" error, then parsed from memory.
enum PEMFile {
    /// The file's bytes, or what is wrong with the file ("no such file", "is a directory, not a PEM
    /// file", "cannot read it: Permission denied").
    static func contents(of file: String) -> Result<Data, PEMFileProblem> {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: file, isDirectory: &isDirectory) else {
            return .failure(PEMFileProblem("no such file"))
        }
        guard !isDirectory.boolValue else { return .failure(PEMFileProblem("is a directory, not a PEM file")) }
        do {
            return .success(try Data(contentsOf: URL(fileURLWithPath: file)))
        } catch {
            let code = (error as NSError).domain == NSPOSIXErrorDomain ? Int32((error as NSError).code) : 0
            return .failure(PEMFileProblem("cannot read it: "
                + (code != 0 ? String(cString: strerror(code)) : error.localizedDescription)))
        }
    }

    /// Every certificate of PEM text, in file order; empty when there is none (text that is not
    /// PEM, or a file that holds only a key).
    static func certificates(in data: Data) -> [X509Certificate] {
        let found: [X509Certificate] = data.withUnsafeBytes { bytes in
            guard let bio = MemoryBIO(reading: bytes) else { return [] }
            var found: [X509Certificate] = []
            while let certificate = PEM_read_bio_X509(bio.pointer, nil, nil, nil) {
                found.append(X509Certificate(taking: certificate))
            }
            return found
        }
        // The loop ends on "no start line" at the end of the text: that is not an error.
        OpenSSLErrorQueue.clear()
        return found
    }
}

/// Why a PEM file could not be used; the caller names the file.
struct PEMFileProblem: Error {
    var text: String
    init(_ text: String) { self.text = text }
}
