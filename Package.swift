// swift-tools-version:6.0
import PackageDescription

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
        // Pure Swift, no I/O: policy loading, classification, the decision engine, lint.
        .target(name: "ATSPolicy"),
        .target(name: "TLSWire"),

        // System libraries. Exactly one Swift target imports each of them.
        .systemLibrary(
            name: "COpenSSL",
            pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"])]
        ),
        .systemLibrary(
            name: "CSystemd",
            pkgConfig: "libsystemd",
            providers: [.apt(["libsystemd-dev"])]
        ),
        // libxcrypt: password hashes of --auth-file (bcrypt, SHA-512 crypt).
        .systemLibrary(name: "CCrypt", providers: [.apt(["libcrypt-dev"])]),
        // GNU calls Swift cannot import (splice, pipe2, accept4, eventfd, epoll).
        .target(name: "CAtsgateShims"),
        // The one POSIX layer: socket addresses, connect, accept, read, write, splice, poll, epoll and
        // getaddrinfo, with EINTR and EAGAIN handled once, for ProxyCore, TLSClient and the executable.
        .target(name: "POSIX", dependencies: ["ATSPolicy", "CAtsgateShims"]),
        .target(name: "TLSClient", dependencies: ["COpenSSL", "ATSPolicy", "POSIX", "TLSWire"]),
        .target(name: "Systemd", dependencies: ["CSystemd"]),
        .systemLibrary(
            name: "CSystemZlib",
            pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"])]
        ),

        // `atsgate report`: decision logs read (plain or gzip), grouped per app and destination, judged
        // again under the app's policy, and rendered. The only importer of CSystemZlib (not CZlib: ZIPFoundation has a module of that name).
        .target(name: "ATSReport", dependencies: ["ATSPolicy", "TLSWire", "CSystemZlib"]),

        // The Dispatch event loop: listener, connection state machine, tunnels, relay, decision log.
        // Connections are confined to one serial queue each, which Swift 6's checker cannot express for
        // Dispatch sources; the target keeps Swift 5 mode, and queue confinement is the rule in its code.
        .target(
            name: "ProxyCore",
            dependencies: ["ATSPolicy", "CAtsgateShims", "CCrypt", "POSIX", "TLSWire", "TLSClient"],
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),

        // The executable: argument parsing and wiring, nothing else.
        .executableTarget(
            name: "atsgate",
            dependencies: [
                "ATSPolicy", "ATSReport", "POSIX", "ProxyCore", "TLSClient", "TLSWire", "Systemd",
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
        // Not a test: scripts/benchmark runs it (release) for the proxy table of BENCHMARKS.md.
        .executableTarget(
            name: "ProxyBenchmark",
            dependencies: [.product(name: "ArgumentParser", package: "swift-argument-parser")],
            path: "Benchmarks/ProxyBenchmark"
        ),

        // What every test target shares: captured handshakes, loopback clients and origins, ports
        // bound at 0, a seeded generator, an in-memory decision log.
        .target(name: "TestSupport", dependencies: ["ProxyCore"], path: "Tests/TestSupport"),
        .testTarget(name: "ATSPolicyTests", dependencies: ["ATSPolicy", "TestSupport"]),
        .testTarget(name: "ATSReportTests", dependencies: ["ATSReport", "ATSPolicy", "TestSupport"]),
        .testTarget(name: "TLSWireTests", dependencies: ["TLSWire", "ATSPolicy", "TestSupport"]),
        .testTarget(name: "ProxyCoreTests", dependencies: ["ProxyCore", "POSIX", "TestSupport"]),
        .testTarget(name: "SystemdTests", dependencies: ["Systemd"]),
        .testTarget(name: "TLSClientTests", dependencies: ["TLSClient", "TLSWire", "TestSupport"]),
        // Runs the real `atsgate` binary; depends on it so `swift test` builds it first.
        .testTarget(name: "CLITests", dependencies: ["atsgate", "TestSupport"]),
    ]
)
