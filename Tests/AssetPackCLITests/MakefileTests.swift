import AssetPackTestSupport
import Foundation
import Testing

/// What the Makefile's targets do for a newcomer.
@Suite(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/make"), "make is not installed"))
struct MakefileTests {
    static var root: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
    }

    static func install(_ variables: [String]) throws -> CLI.Run {
        try CLI.run(
            ["-s", "-C", root.path, "install", "-o", "release", "RELEASE_BIN=\(CLI.binary.path)"] + variables,
            executable: "/usr/bin/make")
    }

    /// `make install` puts `assetpack` on PATH: `$(DESTDIR)$(PREFIX)/bin/assetpack`, mode 0755,
    /// PREFIX `/usr/local` unless given. The release build it depends on is skipped here (`-o
    /// release`) and the built debug binary installed in its place: the recipe is what is tested.
    @Test(arguments: [nil, "/opt/assetpack"])
    func installsTheBinaryUnderPrefix(prefix: String?) throws {
        let staging = TemporaryDirectory("make-install")
        let run = try Self.install(["DESTDIR=\(staging.path)"] + (prefix.map { ["PREFIX=\($0)"] } ?? []))
        #expect(run.status == 0, "\(run.stderr)")
        let installed = staging.path + (prefix ?? "/usr/local") + "/bin/assetpack"
        var st = stat()
        #expect(stat(installed, &st) == 0, "nothing at \(installed): \(run.text)")
        #expect(st.st_mode & 0o7777 == 0o755)
        #expect(run.text.contains("installed \(installed)"), "\(run.text)")
        let version = try CLI.run(["--version"], executable: installed)
        let expected = try CLI.run(["--version"]).text
        #expect(version.status == 0 && version.text == expected, "\(version.text)")
    }

    /// Every `swift test` the Makefile runs skips the XCTest runner: the suites are Swift Testing
    /// only, and XCTest's empty run printed "Executed 0 tests" into `make test`'s output.
    @Test func swiftTestRunsOnlySwiftTesting() throws {
        let run = try CLI.run(
            ["-n", "-C", Self.root.path, "test", "test-full", "soak", "tsan", "asan", "update-figures", "SWIFT=swift"],
            executable: "/usr/bin/make")
        #expect(run.status == 0, "\(run.stderr)")
        let tests = run.text.split(separator: "\n").filter { $0.contains("swift test") }
        #expect(tests.count == 6, "\(run.text)")
        for line in tests { #expect(line.contains("swift test --disable-xctest"), "\(line)") }
    }

    /// The `swift test` line a dry run of `target` prints.
    static func swiftTestLine(_ target: String) throws -> String {
        let run = try CLI.run(["-n", "-C", root.path, target, "SWIFT=swift"], executable: "/usr/bin/make")
        #expect(run.status == 0, "\(run.stderr)")
        return run.text.split(separator: "\n").map(String.init).first { $0.contains("swift test") } ?? ""
    }

    /// Two tiers: `make test` skips the slow suites (SLOW_SUITES, each a suite that exists, so a
    /// renamed one cannot slip into the fast tier unnoticed), `make test-full` runs every suite, and
    /// CI runs `make test-full`.
    @Test func testSkipsTheSlowSuitesAndTestFullRunsEverything() throws {
        let fast = try Self.swiftTestLine("test")
        let skip = try #require(fast.firstMatch(of: /--skip '\\\.\(([A-Za-z|]+)\)\(\/\|\$\)'/), "\(fast)")
        let slow = skip.1.split(separator: "|").map(String.init)
        #expect(slow.contains("DifferentialCLITests") && slow.contains("RemoteTests"), "\(slow)")
        let sources = try FileManager.default.subpathsOfDirectory(atPath: Self.root.appending(path: "Tests").path)
            .filter { $0.hasSuffix(".swift") }
            .map { try String(contentsOf: Self.root.appending(path: "Tests/\($0)"), encoding: .utf8) }
            .joined()
        for suite in slow {
            #expect(sources.contains("struct \(suite) "), "SLOW_SUITES names \(suite), which is no suite in Tests/")
        }
        let full = try Self.swiftTestLine("test-full")
        #expect(full.hasSuffix("swift test --disable-xctest"), "\(full)")
        let ci = try String(contentsOf: Self.root.appending(path: ".ci/run"), encoding: .utf8)
        #expect(ci.contains("\nstep make test-full\n") && !ci.contains("\nstep make test\n"), "\(ci)")
    }
}
