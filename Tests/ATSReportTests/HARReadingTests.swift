import ATSPolicy
import ATSReport
import Foundation
import Testing
import TestSupport

/// HAR 1.2 captures: the streaming parser, entries as records, what is skipped and named, and input
/// that is not a HAR. The captures here are written with JSONSerialization in the shapes the tools
/// write (Chrome's DevTools protocol `_securityDetails`, Playwright's, mitmproxy's); the CLI tests use
/// captures made by the tools themselves.
@Suite struct HARReadingTests {
    typealias F = ReportFixtures

    /// One entry in the HAR 1.2 shape, with what the tools add.
    static func entry(_ url: String, started: String? = "2026-11-22T06:21:01.792Z", security: [String: Any]? = nil,
                      error: String? = nil, body: Int = 200) -> [String: Any] {
        var response: [String: Any] = ["status": error == nil ? 200 : 0, "statusText": "", "httpVersion": "HTTP/1.1",
                                       "headers": [["name": "Content-Type", "value": "text/plain; \"q\" \\ x"]],
                                       "cookies": [], "content": ["size": body, "mimeType": "text/plain",
                                                                  "text": String(repeating: "{[\"x\\", count: body / 4)],
                                       "redirectURL": "", "headersSize": -1, "bodySize": body]
        if let error { response["_error"] = error }
        var entry: [String: Any] = [
            "request": ["method": "GET", "url": url, "httpVersion": "HTTP/1.1", "headers": [], "queryString": [],
                        "cookies": [], "headersSize": -1, "bodySize": 0],
            "response": response, "cache": [:], "timings": ["send": 0, "wait": 1.5, "receive": 0.25], "time": 1.75,
            "serverIPAddress": "203.0.113.7", "_serverPort": 443,
        ]
        if let started { entry["startedDateTime"] = started }
        if let security { entry["_securityDetails"] = security }
        return entry
    }

    static func har(_ entries: [[String: Any]], creator: String = "WebInspector") throws -> Data {
        let document: [String: Any] = ["log": ["version": "1.2", "creator": ["name": creator, "version": "537.36"],
                                               "pages": [], "entries": entries]]
        return try JSONSerialization.data(withJSONObject: document, options: [.sortedKeys])
    }

    static var sample: [[String: Any]] { [
        entry("http://api.example.com/v1?q=1"),
        entry("https://www.example.com/", security: ["protocol": "TLS 1.3", "keyExchange": "", "cipher": "AES_128_GCM",
                                                      "keyExchangeGroup": "X25519MLKEM768", "subjectName": "www.example.com"]),
        entry("https://old.example.com:8443/a", started: "2026-11-22T06:21:03.000+00:00",
              security: ["protocol": "TLS 1.2", "keyExchange": "RSA", "cipher": "AES_128_CBC", "mac": "HMAC-SHA1"]),
        entry("https://pw.example.com/", started: "2026-11-22T06:21:04.123456+00:00",
              security: ["protocol": "TLS 1.2", "subjectName": "pw.example.com", "issuer": "CA", "validFrom": 0, "validTo": 1]),
        entry("https://unseen.example.com/", error: "net::ERR_TUNNEL_CONNECTION_FAILED"),
        entry("wss://socket.example.com/chat"),
        entry("data:image/png;base64,AAAA"),
        entry("https://nostart.example.com/", started: nil),
        entry("https://badtime.example.com/", started: "yesterday"),
    ] }

    static func write(_ data: Data, _ name: String, in directory: URL) throws -> String {
        let path = directory.appendingPathComponent(name).path
        try data.write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test func entriesBecomeCapturedRecordsOfTheirDestinations() throws {
        let directory = try F.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = try Self.write(try Self.har(Self.sample), "shop.har", in: directory)
        let summary = try TrafficSummary.read([path])
        let input = try #require(summary.inputs.first)
        #expect(input.kind == .har)
        #expect(input.creator == "WebInspector 537.36")
        #expect(input.lines == 9 && input.records == 6)
        #expect(input.skipped == ["not an http(s) load (data:)": 1, "no startedDateTime": 1,
                                  "startedDateTime is not an ISO 8601 time": 1], "counted and named: \(input.skipped)")
        #expect(input.firstSkipped?.line == 7)
        #expect(summary.destinations.map(\.url) == ["http://api.example.com:80", "https://old.example.com:8443",
                                                    "https://pw.example.com:443", "https://socket.example.com:443",
                                                    "https://unseen.example.com:443", "https://www.example.com:443"])
        #expect(Set(summary.destinations.map(\.app)) == ["shop"], "the file's name is the app")
        let www = try #require(summary.destinations.first { $0.host == "www.example.com" })
        #expect(www.count(.captured) == 1)
        #expect(www.handshakes == [Handshake(version: "TLSv1.3", cipher: "TLS_AES_128_GCM_SHA256")])
        #expect(www.keyExchanges == [KeyExchange(group: "X25519MLKEM768", pqOffered: nil)])
        #expect(www.quantum == .postQuantum, "a post-quantum group chosen was offered")
        let old = try #require(summary.destinations.first { $0.host == "old.example.com" })
        #expect(old.handshakes == [Handshake(version: "TLSv1.2", cipher: "TLS_RSA_WITH_AES_128_CBC_SHA")])
        #expect(old.firstTime == 1_795_328_463_000)
        let unseen = try #require(summary.destinations.first { $0.host == "unseen.example.com" })
        #expect(unseen.reasons == ["net::ERR_TUNNEL_CONNECTION_FAILED": 1])
    }

    @Test func theReportJudgesWhatNeedsNoHandshakeAndSaysWhatItCouldNotCheck() throws {
        let directory = try F.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = try Self.write(try Self.har(Self.sample), "shop.har", in: directory)
        let report = Report(summary: try TrafficSummary.read([path]), policies: [try F.policy("{}")], options: EngineOptions())
        let app = try #require(report.apps.first)
        #expect(app.blocked.map(\.traffic.url) == ["http://api.example.com:80", "https://old.example.com:8443"])
        #expect(app.destination("https://old.example.com:8443")?.findings.map(\.reason) == ["cipher-suite"],
                "TLS 1.2 with RSA key exchange: no forward secrecy")
        #expect(app.destination("https://old.example.com:8443")?.fix?.changes.map(\.summary)
                == ["NSExceptionRequiresForwardSecrecy=NO for old.example.com"])
        #expect(app.destination("https://unseen.example.com:443")?.notChecked == "no handshake in the capture")
        #expect(app.destination("https://pw.example.com:443")?.notChecked?.hasPrefix("TLS version only") == true)
        #expect(app.destination("https://www.example.com:443")?.notChecked == nil, "version and suite: checked")
        #expect(app.destination("https://www.example.com:443")?.isBlocked == false)
        #expect(report.text.contains("NOT CHECKED (3):\n    https://pw.example.com:443  TLS version only"), "\(report.text)")
        #expect(report.text.contains("    https://socket.example.com:443  no handshake in the capture\n"))
        #expect(report.text.contains("    https://unseen.example.com:443  no handshake in the capture\n"))
        #expect(report.junit.contains("<skipped message=\"not checked: no handshake in the capture\"/>"))
    }

    @Test(arguments: [1, 2, 3, 7, 64, 4096, 1 << 20])
    func theResultIsTheSameWhateverTheBufferSize(buffer: Int) throws {
        let directory = try F.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = try Self.write(try Self.har(Self.sample), "a.har", in: directory)
        let whole = try TrafficSummary.read([path])
        let cut = try TrafficSummary.read([path], harBuffer: buffer)
        #expect(cut.destinations.map(\.url) == whole.destinations.map(\.url))
        #expect(cut.destinations.map(\.handshakes) == whole.destinations.map(\.handshakes))
        #expect(cut.inputs.first?.skipped == whole.inputs.first?.skipped)
        #expect(cut.records == whole.records)
    }

    /// A large capture is read in parts, one per thread, cut where an entry starts; the summary is the
    /// one pass's, including when a cut lands on an object nested in an entry that opens like one (the
    /// parts then do not meet, and the file is read again in one pass).
    @Test(arguments: [false, true])
    func partsReadInParallelGiveTheOnePassSummary(nestedLookAlikes: Bool) throws {
        let directory = try F.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        var entries: [[String: Any]] = []
        for index in 0..<600 {
            var entry = Self.sample[index % Self.sample.count]
            entry["startedDateTime"] = entry["startedDateTime"] == nil ? nil : "2026-11-22T06:\(10 + index % 40):01.000Z"
            // Sorted keys: every entry opens with `{"_serverPort":`; so does this nested object.
            if nestedLookAlikes { entry["response"] = (entry["response"] as! [String: Any]).merging(["_nested": ["_serverPort": 1]]) { $1 } }
            entries.append(entry)
        }
        let path = try Self.write(try Self.har(entries), "parts.har", in: directory)
        let whole = try TrafficSummary.read([path], parallelism: 1)
        for parts in [2, 3, 7] {
            let cut = try TrafficSummary.read([path], parallelism: parts, parallelMinimum: 0)
            #expect(cut.destinations.map(\.url) == whole.destinations.map(\.url))
            #expect(cut.destinations.map(\.records) == whole.destinations.map(\.records))
            #expect(cut.destinations.map(\.handshakes) == whole.destinations.map(\.handshakes))
            #expect(cut.inputs.count == 1)
            #expect(cut.inputs.first?.lines == 600 && cut.inputs.first?.records == whole.records)
            #expect(cut.inputs.first?.skipped == whole.inputs.first?.skipped)
            #expect(cut.inputs.first?.firstSkipped?.line == whole.inputs.first?.firstSkipped?.line, "numbered from the file's start")
            #expect(cut.inputs.first?.creator == "WebInspector 537.36")
        }
        // An error in a later part is reported with its offset in the file, as one pass reports it.
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let at = bytes.count * 4 / 5
        let brace = bytes[at...].firstIndex(of: UInt8(ascii: "}"))!
        bytes[brace] = UInt8(ascii: "]")
        let broken = try Self.write(Data(bytes), "broken.har", in: directory)
        var errors: [String] = []
        for parts in [1, 3] {
            do { _ = try TrafficSummary.read([broken], parallelism: parts, parallelMinimum: 0) } catch { errors.append(error.description) }
        }
        #expect(errors.count == 2 && errors[0] == errors[1], "\(errors)")
    }

    @Test func keysInAnyOrderEscapesAndWhitespaceAreRead() throws {
        let directory = try F.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let text = """
             { "log" : { "entries" : [ { "response" : { "_error" : null , "status" : 200 } ,
               "request" : { "url" : "https:\\/\\/ESC.Example.COM.:444\\/p\\u00e9" , "method" : "GET" } ,
               "startedDateTime" : "2026-11-22T06:21:01Z" , "_securityDetails" : { "protocol" : "TLS 1.3" } } ,
               { "startedDateTime": "2026-11-22T06:21:01Z", "request": {"url": "http://[2001:DB8::1]:8080/"}} ] ,
               "creator" : { "version" : "1.65.2", "name" : "Playwright" }, "version": "1.2" } }
            """
        let path = try Self.write(Data(text.utf8), "esc.har", in: directory)
        let summary = try TrafficSummary.read(["com.example.app=" + path])
        #expect(summary.destinations.map(\.url) == ["http://[2001:db8::1]:8080", "https://esc.example.com:444"])
        #expect(Set(summary.destinations.map(\.app)) == ["com.example.app"], "ID=FILE names the app")
        #expect(summary.inputs.first?.creator == "Playwright 1.65.2")
    }

    @Test func gzipIsReadAsThePlainFile() throws {
        let directory = try F.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = try Self.write(try Self.har(Self.sample), "z.har", in: directory)
        try F.gzip(path, keep: true)
        let plain = try TrafficSummary.read([path]), zipped = try TrafficSummary.read([path + ".gz"])
        #expect(zipped.destinations.map(\.url) == plain.destinations.map(\.url))
        #expect(zipped.inputs.first?.kind == .har)
        #expect(zipped.records == plain.records)
    }

    @Test func aLongURLAndAHugeBodyAreReadWithoutKeepingThem() throws {
        // A 2 MB path and a 4 MB body: only the URL's first 8 KiB are kept, and the body is skipped.
        let directory = try F.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let long = "https://long.example.com/" + String(repeating: "a", count: 2 << 20)
        let path = try Self.write(try Self.har([Self.entry(long, body: 4 << 20), Self.entry("http://after.example.com/")]),
                                  "big.har", in: directory)
        let summary = try TrafficSummary.read([path])
        #expect(summary.destinations.map(\.url) == ["http://after.example.com:80", "https://long.example.com:443"])
    }

    /// Every cut of a HAR is refused with the byte offset where it ends, never read as a shorter capture.
    @Test func everyCutIsRefusedWithItsOffset() throws {
        let directory = try F.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let data = try Self.har(Array(Self.sample.prefix(3)))
        for length in stride(from: 0, to: data.count, by: max(1, data.count / 400)) {
            let path = try Self.write(data.prefix(length), "cut.har", in: directory)
            do {
                _ = try TrafficSummary.read([path], harBuffer: 97)
                Issue.record("a cut at \(length) of \(data.count) was read")
            } catch {
                #expect(error.path == path)
                let offset = error.problem.firstMatch(of: /at byte (\d+)/).flatMap { Int($0.1) }
                #expect(offset != nil && offset! <= length, "\(length): \(error.problem)")
                #expect(error.problem.hasPrefix("truncated HAR at byte") || error.problem.hasPrefix("not valid HAR JSON"),
                        "\(error.problem)")
            }
        }
    }

    @Test(arguments: [
        ("hello", "not valid HAR JSON at byte 0: expected the HAR document (a JSON object)"),
        ("{\"log\": {\"entries\": [}]}}", "not valid HAR JSON at byte 21: expected a value"),
        ("{\"log\": {\"entries\": [{\"request\": {\"url\" \"x\"}}]}}", "not valid HAR JSON at byte 40: expected : after a key in request"),
        ("{\"log\": {\"entries\": [{\"a\": [1, 2}]}]}}", "not valid HAR JSON at byte 32: unbalanced }"),
        ("{\"log\": {\"entries\": []}} {}", "not valid HAR JSON at byte 25: unexpected data after the HAR document"),
        ("{\"log\": {\"entries\": [", "truncated HAR at byte 21: the file ends inside log.entries"),
        ("{\"version\": \"1.2\"}", "not a HAR file: the JSON document has no \"log\""),
        ("{\"log\": {\"pages\": []}}", "not a HAR file: \"log\" has no \"entries\" array"),
        ("{\"log\": {\"entries\": {}}}", "not valid HAR JSON at byte 20: log.entries is not an array"),
    ])
    func badInputIsOneLineWithTheOffset(text: String, problem: String) throws {
        let directory = try F.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = try Self.write(Data(text.utf8), "bad.har", in: directory)
        #expect(throws: LogReadError.self) { try TrafficSummary.read([path]) }
        do {
            _ = try TrafficSummary.read([path])
        } catch {
            #expect(error.description == "\(path): \(problem)")
        }
    }

    @Test func corruptedBytesNeverCrash() throws {
        let directory = try F.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let original = [UInt8](try Self.har(Array(Self.sample.prefix(4))))
        var generator = SeededGenerator(seed: 21)
        for round in 0..<300 {
            let path = try Self.write(Data(F.corrupt(original, using: &generator)), "c\(round % 4).har", in: directory)
            _ = try? TrafficSummary.read([path], harBuffer: 61)
        }
    }

    @Test(arguments: [
        ("https://a.example.com", "https", "a.example.com", 443), ("HTTP://A.Example.COM.:8080/x", "http", "a.example.com", 8080),
        ("https://user:pw@b.example.com/p?q#f", "https", "b.example.com", 443), ("ws://c.example.com/", "http", "c.example.com", 80),
        ("wss://[::1]:9443/", "https", "::1", 9443), ("http://192.0.2.1?x", "http", "192.0.2.1", 80),
    ])
    func urlsGiveTheLoggedDestination(url: String, scheme: String, host: String, port: Int) throws {
        let directory = try F.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = try Self.write(try Self.har([Self.entry(url)]), "u.har", in: directory)
        let destination = try #require(try TrafficSummary.read([path]).destinations.first)
        #expect((destination.scheme, destination.host, destination.port) == (scheme, host, port))
    }

    @Test(arguments: ["http://", "https://:443/", "http://a.example.com:99999/", "http:/a.example.com", "https://[::1/"])
    func malformedURLsAreSkippedAndNamed(url: String) throws {
        let directory = try F.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = try Self.write(try Self.har([Self.entry(url), Self.entry("http://ok.example.com/")]), "m.har", in: directory)
        let summary = try TrafficSummary.read([path])
        #expect(summary.records == 1)
        #expect(summary.inputs.first?.firstSkipped?.why.hasPrefix("request.url: ") == true)
    }
}
