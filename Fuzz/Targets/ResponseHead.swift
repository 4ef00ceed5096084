// libFuzzer target: ResponseHead.parse over one buffer of origin bytes, and the head the proxy
// writes to the client from it.
@testable import HTTP1

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzResponseHead(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = UnsafeRawBufferPointer(start: data, count: size)
    let outcome = ResponseHeadOutcome(input)
    // Incomplete only while more bytes could still make a head of it.
    fuzzCheck(outcome != .incomplete || couldStillBecomeAHead(input, skippingOneEmptyLine: false),
              "incomplete, though the bytes so far already decide the head")
    guard case .head(let head) = outcome else { return 0 }

    fuzzCheck(head.length >= 4 && head.length <= input.count, "head length \(head.length) of \(input.count)")
    fuzzCheck(head.bytes.elementsEqual(input.prefix(head.length)), "head bytes are not the input's")
    fuzzCheck(ResponseHeadOutcome(UnsafeRawBufferPointer(rebasing: input[..<(head.length - 1)])) == .incomplete,
              "a head one byte short of a valid head is not incomplete")
    fuzzCheck((0...999).contains(head.status), "status \(head.status)")
    // RFC 9110 section 15: a status code is 100...599.
    fuzzCheck(!fuzzHTTPStrict || (100...599).contains(head.status), "status \(head.status)")
    fuzzCheck(head.reason.upperBound <= head.bytes.count, "reason out of bounds")
    for field in head.fields {
        fuzzCheck(field.name.lowerBound < field.name.upperBound && field.name.upperBound < field.value.lowerBound
                      && field.value.upperBound <= head.bytes.count - 4, "field ranges out of order or bounds")
    }
    let framing = Framing(head)

    // The head for the client reads back as the same response with the same body framing, for
    // every way the proxy writes it.
    for (keepAlive, clientMinor) in [(true, 1), (false, 1), (true, 0), (false, 0)] {
        let rewritten = head.rewritten(keepAlive: keepAlive, clientMinorVersion: clientMinor)
        guard case .head(let again) = rewritten.withUnsafeBytes({ ResponseHeadOutcome($0) }) else {
            fuzzFail("the head written for the client does not parse")
        }
        fuzzCheck(again.length == rewritten.count, "the head written for the client has bytes after its blank line")
        fuzzCheck(again.status == head.status, "status \(head.status) became \(again.status)")
        if fuzzHTTPStrict {
            // An HTTP/1.0 client gets a chunked body without its coding, delimited by the close.
            var expected = framing
            if head.removesChunking(forClientMinorVersion: clientMinor) {
                if expected.get == "chunked" { expected.get = "until close" }
                fuzzCheck(!again.originKeepsConnection, "a dechunked body's head does not close the connection")
                fuzzCheck(!again.framing.hasTransferEncoding, "Transfer-Encoding sent to an HTTP/1.0 client")
            }
            fuzzCheck(Framing(again) == expected, "framing \(expected) became \(Framing(again))")
            // What the client gets is unambiguous (issue 13; RFC 9112 sections 5 and 6.3): tokens for
            // names, no controls in values, never both Content-Length and Transfer-Encoding.
            for field in again.fields {
                fuzzCheck(again.bytes[field.name].allSatisfy(isTokenByte), "a field name that is not a token")
                fuzzCheck(again.bytes[field.value].allSatisfy { $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) },
                          "a control byte in a field value")
            }
            fuzzCheck(!(again.fields.contains { $0.kind == .contentLength }
                            && again.fields.contains { $0.kind == .transferEncoding }),
                      "both Content-Length and Transfer-Encoding sent to the client")
            fuzzCheck(singleDecimalContentLength(again.bytes, again.fields),
                      "a repeated, listed or non-decimal Content-Length sent to the client")
        }
    }
    return 0
}

/// How the body that follows a head is framed, for a GET and for a HEAD.
struct Framing: Equatable, CustomStringConvertible {
    var get: String
    var head: String

    init(_ response: ResponseHead) {
        get = Self.describe(MessageBody(response: response, requestMethod: "GET"))
        head = Self.describe(MessageBody(response: response, requestMethod: "HEAD"))
    }

    private static func describe(_ body: MessageBody) -> String {
        switch body {
        case .none: "none"
        case .length(let count): "length \(count)"
        case .chunked: "chunked"
        case .untilClose: "until close"
        }
    }

    var description: String { "GET: \(get), HEAD: \(head)" }
}

enum ResponseHeadOutcome: Equatable {
    case head(ResponseHead)
    case incomplete
    /// The error as text: its type is the parser's business.
    case refused(String)

    init(_ bytes: UnsafeRawBufferPointer) {
        do {
            if let head = try ResponseHead.parse(bytes) { self = .head(head) } else { self = .incomplete }
        } catch {
            self = .refused(String(describing: error))
        }
    }

    static func == (lhs: Self, rhs: Self) -> Bool {
        switch (lhs, rhs) {
        case (.incomplete, .incomplete): true
        case (.refused(let a), .refused(let b)): a == b
        case (.head(let a), .head(let b)): a.bytes == b.bytes && a.status == b.status
        default: false
        }
    }
}
