// libFuzzer target: RequestHeadParser.parse over one buffer of client bytes.
@testable import HTTP1
@testable import ProxyAnswers
@testable import ProxyCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRequestHead(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = UnsafeRawBufferPointer(start: data, count: size)
    let outcome = RequestHeadOutcome(input)
    // Incomplete only while more bytes could still make a head of it.
    fuzzCheck(outcome != .incomplete || couldStillBecomeAHead(input, skippingOneEmptyLine: true),
              "incomplete, though the bytes so far already decide the head")
    guard case .head(let head) = outcome else { return 0 }

    // The head is the input's first bytes, up to its first blank line.
    fuzzCheck(head.length >= 4 && head.length <= input.count, "head length \(head.length) of \(input.count)")
    // One empty line before the request line is skipped (RFC 9112 section 2.2): it counts in the
    // length, not in the head's bytes.
    let skipped = head.length - head.bytes.count
    fuzzCheck(skipped == 0 || (skipped == 2 && input.starts(with: [0x0D, 0x0A])), "skipped \(skipped) bytes")
    fuzzCheck(head.bytes.elementsEqual(input[skipped..<head.length]), "head bytes are not the input's")
    fuzzCheck(head.bytes.suffix(4).elementsEqual([0x0D, 0x0A, 0x0D, 0x0A]), "head does not end with CRLFCRLF")
    // Read as it arrives: one byte short the head is incomplete, never refused.
    fuzzCheck(RequestHeadOutcome(UnsafeRawBufferPointer(rebasing: input[..<(head.length - 1)])) == .incomplete,
              "a head one byte short of a valid head is not incomplete")
    // What follows the head (a body, a pipelined request) does not change it.
    if head.length < input.count {
        let alone = RequestHeadOutcome(UnsafeRawBufferPointer(rebasing: input[..<head.length]))
        fuzzCheck(alone == .head(head), "the bytes after the head changed how it parsed")
    }

    let bytes = head.bytes
    fuzzCheck(head.targetRange.lowerBound > 0 && head.targetRange.upperBound < bytes.count, "target out of bounds")
    fuzzCheck(!(head.chunked && head.contentLength != nil), "both chunked and Content-Length")
    fuzzCheck((head.contentLength ?? 0) >= 0, "negative Content-Length")
    fuzzCheck(head.minorVersion == 0 || head.minorVersion == 1, "HTTP/1.\(head.minorVersion)")
    for field in head.fields {
        fuzzCheck(field.name.lowerBound < field.name.upperBound && field.name.upperBound < field.value.lowerBound
                      && field.value.upperBound <= bytes.count - 4, "field ranges out of order or bounds")
        fuzzCheck(!bytes[field.value].contains { $0 == 0x0D || $0 == 0x0A || $0 == 0 },
                  "CR, LF or NUL in a field value")
    }
    _ = head.target
    _ = head.cameThroughThisProxy
    _ = head.keepAlive

    // Forwarding: what goes to the origin reads back as a request with the client's framing and
    // nothing of the proxy's own fields (RFC 9112 section 6, RFC 9110 section 7.6.1).
    guard head.method != "CONNECT", head.isAbsoluteForm, case .success = head.absoluteFormDestination else { return 0 }
    _ = head.originForm
    let upstream = head.upstreamHead(authority: "origin.example:8080")
    let forwarded = upstream.withUnsafeBytes { RequestHeadOutcome($0) }
    switch forwarded {
    case .head(let again):
        fuzzCheck(again.length == upstream.count, "the forwarded head has bytes after its blank line")
        fuzzCheck(again.method == head.method, "the forwarded method differs")
        fuzzCheck(again.minorVersion == 1, "the forwarded head is not HTTP/1.1")
        fuzzCheck(!again.fields.contains { $0.kind.isProxyField }, "a Proxy-* field was forwarded")
        fuzzCheck(again.fields.contains { $0.kind == .host }, "the forwarded head has no Host")
        if fuzzHTTPStrict {
            // Hop-by-hop removal never strips framing (issue 13: `Connection: content-length`).
            fuzzCheck(again.chunked == head.chunked && again.contentLength == head.contentLength,
                      "forwarding changed the framing: chunked \(head.chunked) -> \(again.chunked), "
                          + "Content-Length \(String(describing: head.contentLength)) -> "
                          + "\(String(describing: again.contentLength))")
            fuzzCheck(singleDecimalContentLength(again.bytes, again.fields),
                      "a repeated, listed or non-decimal Content-Length forwarded")
            // One Host, naming the absolute-form authority (RFC 9112 section 3.2.2).
            fuzzCheck(again.fields.filter { $0.kind == .host }.count == 1, "the forwarded head has several Host fields")
        }
    case .refused(let problem):
        // Only growth past the head's limits (the Host and Via the proxy adds: 16 KiB, 100 fields)
        // may refuse what the proxy itself wrote.
        fuzzCheck(problem.contains("431"), "the forwarded head is refused: \(problem)")
    case .incomplete:
        fuzzFail("the forwarded head is incomplete")
    }
    return 0
}

/// What parsing gave, comparable: a head (by its parts), incomplete, or refused.
enum RequestHeadOutcome: Equatable {
    case head(RequestHead)
    case incomplete
    /// The error as text: its type is the parser's business.
    case refused(String)

    init(_ bytes: UnsafeRawBufferPointer) {
        do {
            if let head = try RequestHeadParser.parse(bytes) { self = .head(head) } else { self = .incomplete }
        } catch {
            self = .refused(String(describing: error))
        }
    }

    static func == (lhs: Self, rhs: Self) -> Bool {
        switch (lhs, rhs) {
        case (.incomplete, .incomplete): true
        case (.refused(let a), .refused(let b)): a == b
        case (.head(let a), .head(let b)):
            a.bytes == b.bytes && a.method == b.method && a.targetRange == b.targetRange
                && a.minorVersion == b.minorVersion && a.contentLength == b.contentLength && a.chunked == b.chunked
                && a.keepAlive == b.keepAlive && a.fields.map(\.name) == b.fields.map(\.name)
                && a.fields.map(\.value) == b.fields.map(\.value)
        default: false
        }
    }
}
