import Glibc

/// The process's descriptor use, under the names Prometheus's own process collectors give it, so
/// the usual headroom rule (`process_open_fds / process_max_fds`) works unchanged. Read at scrape
/// time: the daemon pauses accepting when descriptors run out, and this is how an operator sees it
/// coming.
struct ProcessMetrics {
    /// Descriptors open now (entries of /proc/self/fd, less the one this count opens), or nil
    /// where /proc cannot be read.
    var openFileDescriptors: Int?
    /// The soft RLIMIT_NOFILE (LimitNOFILE= under systemd), or nil when unlimited (RLIM_INFINITY).
    var maxFileDescriptors: Int?

    static func read() -> ProcessMetrics {
        ProcessMetrics(openFileDescriptors: countOpenDescriptors(), maxFileDescriptors: softDescriptorLimit())
    }

    private static func countOpenDescriptors() -> Int? {
        guard let directory = opendir("/proc/self/fd") else { return nil }
        defer { closedir(directory) }
        var count = 0
        while let entry = readdir(directory) {
            let isDot = withUnsafeBytes(of: entry.pointee.d_name) { name in
                name[0] == UInt8(ascii: ".") && (name[1] == 0 || (name[1] == UInt8(ascii: ".") && name[2] == 0))
            }
            if !isDot { count += 1 }
        }
        return count - 1
    }

    private static func softDescriptorLimit() -> Int? {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur != rlim_t.max else { return nil }
        return Int(limit.rlim_cur)
    }
}
