import Foundation
import Testing
import TestSupport

/// The README's quick start says what a fresh clone needs, and that is what the scripts install.
@Suite struct QuickStartTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    @Test func theReadmeNamesExactlyThePackagesThatBuildingAndRunningNeed() throws {
        let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        let listed = try #require(readme.firstMatch(of: /<!-- build-packages -->(.*?)<!-- \/build-packages -->/.dotMatchesNewlines()),
                                  "README marks its package list")
        let named = listed.1.matches(of: /`([a-z0-9.+-]+)`/).map { String($0.1) }
        let script = try Subprocess.run("/bin/bash", [Self.root.appendingPathComponent("scripts/install-deps").path,
                                                      "--build-only", "--list"])
        #expect(script.status == 0, "\(script.stderr)")
        let installed = script.stdout.split(separator: "\n").map(String.init)
        #expect(named == installed, "README: \(named); scripts/install-deps --build-only: \(installed)")
        #expect(!installed.contains { ["chromium", "squid", "prometheus", "python3-venv"].contains($0) },
                "no test tool is needed to build and run")
    }

    @Test func scriptsRunInstallsOnlyTheBuildList() throws {
        let run = try String(contentsOf: Self.root.appendingPathComponent("scripts/run"), encoding: .utf8)
        let installs = run.split(separator: "\n").filter { $0.contains("install-") && !$0.hasPrefix("#") }
        #expect(installs == ["scripts/install-deps --build-only"], "\(installs)")
    }
}
