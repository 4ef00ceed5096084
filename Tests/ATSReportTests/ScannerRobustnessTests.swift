import ATSReport
import Foundation
import Testing

/// The byte-level scanner reads untrusted logs through unsafe pointers: every cut and every corrupted
/// byte must give an answer, never a crash or a span outside the line.
@Suite struct ScannerRobustnessTests {
    static let line = ReportFixtures.record("https", "api.example.com", 443, action: "block", reason: "tls-version",
                                            tls: "TLSv1.0", cipher: "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
                                            extra: #","cert_tolerated":["certificate-expired"],"nested":{"a":[1,{"b":"\\\""}]}"#)

    private func check(_ bytes: [UInt8]) -> RecordScanner.Outcome {
        bytes.withUnsafeBytes { buffer in
            let outcome = RecordScanner().scan(buffer)
            if case .record(let fields) = outcome {
                for span in [fields.time, fields.scheme, fields.host, fields.action, fields.reason, fields.tlsVersion,
                             fields.cipher, fields.message, fields.policy] where span.isPresent {
                    #expect(span.start >= 0 && span.start + span.count <= buffer.count)
                    _ = RecordScanner.string(span, in: buffer)
                }
            }
            return outcome
        }
    }

    @Test func everyCutOfARecordIsRefused() {
        let bytes = Array(Self.line.utf8)
        guard case .record = check(bytes) else { Issue.record("the whole line is a record"); return }
        for length in 0..<bytes.count {
            if case .record = check(Array(bytes[..<length])) { Issue.record("a cut at \(length) was read as a record") }
        }
    }

    @Test func corruptedBytesNeverCrash() {
        var generator = SystemRandomNumberGenerator()
        let original = Array(Self.line.utf8)
        for _ in 0..<3000 {
            _ = check(ReportFixtures.corrupt(original, using: &generator))
        }
    }

    @Test(arguments: [1, 2, 3, 7, 64, 1 << 20])
    func linesAreTheSameWhateverTheChunkSize(chunk: Int) throws {
        // A file read in chunks of `chunk` bytes gives the same summary as one read.
        let lines = (0..<200).map { ReportFixtures.record("http", "h\($0 % 9).example.com", 80 + $0 % 3) }
        let text = lines.joined(separator: "\n") + "\n\n" + lines[0]
        let whole = ReportFixtures.summary(text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init))
        var builder = TrafficSummaryBuilder()
        builder.begin(path: "chunks")
        let bytes = Array(text.utf8)
        var splitter = LineSplitter()
        var offset = 0
        while offset < bytes.count {
            let end = min(bytes.count, offset + chunk)
            bytes[offset..<end].withUnsafeBytes { splitter.feed($0, line: { builder.ingest($0) }) }
            offset = end
        }
        splitter.finish(line: { builder.ingest($0) })
        let chunked = builder.finish()
        #expect(chunked.records == whole.records)
        #expect(chunked.inputs[0].lines == whole.inputs[0].lines)
        #expect(chunked.destinations.map { "\($0.url) \($0.records)" } == whole.destinations.map { "\($0.url) \($0.records)" })
    }
}
