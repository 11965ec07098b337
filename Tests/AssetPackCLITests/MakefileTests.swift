#if SystemLibraries  // the default configuration only: see Package.swift
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
    /// only, and XCTest's empty run printed "Executed 0 tests" into `make test`'s output. (`make
    /// test-full` runs the test bundle itself, with Swift Testing only: see the next test.)
    @Test func swiftTestRunsOnlySwiftTesting() throws {
        let run = try CLI.run(
            ["-n", "-C", Self.root.path, "test", "test-full", "soak", "tsan", "asan", "update-figures", "SWIFT=swift"],
            executable: "/usr/bin/make")
        #expect(run.status == 0, "\(run.stderr)")
        let tests = run.text.split(separator: "\n").filter { $0.contains("swift test") }
        #expect(tests.count == 5, "\(run.text)")
        for line in tests { #expect(line.contains("swift test --disable-xctest"), "\(line)") }
    }

    /// The `swift test` line a dry run of `target` prints.
    static func swiftTestLine(_ target: String) throws -> String {
        let run = try CLI.run(["-n", "-C", root.path, target, "SWIFT=swift"], executable: "/usr/bin/make")
        #expect(run.status == 0, "\(run.stderr)")
        return run.text.split(separator: "\n").map(String.init).first { $0.contains("swift test") } ?? ""
    }

    /// Two tiers: `make test` runs the bundle with `ASSETPACK_TESTS=fast`, which turns the `.slow`
    /// condition off; `make test-full` (what CI runs) runs every test, as three processes that
    /// split the targets between them and together cover each once.
    @Test func testSkipsTheSlowTierAndTestFullRunsEverything() throws {
        let fast = try Self.swiftTestLine("test")
        #expect(fast.hasPrefix("ASSETPACK_TESTS=fast swift test"), "\(fast)")
        #expect(!fast.contains("--skip ") && !fast.contains("--filter"), "\(fast)")
        let dry = try CLI.run(["-n", "-C", Self.root.path, "test-full", "SWIFT=swift"], executable: "/usr/bin/make")
        #expect(dry.status == 0, "\(dry.stderr)")
        #expect(dry.text.contains("export ASSETPACK_TESTS=all;"), "\(dry.text)")
        #expect(
            dry.text.contains(#"for shard in 'AssetPackCLITests\.' 'AssetPackRemoteTests\.'; do"#),
            "\(dry.text)")
        #expect(dry.text.contains(#"--testing-library swift-testing --filter "^($shard)""#), "\(dry.text)")
        #expect(dry.text.contains(#"--testing-library swift-testing --skip "^($sharded)""#), "\(dry.text)")
        let ci = try String(contentsOf: Self.root.appending(path: ".ci/run"), encoding: .utf8)
        #expect(ci.contains("\nstep make test-full\n") && !ci.contains("\nstep make test\n"), "\(ci)")
    }

    /// The condition itself, in the built test bundle: with `ASSETPACK_TESTS=fast` a test marked
    /// `.slow` (a whole suite, or one test of a suite that is not) is skipped, saying why, and a
    /// test beside it runs; without it, both run.
    @Test func theSlowConditionSkipsOnlyInTheFastTier() throws {
        let bundle = CLI.binary.deletingLastPathComponent().appending(path: "AssetPackPackageTests.xctest").path
        let filter =
            "ZipWriterTests/outputIsReproducibleWithFixedSalts|ZipWriterTests/mediaExtensionsAreStoredUnderAuto"
            + "|ZipIncrementalTests/theManifestMatchesTheDocumentedVector"
        func run(_ tier: String) throws -> String {
            let run = try CLI.run(
                ["--testing-library", "swift-testing", "--filter", filter], environment: ["ASSETPACK_TESTS": tier],
                executable: bundle)
            #expect(run.status == 0, "\(run.text)\(run.stderr)")
            return run.text + run.stderr
        }
        let fast = try run("fast")
        #expect(fast.contains("Test outputIsReproducibleWithFixedSalts() skipped"), "\(fast)")
        #expect(fast.contains("the slow tier: make test-full runs it"), "\(fast)")
        #expect(fast.contains("Suite ZipIncrementalTests skipped"), "\(fast)")
        #expect(fast.contains("Test mediaExtensionsAreStoredUnderAuto() passed"), "\(fast)")
        let all = try run("all")
        #expect(all.contains("Test outputIsReproducibleWithFixedSalts() passed"), "\(all)")
        #expect(all.contains("Test theManifestMatchesTheDocumentedVector() passed"), "\(all)")
        #expect(!all.contains("skipped"), "\(all)")
    }
}
#endif
