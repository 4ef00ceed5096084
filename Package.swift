// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "atsgate",
    products: [
        .executable(name: "atsgate", targets: ["atsgate"]),
        .library(name: "ATSPolicy", targets: ["ATSPolicy"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    ],
    targets: [
        // Pure Swift, no I/O: policy loading, classification, the decision engine, lint.
        .target(name: "ATSPolicy"),

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
        .target(name: "TLSClient", dependencies: ["COpenSSL"]),
        .target(name: "Systemd", dependencies: ["CSystemd"]),

        // The executable: argument parsing and wiring, nothing else.
        .executableTarget(
            name: "atsgate",
            dependencies: [
                "ATSPolicy", "TLSClient", "Systemd",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),

        // Not a test: `swift run -c release DecisionBenchmark` measures one decision.
        .executableTarget(
            name: "DecisionBenchmark",
            dependencies: ["ATSPolicy"],
            path: "Benchmarks/DecisionBenchmark"
        ),

        .testTarget(name: "ATSPolicyTests", dependencies: ["ATSPolicy"]),
        // Runs the real `atsgate` binary; depends on it so `swift test` builds it first.
        .testTarget(name: "CLITests", dependencies: ["atsgate"]),
    ]
)
