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

    /// Two tiers: `make test` skips what is tagged `.slow`, through the pattern
    /// scripts/slow-tests.py reads off the sources; `make test-full` runs every suite; CI runs
    /// `make test-full`. Every name the pattern skips is a suite or test that exists (a renamed one
    /// cannot slip into the fast tier unnoticed), and the pattern skips what it names and nothing else.
    @Test(.tags(.slow)) func testSkipsTheSlowTagAndTestFullRunsEverything() throws {
        let fast = try Self.swiftTestLine("test")
        #expect(fast.hasPrefix(#"slow="$(python3 scripts/slow-tests.py)" && "#), "\(fast)")
        #expect(fast.hasSuffix(#"swift test --disable-xctest --skip-build --skip "$slow""#), "\(fast)")
        let script = Self.root.appending(path: "scripts/slow-tests.py").path
        let listed = try CLI.run([script, "--list"], executable: "/usr/bin/python3")
        #expect(listed.status == 0, "\(listed.stderr)")
        let slow = listed.text.split(separator: "\n").map(String.init)
        #expect(
            slow.contains("AssetPackCLITests.DifferentialCLITests") && slow.contains("AssetPackRemoteTests.RemoteTests")
        )
        #expect(slow.contains("AssetPackZipTests.ZipWriterTests/roundTripsEverySize"), "\(slow)")
        for name in slow {
            let parts = name.split(separator: ".", maxSplits: 1).map(String.init)
            let directory = Self.root.appending(path: "Tests/\(parts[0])").path
            let sources = try FileManager.default.subpathsOfDirectory(atPath: directory)
                .filter { $0.hasSuffix(".swift") }
                .map { try String(contentsOfFile: directory + "/" + $0, encoding: .utf8) }
                .joined()
            let suiteAndTest = parts[1].split(separator: "/").map(String.init)
            #expect(sources.contains("struct \(suiteAndTest[0]) "), "\(name): no such suite in \(directory)")
            if suiteAndTest.count == 2 {
                #expect(sources.contains("func \(suiteAndTest[1])("), "\(name): no such test in \(directory)")
            }
        }
        let pattern = try CLI.run([script], executable: "/usr/bin/python3")
        let regex = try Regex(pattern.text.trimmingCharacters(in: .whitespacesAndNewlines))
        for id in [
            "AssetPackZipTests.ZipWriterTests/roundTripsEverySize(encryption:compression:)",
            "AssetPackRemoteTests.RemoteTests/largeReadsStreamThroughABoundedWindow(format:)",
            "AssetPackRemoteTests.RemoteTests",
        ] {
            #expect(id.contains(regex), "\(id) is not skipped")
        }
        for id in [
            "AssetPackZipTests.ZipWriterTests/roundTripsEverySizeFast()", "AssetPackZipTests.ZipWriterTests",
            "AssetPackZipTests.ZipWriterTestsMore/roundTripsEverySize()",
            "AssetPackCLITests.CLITests/packListCatRoundTrip(format:)",
        ] {
            #expect(!id.contains(regex), "\(id) is skipped")
        }
        // test-full: the fast tier beside two shards of the slow tier, each run of the built
        // bundle with Swift Testing only; together the shards are the whole slow tier.
        let dry = try CLI.run(["-n", "-C", Self.root.path, "test-full", "SWIFT=swift"], executable: "/usr/bin/make")
        #expect(dry.status == 0, "\(dry.stderr)")
        #expect(dry.text.contains("slow-tests.py --shard $k/2"), "\(dry.text)")
        #expect(dry.text.contains(#"--testing-library swift-testing --filter "$slow""#), "\(dry.text)")
        #expect(dry.text.contains(#"--testing-library swift-testing --skip "$slow""#), "\(dry.text)")
        var sharded: [String] = []
        for k in 1...2 {
            let shard = try CLI.run([script, "--list", "--shard", "\(k)/2"], executable: "/usr/bin/python3")
            #expect(shard.status == 0, "\(shard.stderr)")
            sharded += shard.text.split(separator: "\n").map(String.init)
        }
        #expect(sharded.sorted() == slow.sorted())
        let ci = try String(contentsOf: Self.root.appending(path: ".ci/run"), encoding: .utf8)
        #expect(ci.contains("\nstep make test-full\n") && !ci.contains("\nstep make test\n"), "\(ci)")
    }

    /// The script refuses a `.slow` tag it cannot place, so `make test` fails rather than running
    /// (or skipping) the wrong tests.
    @Test func aTagTheScriptCannotPlaceFailsMakeTest() throws {
        let tree = TemporaryDirectory("slow-tests")
        let scripts = tree.url.appending(path: "scripts"), tests = tree.url.appending(path: "Tests/SomeTests")
        try FileManager.default.createDirectory(at: scripts, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: tests, withIntermediateDirectories: true)
        try FileManager.default.copyItem(
            at: Self.root.appending(path: "scripts/slow-tests.py"), to: scripts.appending(path: "slow-tests.py"))
        try Data("@Test(.tags(.slow)) let notAFunction = 1\n".utf8).write(to: tests.appending(path: "A.swift"))
        let run = try CLI.run([scripts.appending(path: "slow-tests.py").path], executable: "/usr/bin/python3")
        #expect(run.status != 0 && run.text.isEmpty, "\(run.text)")
        #expect(run.stderr.contains("A.swift:1: .slow on a @Test that declares no function"), "\(run.stderr)")
    }
}
#endif
