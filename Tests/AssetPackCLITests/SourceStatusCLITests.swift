#if SystemLibraries  // the default configuration only: see Package.swift
import AssetPack
import AssetPackTestSupport
import Foundation
import Testing

/// `assetpack pack` remembering its sources' status (docs/INCREMENTAL.md, "Skipping unchanged
/// sources"), through the built binary: a re-pack says how many sources it did not read, reads an
/// edited one, leaves the cache private, and `--rehash` reads them all.
@Suite(.serialized, .slow) struct SourceStatusCLITests {
    @Test func aRepackReadsOnlyChangedSourcesAndRehashReadsAll() throws {
        let dir = TemporaryDirectory("source-status")
        let src = try dir.write(
            ["a.txt": textBytes(20_000, seed: 1), "b/c.bin": testBytes(70_000, seed: 2), "d.json": textBytes(300)],
            under: "src")
        let out = dir.appending("p.apack").path
        let cache = dir.appending("cache").path
        func pack(_ extra: [String] = []) throws -> CLI.Run {
            let run = try CLI.run(
                ["pack", src.path, "-o", out, "--format", "container"] + extra, password: "pw",
                environment: ["XDG_CACHE_HOME": cache])
            #expect(run.status == 0, "\(run.stderr)")
            return run
        }
        // Files are trusted once their times are 2 s older than the pack that read them.
        Thread.sleep(forTimeInterval: 2.2)
        #expect(!(try pack()).stderr.contains("not read"))
        let again = try pack()
        #expect(
            again.stderr.contains(", 3 sources not read (unchanged status; --rehash reads them)"), "\(again.stderr)")
        #expect(again.stderr.contains(": 3 reused, 0 packed"), "\(again.stderr)")
        // The cache is the user's alone.
        let folder = cache + "/assetpack/sources"
        #expect(try FileSystem.stat(folder).permissions == 0o700)
        let files = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".status") }
        #expect(files.count == 1)
        #expect(try FileSystem.stat(folder + "/" + files[0]).permissions == 0o600)

        try dir.write(["d.json": textBytes(300, seed: 9)], under: "src")  // the same size
        let edited = try pack()
        #expect(edited.stderr.contains(", 2 sources not read"), "\(edited.stderr)")
        #expect(edited.stderr.contains(": 2 reused, 1 packed"), "\(edited.stderr)")
        let cat = try CLI.run(["cat", out, "d.json"], password: "pw")
        #expect(cat.stdout == textBytes(300, seed: 9))

        let rehashed = try pack(["--rehash"])
        #expect(!rehashed.stderr.contains("not read") && rehashed.stderr.contains(": 3 reused"), "\(rehashed.stderr)")
    }
}
#endif
