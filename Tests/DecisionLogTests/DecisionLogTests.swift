import ATSPolicy
import POSIX
import Foundation
import Testing
@testable import DecisionLog
import TLSWire

/// The decision log's JSON lines are written straight into bytes; they must say exactly what the
/// record's JSON object says, and parse as that object.
@Suite struct DecisionLogTests {
    private static let engine: DecisionEngine = {
        let dictionary: [String: PlistValue] = [
            "NSExceptionDomains": .dictionary([
                "legacy.example": .dictionary([
                    "NSExceptionAllowsInsecureHTTPLoads": .bool(true),
                    "NSExceptionMinimumTLSVersion": .string("TLSv1.0"),
                ]),
            ]),
        ]
        return DecisionEngine(policy: Policy(PolicySource(origin: "test.plist", format: nil, root: .bare, dictionary: dictionary)))
    }()

    private static func decision(_ url: String) throws -> Decision {
        engine.decide(try Destination.parse(url: url))
    }

    /// Records covering every kind of field: nulls, IPv6, escapes, negative and large numbers,
    /// durations at each rounding edge, certificate facts and tolerated findings.
    private static func records() throws -> [DecisionRecord] {
        let v4 = SocketAddress(ip: .v4(0x7F00_0001), port: 50123)
        let v6 = try #require(SocketAddress(parsing: "[2001:db8::1]:443"))
        var plain = DecisionRecord(time: 1_795_000_000.123_456, client: v4, method: "GET",
                              decision: try decision("http://www.example.com/"), enforced: true)
        plain.bytesUp = 123
        plain.bytesDown = 1 << 40
        plain.durationMilliseconds = 12.000_4
        var proxyAnswer = DecisionRecord(time: 0.999, client: v6, method: "-", action: .error, reason: .badRequest,
                                    message: "quote \" backslash \\ newline \n tab \t bell \u{7} é ☃", enforced: false)
        proxyAnswer.status = 400
        proxyAnswer.durationMilliseconds = 0.000_4
        var tls = DecisionRecord(time: 4_102_444_799.9999, client: v6, method: "CONNECT",
                            decision: try decision("https://[2001:db8::2]:8443/"), enforced: true)
        tls.tlsVersion = "TLSv1.3"
        tls.cipher = "TLS_AES_128_GCM_SHA256"
        tls.sni = "legacy.example"
        tls.upstreamIP = .v6(0x2001_0db8 << 96 | 2)
        tls.certificate = LoggedCertificate(subject: "CN=legacy.example", issuer: "CN=Test CA",
                                                           key: "RSA 2048", signatureAlgorithm: "sha256WithRSAEncryption")
        tls.toleratedFindings = ["certificate-expired", "certificate-hostname"]
        tls.certificateDepth = 1
        tls.aiaFetched = "http://ca.example/int.cer"
        tls.durationMilliseconds = 1234.5675
        tls.bytesUp = -1
        var exception = DecisionRecord(time: 1_000_000_000, client: v4, method: "CONNECT",
                                  decision: try decision("https://legacy.example/"), enforced: true)
        exception.durationMilliseconds = 0.25
        exception.certificate = LoggedCertificate(subject: "CN=legacy.example", issuer: "CN=Test CA", key: "EC-P-256",
                                                  signatureAlgorithm: "ecdsa-with-SHA256")
        var negative = exception
        negative.durationMilliseconds = -3.5
        var negativeZero = exception // a clock stepped back by less than half a microsecond
        negativeZero.durationMilliseconds = -0.000_4
        tls.keyExchange = KeyExchangeFacts(group: .x25519MLKEM768, postQuantumOffered: true)
        var rsa = exception // TLS 1.2 without (EC)DHE: a key exchange with no group
        rsa.keyExchange = KeyExchangeFacts(group: nil, postQuantumOffered: false)
        return [plain, proxyAnswer, tls, exception, negative, negativeZero, rsa]
    }

    @Test func jsonLinesMatchTheRecordsJSONObject() throws {
        let log = RecordFormatter(format: .json, policy: "test.plist", sink: LogSink(fd: -1))
        for record in try Self.records() {
            var batch = LogBatch()
            batch.lines = Array("earlier line\n".utf8)
            log.write(record, into: &batch)
            var expected: [UInt8] = Array("earlier line\n".utf8)
            record.json(policy: "test.plist").appendCompact(to: &expected)
            expected.append(0x0A)
            #expect(String(decoding: batch.lines, as: UTF8.self) == String(decoding: expected, as: UTF8.self))
            #expect(batch.records == 1)
        }
    }

    @Test func jsonLinesParseWithTheValuesRecorded() throws {
        let records = try Self.records()
        let log = RecordFormatter(format: .json, policy: "p", sink: LogSink(fd: -1))
        var batch = LogBatch()
        for record in records { log.write(record, into: &batch) }
        #expect(batch.records == records.count)
        let objects = try batch.lines.split(separator: 0x0A).map {
            try #require(JSONSerialization.jsonObject(with: Data($0)) as? [String: Any])
        }
        #expect(objects.count == records.count)
        #expect(objects[0]["time"] as? String == "2026-11-18T11:06:40.123Z")
        #expect(objects[0]["client"] as? String == "127.0.0.1:50123")
        #expect(objects[0]["bytes_down"] as? Int == 1 << 40)
        #expect(objects[0]["duration_ms"] as? Double == 12.0)
        #expect(objects[1]["client"] as? String == "[2001:db8::1]:443")
        #expect(objects[1]["time"] as? String == "1970-01-01T00:00:00.999Z")
        #expect(objects[1]["message"] as? String == "quote \" backslash \\ newline \n tab \t bell \u{7} é ☃")
        #expect(objects[1]["host"] is NSNull)
        #expect(objects[1]["status"] as? Int == 400)
        #expect(objects[1]["duration_ms"] as? Double == 0.0)
        #expect(objects[2]["host"] as? String == "2001:db8::2")
        #expect(objects[2]["upstream_ip"] as? String == "2001:db8::2")
        #expect(objects[0]["upstream_ip"] is NSNull)
        #expect(objects[2]["time"] as? String == "2099-12-31T23:59:59.999Z")
        #expect(objects[2]["duration_ms"] as? Double == 1234.568)
        #expect(objects[2]["bytes_up"] as? Int == -1)
        #expect(objects[2]["cert_tolerated"] as? [String] == ["certificate-expired", "certificate-hostname"])
        #expect(objects[3]["minimum_tls_version"] as? String == "TLSv1.0")
        #expect(objects[3]["exception"] as? String == "legacy.example")
        #expect(objects[4]["duration_ms"] as? Double == -3.5)
        #expect(objects[2]["key_exchange"] as? String == "X25519MLKEM768")
        #expect(objects[2]["pq_offered"] as? Bool == true)
        #expect(objects[6]["key_exchange"] is NSNull, "present, and null: the handshake had no group")
        #expect(objects[6]["pq_offered"] as? Bool == false)
        #expect(objects[0]["key_exchange"] == nil && objects[0]["pq_offered"] == nil, "not an inspected handshake")
        #expect(objects[2]["certificate_depth"] as? Int == 1)
        #expect(objects[2]["aia_fetched"] as? String == "http://ca.example/int.cer")
        #expect(objects[3]["aia_fetched"] is NSNull, "a judged certificate that needed no fetch: null")
        #expect(objects[3]["certificate_depth"] == nil, "written only on a certificate failure")
        #expect(objects[0]["aia_fetched"] == nil && objects[0]["certificate_depth"] == nil, "no certificate judged")
    }

    @Test func theTransparentGatesFieldsPathAndOriginalDestinationNullOnTheProxyPath() throws {
        let records = try Self.records()
        var transparent = records[2]
        transparent.path = .transparent
        transparent.originalDestination = SocketAddress(parsing: "[2001:db8::2]:8443")
        var quic = records[3]
        quic.path = .quic
        quic.sni = "quic.example"
        let log = RecordFormatter(format: .json, policy: "p", sink: LogSink(fd: -1))
        var batch = LogBatch()
        for record in [records[0], transparent, quic] { log.write(record, into: &batch) }
        let objects = try batch.lines.split(separator: 0x0A).map {
            try #require(JSONSerialization.jsonObject(with: Data($0)) as? [String: Any])
        }
        #expect(objects[0]["path"] as? String == "proxy")
        #expect(objects[0]["original_dst"] is NSNull, "present, and null on the proxy path")
        #expect(objects[1]["path"] as? String == "transparent")
        #expect(objects[1]["original_dst"] as? String == "[2001:db8::2]:8443")
        #expect(objects[1]["sni"] as? String == "legacy.example")
        #expect(objects[2]["path"] as? String == "quic" && objects[2]["sni"] as? String == "quic.example")
        // In the order INTERFACE.md lists them: after the third round's `parent`.
        let line = String(decoding: batch.lines.split(separator: 0x0A)[1], as: UTF8.self)
        #expect(line.contains(#""parent":null,"path":"transparent","original_dst":"[2001:db8::2]:8443""#), "\(line)")
        let journal = Dictionary(transparent.journalFields(policy: "p"), uniquingKeysWith: { first, _ in first })
        #expect(journal["ATS_PATH"] == "transparent" && journal["ATS_ORIGINAL_DST"] == "[2001:db8::2]:8443")
        #expect(Dictionary(records[0].journalFields(policy: "p"), uniquingKeysWith: { first, _ in first })["ATS_ORIGINAL_DST"] == nil)
        #expect(transparent.text(policy: "p").contains(" transparent ") && transparent.text(policy: "p").contains("(to [2001:db8::2]:8443)"))
    }

    @Test func theJournalNamesTheKeyExchangeAndLeavesOutANullOne() throws {
        let records = try Self.records()
        let tls = Dictionary(records[2].journalFields(policy: "p"), uniquingKeysWith: { first, _ in first })
        #expect(tls["ATS_KEY_EXCHANGE"] == "X25519MLKEM768")
        #expect(tls["ATS_PQ_OFFERED"] == "true")
        let rsa = Dictionary(records[6].journalFields(policy: "p"), uniquingKeysWith: { first, _ in first })
        #expect(rsa["ATS_KEY_EXCHANGE"] == nil)
        #expect(rsa["ATS_PQ_OFFERED"] == "false")
    }
}
