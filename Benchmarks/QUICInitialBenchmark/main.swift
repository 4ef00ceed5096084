// Measures the QUIC listener's reader (issue 30): UDP datagrams of client Initial packets read per
// second on one thread, from the header to the parsed ClientHello. Not a test: it prints numbers and
// never fails on them. Run it optimised, on one core:
//   swift build -c release --product QUICInitialBenchmark && taskset -c 0 .build/release/QUICInitialBenchmark [seconds]
// `--write FILE` writes the one-datagram Initials below to FILE instead (each a 2-byte big-endian
// length, then the datagram), for scripts/benchmark-gateway's sender (loadgen quic) to send to a
// running atsgate.
import Foundation
import POSIX
import TLSClient
import TLSWire

let arguments = Array(CommandLine.arguments.dropFirst())
let writeTo = arguments.firstIndex(of: "--write").flatMap { arguments.indices.contains($0 + 1) ? arguments[$0 + 1] : nil }
let seconds = arguments.first.flatMap(Double.init) ?? 2
let attempts = 4096
let sender = SocketAddress(ip: .v4(0xC612_0002), port: 50_000)

/// A ClientHello as a current client writes it: SNI, ALPN h3, TLS 1.3 suites, and either an X25519
/// share alone (about 280 bytes: one Initial) or X25519MLKEM768's 1,216-byte share first, as Chrome
/// and iOS 26 send it (about 1,500 bytes: two Initials, two datagrams).
func clientHello(index: Int, postQuantum: Bool) -> [UInt8] {
    var generator = SystemRandomNumberGenerator()
    let random = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
    var shares: [(group: NamedGroup, key: [UInt8])] = [(.x25519, random)]
    if postQuantum { shares.insert((.x25519MLKEM768, [UInt8](repeating: 0x5A, count: 1216)), at: 0) }
    var builder = ClientHelloBuilder(serverName: "svc\(index).example-cdn.com", cipherSuites: [0x1301, 0x1302, 0x1303],
                                     supportedVersions: [0x0304], supportedGroups: shares.map(\.group) + [.secp256r1],
                                     keyShares: shares, signatureAlgorithms: ClientHelloBuilder.commonSignatureAlgorithms,
                                     random: random, sessionID: [])
    builder.alpnProtocols = ["h3"]
    let body = builder.body
    return [1, UInt8(body.count >> 16), UInt8((body.count >> 8) & 0xFF), UInt8(body.count & 0xFF)] + body
}

func connectionID(_ index: Int) -> [UInt8] {
    withUnsafeBytes(of: UInt64(index).bigEndian, Array.init)
}

/// One Initial datagram per attempt.
let single = (0..<attempts).map { index in
    QUICClientInitial.seal(version: .version1, destinationConnectionID: connectionID(index), packetNumberLength: 1,
                           frames: QUICInitialFrames.crypto(offset: 0, clientHello(index: index, postQuantum: false)))
}
if let writeTo {
    var bytes: [UInt8] = []
    for datagram in single { bytes += [UInt8(datagram.count >> 8), UInt8(datagram.count & 0xFF)] + datagram }
    guard FileManager.default.createFile(atPath: writeTo, contents: Data(bytes)) else {
        FileHandle.standardError.write(Data("cannot write \(writeTo)\n".utf8))
        exit(1)
    }
    print("\(single.count) Initials (\(single[0].count) bytes each) written to \(writeTo)")
    exit(0)
}

/// Two datagrams per attempt, the second half first in each packet, as Chrome shuffles its frames.
let split = (0..<attempts).flatMap { index -> [[UInt8]] in
    let message = clientHello(index: index, postQuantum: true)
    let cut = message.count / 2
    let quarter = cut / 2
    let first = QUICInitialFrames.crypto(offset: quarter, message[quarter..<cut]) + [0x01] + QUICInitialFrames.crypto(offset: 0, message[..<quarter])
    let second = QUICInitialFrames.crypto(offset: cut, message[cut...])
    return [QUICClientInitial.seal(version: .version1, destinationConnectionID: connectionID(index), packetNumber: 0,
                                   packetNumberLength: 1, frames: first),
            QUICClientInitial.seal(version: .version1, destinationConnectionID: connectionID(index), packetNumber: 1,
                                   packetNumberLength: 1, frames: second)]
}
/// Initial headers over random bytes: each fails authentication.
let garbage = single.map { packet -> [UInt8] in
    var damaged = packet
    damaged[600] ^= 0xFF
    return damaged
}

func threadCPUSeconds() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}

func measure(_ label: String, _ datagrams: [[UInt8]], expect: (QUICInitialReading?) -> Bool,
             reader: QUICInitialReader = QUICInitialReader()) {
    var read = 0
    var unexpected = 0
    // The thread's CPU time, not the wall clock, because the machine is shared: other processes
    // taking the core would otherwise count against the reader.
    let started = threadCPUSeconds()
    while threadCPUSeconds() - started < seconds {
        for datagram in datagrams {
            let reading = try? reader.read(datagram, from: sender, at: .now)
            if !expect(reading) { unexpected += 1 }
        }
        read += datagrams.count
    }
    let perSecond = Double(read) / (threadCPUSeconds() - started)
    print(String(format: "%-58@ %10.0f datagrams/s  %7.2f µs each%@", label as NSString, perSecond, 1e6 / perSecond,
                 unexpected == 0 ? "" : "  (\(unexpected) unexpected results)" as NSString))
}

print("QUIC Initial reader, one thread, \(seconds) s of its CPU time per row, \(attempts) connection IDs in turn (table of 1,024)")
measure("one Initial per ClientHello (x25519, SNI, ALPN h3)", single) {
    if case .clientHello? = $0 { return true }
    return false
}
measure("two datagrams per ClientHello (X25519MLKEM768, shuffled)", split) {
    switch $0 {
    case .clientHello?, .incomplete?: return true
    default: return false
    }
}
let warm = QUICInitialReader(limits: QUICInitialLimits(maximumEntries: attempts))
for datagram in single { _ = try? warm.read(datagram, from: sender, at: .now) }
measure("retransmissions of ClientHellos already read", single, expect: {
    if case .alreadyRead? = $0 { return true }
    return false
}, reader: warm)
measure("Initials that fail authentication", garbage) { $0 == nil }
