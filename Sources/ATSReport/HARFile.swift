/// A HAR capture given to `atsgate report`: recognised by its name, streamed through `HARParser`, and
/// summarised as a decision log is.
enum HARFile {
    /// `.har` and `.har.gz`, in any case.
    static func isHAR(_ path: String) -> Bool {
        let lower = path.lowercased()
        return lower.hasSuffix(".har") || lower.hasSuffix(".har.gz")
    }

    /// The app a HAR's entries count under without `ID=`: the file's name without `.har` or `.har.gz`.
    static func defaultApp(_ path: String) -> String {
        var name = Substring(path.split(separator: "/").last ?? Substring(path))
        for suffix in [".gz", ".har"] where name.lowercased().hasSuffix(suffix) { name = name.dropLast(suffix.count) }
        return String(name)
    }

    static func read(_ path: String, app: String, bufferSize: Int = LogReader.chunkSize) throws(LogReadError) -> TrafficSummary {
        var builder = TrafficSummaryBuilder()
        builder.beginHAR(path: path, app: app)
        let source = try ByteSource(path: path)
        var parser = HARParser(source: source, bufferSize: bufferSize)
        defer { parser.close() }
        try parser.parse { builder.ingest(entry: $0) }
        builder.setCreator(parser.creator)
        return builder.finish()
    }
}
