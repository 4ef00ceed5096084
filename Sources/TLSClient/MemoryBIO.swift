import COpenSSL

/// An in-memory OpenSSL BIO, for the calls that print into one; freed in deinit.
final class MemoryBIO {
    let pointer: OpaquePointer

    init?() {
        guard let bio = BIO_new(BIO_s_mem()) else { return nil }
        pointer = bio
    }

    /// Wraps bytes for reading (PEM parsing); the BIO copies nothing, so `bytes` must outlive it.
    init?(reading bytes: UnsafeRawBufferPointer) {
        guard let bio = BIO_new_mem_buf(bytes.baseAddress, Int32(bytes.count)) else { return nil }
        pointer = bio
    }

    deinit { BIO_free(pointer) }

    /// What has been written so far, as UTF-8 text.
    var contents: String {
        var data: UnsafeMutablePointer<CChar>?
        let length = atsgate_BIO_get_mem_data(pointer, &data)
        guard length > 0, let data else { return "" }
        return data.withMemoryRebound(to: UInt8.self, capacity: length) {
            String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
        }
    }
}
