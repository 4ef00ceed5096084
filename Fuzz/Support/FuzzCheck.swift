#if canImport(Glibc)
import Glibc
#endif

/// A broken invariant: says which, then traps, so libFuzzer keeps the input as a crash. A fuzzer that
/// only waits for a trap finds little in Swift, whose bounds checks already trap; these checks are
/// what the targets are for.
func fuzzCheck(_ condition: Bool, _ message: @autoclosure () -> String,
               file: StaticString = #fileID, line: UInt = #line) {
    guard !condition else { return }
    fuzzFail(message(), file: file, line: line)
}

func fuzzFail(_ message: String, file: StaticString = #fileID, line: UInt = #line) -> Never {
    let text = "fuzz invariant broken at \(file):\(line): \(message)\n"
    _ = text.withCString { fputs($0, stderr) }
    fflush(stderr)
    abort()
}

/// Whether the checks of what issue 13 asks of the HTTP/1.1 layer (RFC 9110/9112 strictness) run;
/// `ATSGATE_FUZZ_HTTP_STRICT=0` leaves only the checks today's parsers are held to.
let fuzzHTTPStrict: Bool = {
    guard let value = getenv("ATSGATE_FUZZ_HTTP_STRICT") else { return true }
    return String(cString: value) != "0"
}()

/// Where to cut `count` bytes in two, chosen by a control byte of the input (0 at the start, 255 at
/// the end), so the fuzzer steers the cut.
func fuzzSplitPoint(count: Int, control: UInt8) -> Int {
    (Int(control) * (count + 1)) / 256
}
