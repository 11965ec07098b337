#if SystemLibraries  // the default configuration only: see Package.swift
import AssetPack
import AssetPackTestSupport
import Foundation
import Testing

/// `assetpack pack --level default|fast` and `--fast` through the built binary: a zip packed fast
/// is larger than one at the default level, both hold the same entries stored or deflated as
/// `--compression auto` decides, and both read back byte for byte; the container takes the option
/// (its level is not wired yet) and reads back too; a contradiction or an unknown level is a
/// usage error.
@Suite struct CompressionLevelCLITests {
    static let password = "levels"

    /// Text over 64 KiB (sampled) and under it, media stored by name, random bytes stored after the
    /// sample, and a file under 32 bytes.
    static let files: [String: [UInt8]] = [
        "data/units.cfg": textBytes(400_000, seed: 1), "scripts/ai.lua": textBytes(30_000, seed: 2),
        "images/hero.png": testBytes(50_000, seed: 3), "noise.bin": testBytes(100_000, seed: 4),
        "tiny.json": Array("{\"a\": 1}".utf8),
    ]

    static func pack(_ dir: TemporaryDirectory, _ format: PackFormat, _ name: String, _ extra: [String]) throws
        -> URL
    {
        let source = dir.appending("src")
        if !FileManager.default.fileExists(atPath: source.path) { _ = try dir.write(files, under: "src") }
        let output = dir.appending(name)
        let run = try CLI.run(
            ["pack", source.path, "--output", output.path, "--format", format.rawValue, "--quiet"] + extra,
            password: password)
        #expect(run.status == 0, "\(extra): \(run.stderr)")
        return output
    }

    /// Every entry's compression, from `list --json`.
    static func methods(_ pack: URL) throws -> [String: String] {
        let run = try CLI.run(["list", pack.path, "--json"], password: password)
        #expect(run.status == 0, "\(run.stderr)")
        let document = try JSONSerialization.jsonObject(with: Data(run.stdout)) as? [String: Any]
        let entries = document?["entries"] as? [[String: Any]] ?? []
        return Dictionary(
            uniqueKeysWithValues: entries.map { ($0["path"] as? String ?? "", $0["compression"] as? String ?? "") })
    }

    /// Extracts `pack` and checks every file against the source.
    static func expectReadsBack(_ pack: URL, _ dir: TemporaryDirectory) throws {
        let into = dir.appending("x-" + pack.lastPathComponent)
        let run = try CLI.run(["extract", pack.path, "--into", into.path, "--quiet"], password: password)
        #expect(run.status == 0, "\(run.stderr)")
        for (path, bytes) in files {
            let read = FileManager.default.contents(atPath: into.appendingPathComponent(path).path)
            #expect(read.map(Array.init) == bytes, "\(pack.lastPathComponent): \(path)")
        }
    }

    static func size(_ url: URL) throws -> Int {
        try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int ?? -1
    }

    @Test(.slow) func zipPackedFastIsLargerThanAtTheDefaultLevelAndBothReadBack() throws {
        let dir = TemporaryDirectory()
        let plain = try Self.pack(dir, .zip, "plain.zip", [])
        let named = try Self.pack(dir, .zip, "default.zip", ["--level", "default"])
        let fast = try Self.pack(dir, .zip, "fast.zip", ["--fast"])
        let fastNamed = try Self.pack(dir, .zip, "fast-named.zip", ["--level", "fast"])
        // Salts differ from pack to pack, sizes do not: the same level gives the same bytes to encrypt.
        let sizes = try [plain, named, fast, fastNamed].map(Self.size)
        #expect(sizes[0] == sizes[1])
        #expect(sizes[2] == sizes[3])
        #expect(sizes[2] > sizes[0], "fast \(sizes[2]), default \(sizes[0])")

        // The level changes how hard, not what: the same entries stored and deflated.
        let expected = [
            "data/units.cfg": "deflate", "scripts/ai.lua": "deflate", "images/hero.png": "store",
            "noise.bin": "store", "tiny.json": "store",
        ]
        for pack in [plain, named, fast, fastNamed] {
            #expect(try Self.methods(pack) == expected, "\(pack.lastPathComponent)")
            try Self.expectReadsBack(pack, dir)
        }
    }

    @Test(.slow) func containerTakesTheLevelAndReadsBack() throws {
        let dir = TemporaryDirectory()
        for (name, extra) in [("plain.apack", []), ("fast.apack", ["--fast"]), ("named.apack", ["--level", "fast"])] {
            let pack = try Self.pack(dir, .container, name, extra)
            try Self.expectReadsBack(pack, dir)
        }
    }

    @Test(arguments: [
        (["--fast", "--level", "default"], "--fast is --level fast: give one of --fast and --level default"),
        (["--level", "max"], "'max'"),
        (["--level"], "--level"),
    ])
    func aContradictionOrAnUnknownLevelIsAUsageError(extra: [String], message: String) throws {
        let dir = TemporaryDirectory()
        let source = try dir.write(Self.files, under: "src")
        let output = dir.appending("out.zip")
        let run = try CLI.run(["pack", source.path, "--output", output.path] + extra, password: Self.password)
        #expect(run.status == 64, "\(extra): \(run.status) \(run.stderr)")
        #expect(run.stderr.contains(message), "\(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: output.path))
    }

    @Test func fastAndLevelFastTogetherAreAccepted() throws {
        let dir = TemporaryDirectory()
        let pack = try Self.pack(dir, .zip, "both.zip", ["--fast", "--level", "fast"])
        try Self.expectReadsBack(pack, dir)
    }

    @Test func helpNamesTheLevels() throws {
        let run = try CLI.run(["pack", "--help"])
        #expect(run.status == 0)
        let help = String(decoding: run.stdout, as: UTF8.self)
        #expect(help.contains("--level <default|fast>"), "\(help)")
        #expect(help.contains("--fast"), "\(help)")
    }
}
#endif
