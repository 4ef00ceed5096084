// swift-tools-version:6.0
import PackageDescription

// The targets are the architecture, bottom up; a target imports only from the layers below it
// (scripts/check-imports keeps it so, and README's "Architecture" draws the picture):
//   1. pure Swift, no I/O: ATSPolicy, then ATSLint, TLSWire, HTTP1 and LabProfile on it or on nothing;
//   2. system libraries, each imported by exactly one Swift target, and the system calls: POSIX,
//      TLSClient (OpenSSL), Systemd (libsystemd);
//   3. I/O: EventLoops (the Dispatch loops on POSIX), DNS (the resolver on the loops);
//   4. the proxy: ProxyAccess (who may use it, with which policy), DecisionLog (the record and where
//      it goes), ProxyAnswers (verdicts and the proxy's own answers), Inspection (the watched TLS
//      handshake and certificate verdicts), then ProxyCore (the connection, the upstream, the server);
//   5. the operator's side: Admin (admin listener, metrics, live page), TrafficLogs (decision logs and
//      HAR read and grouped), ATSReport (the gate's verdict);
//   6. the executable, atsgate: arguments, config, wiring.
let package = Package(
    name: "atsgate",
    products: [
        .executable(name: "atsgate", targets: ["atsgate"]),
        .library(name: "ATSPolicy", targets: ["ATSPolicy"]),
        .library(name: "ATSReport", targets: ["ATSReport"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        // Reads .ipa archives (zip) in memory for --policy, check and lint.
        .package(url: "https://github.com/weichsel/ZIPFoundation", exact: "0.9.20"),
    ],
    targets: [
        // 1. Pure Swift, no I/O.
        // Policy loading, classification, the decision engine, the ATS rules (R1-R18).
        .target(name: "ATSPolicy"),
        // `atsgate lint`: the lint rules and their reports (text, JSON, SARIF).
        .target(name: "ATSLint", dependencies: ["ATSPolicy"]),
        // Bounded, total parsers of TLS records (ClientHello, ServerHello, Certificate, alerts).
        .target(name: "TLSWire"),
        // HTTP/1.1 message parsing and writing (request and response heads, chunked bodies, field
        // syntax), strict to RFC 9112 and fuzzed.
        .target(name: "HTTP1"),
        // `atsgate profile`: Apple configuration profiles (.mobileconfig) for a device lab: the global
        // HTTP proxy or Wi-Fi payload, the lab's root certificates, fresh UUIDs.
        .target(name: "LabProfile", dependencies: ["ATSPolicy"]),

        // 2. System libraries. Exactly one Swift target imports each of them.
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CSystemd", pkgConfig: "libsystemd", providers: [.apt(["libsystemd-dev"])]),
        // libxcrypt: password hashes of --auth-file (bcrypt, SHA-512 crypt).
        .systemLibrary(name: "CCrypt", providers: [.apt(["libcrypt-dev"])]),
        // zlib for the report's gzip reader (not CZlib: ZIPFoundation has a module of that name).
        .systemLibrary(name: "CSystemZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        // c-ares: the proxy's asynchronous resolver, on the event loops' epoll.
        .systemLibrary(name: "CAres", pkgConfig: "libcares", providers: [.apt(["libc-ares-dev"])]),
        // GNU calls Swift cannot import (splice, pipe2, accept4, eventfd, epoll).
        .target(name: "CAtsgateShims"),
        // The one POSIX layer: socket addresses, connect, accept, read, write, splice, poll, epoll and
        // getaddrinfo, with EINTR and EAGAIN handled once.
        .target(name: "POSIX", dependencies: ["ATSPolicy", "CAtsgateShims"]),
        // The only importer of OpenSSL: certificate evaluation, probes, upstream TLS.
        .target(name: "TLSClient", dependencies: ["COpenSSL", "ATSPolicy", "POSIX", "TLSWire"]),
        // The only importer of libsystemd: notify, listen fds, journal.
        .target(name: "Systemd", dependencies: ["CSystemd"]),

        // 3. I/O. Connections are confined to one serial queue each, which Swift 6's checker cannot
        // express for Dispatch sources; these targets keep Swift 5 mode, and queue confinement is
        // the rule in their code.
        // The Dispatch event loops: poller, channels, clocks, the blocking pool, the splice pump.
        .target(name: "EventLoops", dependencies: ["POSIX", "CAtsgateShims"],
                swiftSettings: [.swiftLanguageMode(.v5)]),
        // Names to addresses for the proxy, without blocking a loop: c-ares on an event loop, a cache
        // with TTLs, negative and stale answers, one lookup in flight per name.
        .target(name: "DNS", dependencies: ["ATSPolicy", "POSIX", "EventLoops", "CAres"],
                swiftSettings: [.swiftLanguageMode(.v5)]),

        // 4. The proxy.
        // Who may use the proxy and with which policy: routes to apps, proxy logins.
        .target(name: "ProxyAccess", dependencies: ["ATSPolicy", "POSIX", "CCrypt"]),
        // The decision log: the record and its vocabulary (reasons, actions), its formats (JSON line,
        // text, journal fields), the bounded buffer, the sinks and their writer threads, overflow
        // records, and the observer the operator's side watches through.
        .target(name: "DecisionLog", dependencies: ["ATSPolicy", "TLSWire", "POSIX", "EventLoops", "ProxyAccess"]),
        // What the proxy decides for a request (Verdict) and how it answers: its own HTTP responses,
        // Proxy-Status (RFC 9209) and its error types, what the next hop said.
        .target(name: "ProxyAnswers", dependencies: ["ATSPolicy", "DecisionLog", "HTTP1", "TLSWire"]),
        // The watched TLS handshake of a tunnel as a value (TLSInspection), and the certificate verdicts
        // it asks for: judged off the loops, cached, shared by every loop.
        .target(name: "Inspection",
                dependencies: ["ATSPolicy", "DecisionLog", "TLSWire", "TLSClient", "POSIX", "EventLoops", "ProxyAnswers"],
                swiftSettings: [.swiftLanguageMode(.v5)]),
        // The connection state machine: tunnels, forwarding, upgrades, the upstream connection, the
        // server and its loops.
        .target(
            name: "ProxyCore",
            dependencies: ["ATSPolicy", "TLSWire", "HTTP1", "POSIX", "TLSClient", "EventLoops", "DNS", "ProxyAccess",
                           "DecisionLog", "ProxyAnswers", "Inspection"],
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),

        // 5. The operator's side.
        // The admin listener: /metrics, /healthz, /readyz, the live page and its event stream.
        .target(name: "Admin", dependencies: ["ATSPolicy", "HTTP1", "POSIX", "EventLoops", "ProxyAccess", "DecisionLog",
                                               "ProxyAnswers", "ProxyCore"],
                resources: [.embedInCode("Resources/live-page.html")],
                swiftSettings: [.swiftLanguageMode(.v5)]),
        // Decision logs and HAR captures read (plain or gzip, in parallel when large) and grouped per
        // app and destination: the evidence `atsgate report` judges.
        .target(name: "TrafficLogs", dependencies: ["ATSPolicy", "TLSWire", "CSystemZlib"]),
        // `atsgate report`: the grouped traffic judged again under each app's policy, the fixes, and
        // the renderings.
        .target(name: "ATSReport", dependencies: ["ATSPolicy", "ATSLint", "TLSWire", "TrafficLogs"]),

        // 6. The executable: argument parsing and wiring, nothing else.
        .executableTarget(
            name: "atsgate",
            dependencies: [
                "ATSPolicy", "ATSLint", "ATSReport", "LabProfile", "POSIX", "DecisionLog", "ProxyAnswers", "Inspection",
                "ProxyCore", "ProxyAccess",
                "Admin",
                "TLSClient", "TLSWire", "Systemd",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "ZIPFoundation", package: "ZIPFoundation"),
            ]
        ),

        // Not a test: `swift run -c release DecisionBenchmark` measures one decision.
        .executableTarget(
            name: "DecisionBenchmark",
            dependencies: ["ATSPolicy"],
            path: "Benchmarks/DecisionBenchmark"
        ),
        // Not a test: `swift build -c release --product QUICInitialBenchmark` measures the QUIC
        // listener's Initial reader (datagrams/s on one thread).
        .executableTarget(
            name: "QUICInitialBenchmark",
            dependencies: ["TLSClient", "TLSWire", "POSIX"],
            path: "Benchmarks/QUICInitialBenchmark"
        ),
        // Not a test: scripts/benchmark runs it (release) for the proxy table of BENCHMARKS.md.
        .executableTarget(
            name: "ProxyBenchmark",
            dependencies: [.product(name: "ArgumentParser", package: "swift-argument-parser")],
            path: "Benchmarks/ProxyBenchmark"
        ),

        // Not a test: scripts/soak runs it (release) against the release daemon, a process it starts:
        // mixed load with faults for N minutes, failing on growth or a lost request.
        .executableTarget(
            name: "Soak",
            dependencies: [.product(name: "ArgumentParser", package: "swift-argument-parser")],
            path: "Benchmarks/Soak"
        ),

        // What every test target shares: captured handshakes, loopback clients and origins, ports
        // bound at 0, a seeded generator. It imports nothing of the proxy, so the pure test targets
        // build without OpenSSL, c-ares or the connection.
        .target(name: "TestSupport", dependencies: ["ATSPolicy"], path: "Tests/TestSupport"),
        // An in-memory decision log (swift-log's InMemoryLogging, for atsgate's records).
        .target(name: "LogTestSupport", dependencies: ["DecisionLog"], path: "Tests/LogTestSupport"),
        // One test target per source target, in the same order.
        .testTarget(name: "ATSPolicyTests", dependencies: ["ATSPolicy", "TestSupport"]),
        .testTarget(name: "ATSLintTests", dependencies: ["ATSLint", "ATSPolicy", "TestSupport"]),
        .testTarget(name: "TLSWireTests", dependencies: ["TLSWire", "ATSPolicy", "TestSupport"]),
        .testTarget(name: "HTTP1Tests", dependencies: ["HTTP1", "TestSupport"]),
        .testTarget(name: "LabProfileTests", dependencies: ["LabProfile", "ATSPolicy", "TestSupport"]),
        .testTarget(name: "POSIXTests", dependencies: ["POSIX", "CAtsgateShims", "TestSupport"]),
        .testTarget(name: "TLSClientTests", dependencies: ["TLSClient", "TLSWire", "TestSupport"]),
        .testTarget(name: "SystemdTests", dependencies: ["Systemd"]),
        .testTarget(name: "EventLoopsTests", dependencies: ["EventLoops"]),
        .testTarget(name: "DNSTests", dependencies: ["DNS", "EventLoops", "ATSPolicy", "POSIX", "TestSupport"]),
        .testTarget(name: "ProxyAccessTests", dependencies: ["ProxyAccess", "ATSPolicy"]),
        .testTarget(name: "DecisionLogTests",
                    dependencies: ["DecisionLog", "ATSPolicy", "POSIX", "TLSWire", "TestSupport", "LogTestSupport"]),
        .testTarget(name: "ProxyAnswersTests",
                    dependencies: ["ProxyAnswers", "DecisionLog", "ATSPolicy", "HTTP1", "POSIX"]),
        .testTarget(name: "InspectionTests",
                    dependencies: ["Inspection", "ProxyAnswers", "EventLoops", "ATSPolicy", "HTTP1", "TLSWire", "TestSupport"]),
        .testTarget(name: "ProxyCoreTests",
                    dependencies: ["ProxyCore", "ProxyAnswers", "DecisionLog", "HTTP1", "POSIX", "TLSWire", "TestSupport", "LogTestSupport"]),
        .testTarget(name: "AdminTests", dependencies: ["Admin", "DecisionLog", "ProxyCore", "TLSWire"]),
        .testTarget(name: "ATSReportTests", dependencies: ["ATSReport", "TrafficLogs", "ATSPolicy", "TestSupport"]),
        // Runs the real `atsgate` binary; depends on it so `swift test` builds it first.
        .testTarget(name: "CLITests", dependencies: ["atsgate", "TestSupport"]),
    ]
)
