#if SystemLibraries  // the default configuration only: see Package.swift
import AssetPackTestSupport
import Foundation
import Testing

/// `pack` onto a disk that fills: exit 1, the system's reason, and what became of `--output`
/// (nothing written, or the previous pack unchanged), so a build log answers "is my pack still
/// good?" without a second look; both formats.
@Suite struct PackFullDiskCLITests {
    static let password = "full disk"

    @Test(
        .enabled(if: SmallFileSystem.isAvailable, "needs root to mount a small tmpfs"),
        arguments: ["zip", "container"])
    func aFullDiskSaysWhatBecameOfTheOutput(format: String) throws {
        let dir = TemporaryDirectory()
        let disk = try SmallFileSystem(megabytes: 3)
        let small = try dir.write(["a.txt": Array("small".utf8)], under: "small")
        let big = try dir.write(["big.bin": testBytes(5 << 20, seed: 9)], under: "big")
        let output = disk.url.appendingPathComponent("assets.pack").path
        let pack = { (source: URL) in
            try CLI.run(
                ["pack", source.path, "--output", output, "--format", format, "--compression", "store"],
                password: Self.password)
        }

        let fresh = try pack(big)
        #expect(fresh.status == 1, "\(fresh.stderr)")
        #expect(fresh.stderr.contains("No space left on device"), "\(fresh.stderr)")
        #expect(fresh.stderr.contains("(nothing was written to \(output))"), "\(fresh.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: disk.url.path) == [])

        #expect(try pack(small).status == 0)
        let before = try Data(contentsOf: URL(fileURLWithPath: output))
        let over = try pack(big)
        #expect(over.status == 1, "\(over.stderr)")
        #expect(over.stderr.contains("(\(output) is unchanged)"), "\(over.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: output)) == before)
        #expect(try CLI.run(["verify", output, "--quiet"], password: Self.password).status == 0)
    }
}
#endif
