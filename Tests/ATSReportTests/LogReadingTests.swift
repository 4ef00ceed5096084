import ATSReport
import Foundation
import Testing

/// Reading logs: the byte-level scanner, timestamps, gzip, merging, and lines that are not records.
@Suite struct LogReadingTests {
    private func scan(_ line: String) -> RecordScanner.Outcome {
        var line = line
        return line.withUTF8 { RecordScanner().scan(UnsafeRawBufferPointer($0)) }
    }

    private func text(_ span: RecordScanner.Span, in line: String) -> String {
        var line = line
        return line.withUTF8 { RecordScanner.string(span, in: UnsafeRawBufferPointer($0)) }
    }

    @Test func theREADMERecordIsReadFieldByField() throws {
        let line = #"{"time":"2026-11-22T06:21:01.792Z","client":"127.0.0.1:58102","policy":"config/policies/typical-app.plist","method":"GET","scheme":"http","host":"api.example.com","port":80,"class":"public","direct":false,"exception":null,"ats":"on","action":"block","reason":"cleartext-http","message":"cleartext HTTP to api.example.com is not allowed: no NSExceptionDomains entry allows it (add NSExceptionAllowsInsecureHTTPLoads=YES for api.example.com)","enforced":true,"tls_version":null,"cipher":null,"upstream_ip":null,"bytes_up":0,"bytes_down":0,"duration_ms":0.12,"status":403,"rule":"R12","minimum_tls_version":"TLSv1.2"}"#
        guard case .record(let fields) = scan(line) else { Issue.record("not read as a record"); return }
        #expect(text(fields.time, in: line) == "2026-11-22T06:21:01.792Z")
        #expect(text(fields.policy, in: line) == "config/policies/typical-app.plist")
        #expect(text(fields.scheme, in: line) == "http")
        #expect(text(fields.host, in: line) == "api.example.com")
        #expect(fields.port == 80)
        #expect(text(fields.action, in: line) == "block")
        #expect(text(fields.reason, in: line) == "cleartext-http")
        #expect(!fields.exception.isPresent, "null is absent")
        #expect(!fields.tlsVersion.isPresent)
        #expect(fields.enforced == true)
        #expect(!fields.app.isPresent)
    }

    @Test func escapesUnknownFieldsOfAnyTypeAndWhitespaceAreHandled() throws {
        let line = #"  { "future" : {"nested": [1, {"a": "}]"}], "s": "x\"y"}, "time": "2026-11-22T06:21:01Z", "#
            + #""host" : "h\u00e9\"st", "scheme":"https", "port": 8443, "action":"allow", "app": "com.example.app", "#
            + #""cert_tolerated": ["certificate-expired", "certificate-hostname"], "more": [true, null, -1.5e3] }  "#
        guard case .record(let fields) = scan(line) else { Issue.record("not read as a record"); return }
        #expect(text(fields.host, in: line) == "hé\"st")
        #expect(fields.port == 8443)
        #expect(text(fields.app, in: line) == "com.example.app")
        #expect(fields.certTolerated.map { text($0, in: line) } == ["certificate-expired", "certificate-hostname"])
    }

    @Test(arguments: [
        "", "atsgate: listening on 127.0.0.1:3128", "[1,2,3]", "{", #"{"time":"2026-11-22T06:21:01Z","host":"a"#,
        #"{"time":"2026-11-22T06:21:01Z" "action":"allow"}"#, #"{"time":"2026-11-22T06:21:01Z","action":"allow"} trailing"#,
        #"{"time":"2026-11-22T06:21:01Z","action":"allow","host":"unterminated}"#,
        "127.0.0.1 - - [22/Nov/2026:06:21:01 +0000] \"GET / HTTP/1.1\" 200 612",
    ])
    func linesThatAreNotRecordsAreRefused(line: String) {
        guard case .notARecord = scan(line) else { Issue.record("read as a record: \(line)"); return }
    }

    @Test func objectsWithoutTimeOrActionAreMissingFields() {
        guard case .missingFields(let names) = scan(#"{"host":"a.example.com","port":80}"#) else {
            Issue.record("not refused"); return
        }
        #expect(names == ["time", "action"])
    }

    @Test(arguments: [
        ("2026-11-22T06:21:01.792Z", Int64(1_795_328_461_792)), ("1970-01-01T00:00:00Z", 0),
        ("2026-11-22T07:21:01.792+01:00", 1_795_328_461_792), ("2000-02-29T12:00:00.5Z", 951_825_600_500),
    ])
    func timestampsAreParsedByHand(text: String, milliseconds: Int64) {
        var text = text
        #expect(text.withUTF8 { Timestamp.milliseconds(UnsafeRawBufferPointer($0)) } == milliseconds)
    }

    @Test func timestampsRoundTrip() {
        var text = Timestamp.text(1_795_328_461_792)
        #expect(text == "2026-11-22T06:21:01.792Z")
        #expect(text.withUTF8 { Timestamp.milliseconds(UnsafeRawBufferPointer($0)) } == 1_795_328_461_792)
    }

    @Test(arguments: ["2026-13-22T06:21:01Z", "2026-11-22 06:21:01", "yesterday", "2026-11-22T06:21:01.Z"])
    func badTimestampsAreRefused(text: String) {
        var text = text
        #expect(text.withUTF8 { Timestamp.milliseconds(UnsafeRawBufferPointer($0)) } == nil)
    }

    @Test func skippedLinesAreCountedWithTheFirstOneNamed() {
        let summary = ReportFixtures.summary([
            "atsgate: listening on 127.0.0.1:3128",
            ReportFixtures.record("http", "a.example.com", 80),
            #"{"host":"b.example.com"}"#,
            #"{"time":"not a time","action":"allow"}"#,
            "",
            String(ReportFixtures.record("http", "c.example.com", 80).prefix(40)),
        ])
        #expect(summary.records == 1)
        #expect(summary.inputs[0].lines == 6)
        #expect(summary.inputs[0].notRecords == 2)
        #expect(summary.inputs[0].missingFields == 2)
        #expect(summary.inputs[0].firstSkipped?.line == 1)
    }

    @Test func recordsAreGroupedPerAppAndDestinationWithTheirCounts() throws {
        let summary = ReportFixtures.summary([
            ReportFixtures.record("http", "a.example.com", 80, action: "block", reason: "cleartext-http",
                                  time: "2026-11-22T06:21:05.000Z"),
            ReportFixtures.record("http", "a.example.com", 80, action: "block", reason: "cleartext-http",
                                  time: "2026-11-22T06:21:01.000Z"),
            ReportFixtures.record("http", "a.example.com", 8080),
            ReportFixtures.record("https", "a.example.com", 443, action: "close", tls: "TLSv1.2",
                                  cipher: "TLS_RSA_WITH_AES_128_CBC_SHA", extra: #","cert_tolerated":["certificate-expired"]"#),
            ReportFixtures.record("http", "a.example.com", 80, app: "com.example.other"),
        ])
        #expect(summary.destinations.count == 4)
        #expect(summary.apps == ["com.example.other", "policy.json"], "app when logged, else the policy")
        let blocked = try #require(summary.destinations.first { $0.app == "policy.json" && $0.port == 80 })
        #expect(blocked.records == 2)
        #expect(blocked.count(.block) == 2)
        #expect(blocked.reasons == ["cleartext-http": 2])
        #expect(Timestamp.text(blocked.firstTime) == "2026-11-22T06:21:01.000Z")
        #expect(Timestamp.text(blocked.lastTime) == "2026-11-22T06:21:05.000Z")
        #expect(blocked.reportOnlyBlocks == 2)
        let tunnel = try #require(summary.destinations.first { $0.scheme == "https" })
        #expect(tunnel.count(.other) == 1, "an action this version does not know is counted, not a block")
        #expect(tunnel.count(.block) == 0)
        #expect(tunnel.tlsVersions == ["TLSv1.2"])
        #expect(tunnel.certificateFindings == ["certificate-expired"])
    }

    @Test func logsMergeWhateverTheirOrder() throws {
        let lines = (0..<20).map { index in
            ReportFixtures.record(index % 2 == 0 ? "http" : "https", "h\(index % 3).example.com", 80 + index % 2,
                                  action: index % 4 == 0 ? "block" : "allow", reason: index % 4 == 0 ? "cleartext-http" : nil,
                                  time: "2026-11-22T06:\(10 + index):01.000Z")
        }
        func digest(_ summary: TrafficSummary) -> [String] {
            summary.destinations.map { "\($0.url) \($0.records) \($0.actions) \($0.firstTime) \($0.lastTime) \($0.reasons)" }
        }
        let forward = ReportFixtures.summary(lines)
        let shuffled = ReportFixtures.summary(lines.reversed())
        #expect(digest(forward) == digest(shuffled))
        #expect(forward.records == 20)
    }

    // MARK: files, directories, gzip

    @Test func gzipDirectoriesAndConcatenatedMembersAreRead() throws {
        let directory = try ReportFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = (0..<3000).map { ReportFixtures.record("http", "a\($0 % 7).example.com", 80) }.joined(separator: "\n") + "\n"
        let second = (0..<5).map { _ in ReportFixtures.record("https", "b.example.com", 443) }.joined(separator: "\n")
        try first.write(to: directory.appendingPathComponent("one.log"), atomically: true, encoding: .utf8)
        try second.write(to: directory.appendingPathComponent("two.log"), atomically: true, encoding: .utf8)
        try ReportFixtures.gzip(directory.appendingPathComponent("one.log").path)
        try ReportFixtures.gzip(directory.appendingPathComponent("two.log").path)
        // Two gzip members in one file, as `cat a.gz b.gz` makes.
        var joined = try Data(contentsOf: directory.appendingPathComponent("one.log.gz"))
        joined.append(try Data(contentsOf: directory.appendingPathComponent("two.log.gz")))
        let sub = directory.appendingPathComponent("rotated")
        try FileManager.default.createDirectory(at: sub, withIntermediateDirectories: true)
        try joined.write(to: sub.appendingPathComponent("both.log.gz"))

        let summary = try TrafficSummary.read([directory.path])
        #expect(summary.inputs.map { ($0.path as NSString).lastPathComponent } == ["one.log.gz", "both.log.gz", "two.log.gz"])
        #expect(summary.records == 3000 + 5 + 3000 + 5)
        #expect(summary.inputs.allSatisfy { $0.notRecords == 0 }, "a last line without a newline is still read")
    }

    @Test func aTruncatedGzipIsAnErrorNamingTheFile() throws {
        let directory = try ReportFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("cut.log")
        try (0..<2000).map { ReportFixtures.record("http", "a\($0).example.com", 80) }.joined(separator: "\n")
            .write(to: path, atomically: true, encoding: .utf8)
        try ReportFixtures.gzip(path.path)
        let data = try Data(contentsOf: URL(fileURLWithPath: path.path + ".gz"))
        try data.prefix(data.count / 2).write(to: URL(fileURLWithPath: path.path + ".gz"))
        #expect {
            try TrafficSummary.read([path.path + ".gz"])
        } throws: { error in
            let text = "\(error)"
            return text.hasPrefix(path.path + ".gz: ") && text.contains("truncated")
        }
    }

    @Test func garbageNamedGzIsAnError() throws {
        let directory = try ReportFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("plain.log.gz").path
        try "not compressed at all\n".write(toFile: path, atomically: true, encoding: .utf8)
        #expect(throws: LogReadError.self) { try TrafficSummary.read([path]) }
        #expect(throws: LogReadError.self) { try TrafficSummary.read([directory.appendingPathComponent("absent.log").path]) }
    }
}

extension LogReadingTests {
    @Test(arguments: [2, 3, 7])
    func aFileReadInPartsGivesTheSameSummaryAsOnePass(parts: Int) throws {
        let directory = try ReportFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        var lines = ["atsgate: listening on 127.0.0.1:3128"]
        for index in 0..<4000 {
            lines.append(ReportFixtures.record(index % 3 == 0 ? "http" : "https", "h\(index % 41).example.com", 80 + index % 2,
                                               action: index % 5 == 0 ? "block" : "allow",
                                               reason: index % 5 == 0 ? "cleartext-http" : nil,
                                               time: "2026-11-22T06:\(10 + index % 50):0\(index % 10).000Z",
                                               tls: index % 3 == 0 ? nil : "TLSv1.\(2 + index % 2)"))
            if index == 2500 { lines.append(#"{"host":"cut"#) }
        }
        let path = directory.appendingPathComponent("big.log").path
        try lines.joined(separator: "\n").write(toFile: path, atomically: true, encoding: .utf8)
        let once = try TrafficSummary.read([path], parallelism: 1)
        let split = try TrafficSummary.read([path], parallelism: parts, parallelMinimum: 0)
        func digest(_ summary: TrafficSummary) -> [String] {
            summary.destinations.map {
                "\($0.url) \($0.records) \($0.actions) \($0.firstTime) \($0.lastTime) \($0.reasons) \($0.tlsVersions)"
            }
        }
        #expect(digest(split) == digest(once))
        #expect(split.inputs.count == 1)
        #expect(split.inputs[0].lines == once.inputs[0].lines)
        #expect(split.inputs[0].records == 4000)
        #expect(split.inputs[0].notRecords == 2)
        #expect(split.inputs[0].firstSkipped?.line == 1)
        #expect(split.buckets.minutes == once.buckets.minutes)
        // Without the banner, the first skipped line is the cut record, past the first part.
        try lines.dropFirst().joined(separator: "\n").write(toFile: path, atomically: true, encoding: .utf8)
        let cut = try TrafficSummary.read([path], parallelism: parts, parallelMinimum: 0)
        #expect(cut.inputs[0].firstSkipped?.line == 2502, "numbered from the file's start")
    }
}
