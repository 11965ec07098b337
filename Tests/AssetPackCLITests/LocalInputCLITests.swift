#if SystemLibraries  // the default configuration only: see Package.swift
import AssetPack
import AssetPackTestSupport
import Foundation
import Testing

/// Local packs as other tools write them, and extraction targets as a user's disk holds them,
/// through the built binary: every check runs before the first byte is written, zips with
/// `./` names or a stub in front read like any zip, and a non-pack is exit 5 under `--trust`
/// for `install` as for the readers.
@Suite struct LocalInputCLITests {
    let dir = TemporaryDirectory("local-input-cli")

    /// The files below `path` (recursive), sorted.
    func files(_ path: String) -> [String] {
        ((try? FileManager.default.subpathsOfDirectory(atPath: path)) ?? []).sorted()
    }

    /// `out/sub` is a symbolic link to a folder outside: the extraction refuses before it writes
    /// anything, not after `a.txt` (which sorts before `sub/`) is already there.
    @Test(arguments: PackFormat.allCases)
    func aSymlinkedFolderOfAnyEntryIsRefusedBeforeAnythingIsWritten(format: PackFormat) throws {
        let pack = try CLITests.pack(
            ["a.txt": Array("a".utf8), "sub/b.txt": Array("b".utf8), "z.txt": Array("z".utf8)], in: dir,
            format: format)
        let out = dir.appending("out"), outside = dir.appending("outside")
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(at: out.appendingPathComponent("sub"), withDestinationURL: outside)
        let run = try CLI.run(["extract", pack, "--into", out.path], password: CLITests.password)
        #expect(run.status == 1, "\(run.stderr)")
        #expect(run.stderr.contains("symbolic link"), "\(run.stderr)")
        #expect(run.stdout.isEmpty, "it reported files written: \(run.text)")
        #expect(files(out.path) == ["sub"], "written before the refusal: \(files(out.path))")
        #expect(files(outside.path).isEmpty)
    }

    /// A folder where an entry's file goes, and a zip whose entries need `x` as both a file and
    /// a folder: refused before anything is written.
    @Test func everyTargetIsCheckedBeforeTheFirstWrite() throws {
        let pack = try CLITests.pack(["a.txt": Array("a".utf8), "c": Array("c".utf8)], in: dir)
        let out = dir.appending("out")
        try FileManager.default.createDirectory(at: out.appendingPathComponent("c"), withIntermediateDirectories: true)
        let run = try CLI.run(["extract", pack, "--into", out.path], password: CLITests.password)
        #expect(run.status == 1 && run.stderr.contains("is a directory"), "\(run.stderr)")
        #expect(files(out.path) == ["c"], "written before the refusal: \(files(out.path))")

        let clash = dir.appending("clash.zip")
        try ZipBuilder([.init("a.txt", Array("a".utf8)), .init("x", [1]), .init("x/y", [2])]).write(to: clash)
        let into = dir.appending("out2")
        let refused = try CLI.run(["extract", clash.path, "--into", into.path])
        #expect(refused.status == 4, "\(refused.stderr)")
        #expect(refused.stderr.contains("both a file and a folder"), "\(refused.stderr)")
        #expect(files(into.path).isEmpty, "written before the refusal: \(files(into.path))")
    }

    /// Names that begin with `./` (libarchive's `bsdtar --format zip` writes them) are the
    /// names without it, for `list`, `cat` and `extract` alike (Info-ZIP and 7-Zip strip it too).
    @Test func aLeadingDotSlashIsStrippedEverywhere() throws {
        let zip = dir.appending("dot.zip")
        try ZipBuilder([.init("./", []), .init("./a.txt", Array("alpha".utf8)), .init("./d/b.txt", Array("beta".utf8))])
            .write(to: zip)
        try Self.expectStripped(zip.path, ["a.txt": Array("alpha".utf8), "d/b.txt": Array("beta".utf8)], in: dir)
    }

    /// What `list --json`, `cat` (with and without `./`) and `extract` make of a zip whose
    /// names begin with `./`: the names without it.
    static func expectStripped(
        _ zip: String, _ tree: [String: [UInt8]], in dir: TemporaryDirectory, password: String? = nil
    ) throws {
        let list = try CLI.run(["list", zip, "--json"], password: password)
        #expect(list.status == 0, "\(list.stderr)")
        for path in tree.keys {
            #expect(list.text.contains("\"\(path)\""), "\(path) not listed: \(list.text)")
            #expect(!list.text.contains("\"./\(path)\""), "listed with ./: \(list.text)")
        }
        for (path, bytes) in tree {
            for name in [path, "./" + path] {
                let cat = try CLI.run(["cat", zip, name], password: password)
                let same = cat.stdout == bytes  // a Bool: a failure does not print every byte
                #expect(cat.status == 0 && same, "\(name): \(cat.stderr)")
            }
        }
        let out = try Self.expectExtracts(zip, tree, in: dir, password: password)
        let one = try CLI.run(
            ["extract", zip, "./" + tree.keys.sorted()[0], "--into", out.path + "-one"], password: password)
        #expect(one.status == 0, "\(one.stderr)")
    }

    /// `bsdtar --format zip` (libarchive) itself, when it is installed.
    @Test(.enabled(if: which("bsdtar") != nil, "libarchive's bsdtar is not installed (apt: libarchive-tools)"))
    func bsdtarZipsReadAndExtract() throws {
        let tree: [String: [UInt8]] = ["a.txt": Array("alpha".utf8), "d/b.bin": testBytes(50_000, seed: 3)]
        let src = try dir.write(tree, under: "src")
        let zip = dir.appending("bsdtar.zip")
        try runTool(which("bsdtar")!, ["--format", "zip", "-cf", zip.path, "."], in: src)
        let names = try runTool(which("bsdtar")!, ["-tf", zip.path], in: dir.url)
        #expect(String(decoding: names, as: UTF8.self).contains("./a.txt"), "bsdtar no longer writes ./ names")
        try Self.expectStripped(zip.path, tree, in: dir)
    }

    /// A zip with a stub in front (a self-extractor; `cat stub zip > x; zip -A x`) is a zip:
    /// its end record says so, wherever its first entry starts.
    @Test func aZipWithAStubInFrontIsAZip() throws {
        let stub = Array("#!/bin/sh\necho self-extracting\nexit 0\n".utf8) + testBytes(3000, seed: 4)
        var builder = ZipBuilder([
            .init("a.txt", Array("alpha".utf8)), .init("d/b.bin", testBytes(9000, seed: 5), deflate: true),
        ])
        builder.prefix = stub
        let zip = dir.appending("sfx.zip")
        try builder.write(to: zip)
        try Self.expectReadable(zip.path, ["a.txt": Array("alpha".utf8), "d/b.bin": testBytes(9000, seed: 5)], in: dir)
    }

    /// Info-ZIP's own `zip -A` on a stub and an AssetPack zip, when Info-ZIP is installed.
    @Test(.enabled(if: which("zip") != nil, "Info-ZIP zip is not installed"))
    func infoZipAdjustedSelfExtractorReads() throws {
        let tree: [String: [UInt8]] = ["a.txt": Array("alpha".utf8), "d/b.bin": testBytes(50_000, seed: 6)]
        let pack = try CLITests.pack(tree, in: dir)
        var bytes = Array("#!/bin/sh\nexit 0\n".utf8) + testBytes(1000, seed: 7)
        bytes += try [UInt8](Data(contentsOf: URL(fileURLWithPath: pack)))
        let sfx = dir.appending("sfx")
        try Data(bytes).write(to: sfx)
        try runTool(which("zip")!, ["-q", "-A", sfx.path], in: dir.url)
        try Self.expectReadable(sfx.path, tree, in: dir, password: CLITests.password)
    }

    /// `extract` of the whole zip writes exactly `tree`. - Returns: The folder it wrote into.
    static func expectExtracts(
        _ zip: String, _ tree: [String: [UInt8]], in dir: TemporaryDirectory, password: String?
    ) throws -> URL {
        let out = dir.appending("out-\(UUID().uuidString)")
        let extract = try CLI.run(["extract", zip, "--into", out.path], password: password)
        #expect(extract.status == 0, "\(extract.stderr)")
        for (path, bytes) in tree {
            let written = FileManager.default.contents(atPath: out.path + "/" + path).map { [UInt8]($0) }
            let same = written == bytes
            #expect(same, "\(path): \(written?.count ?? -1) bytes written, \(bytes.count) expected")
        }
        return out
    }

    static func expectReadable(
        _ zip: String, _ tree: [String: [UInt8]], in dir: TemporaryDirectory, password: String? = nil
    ) throws {
        let list = try CLI.run(["list", zip], password: password)
        #expect(list.status == 0, "\(list.stderr)")
        for (path, bytes) in tree {
            let cat = try CLI.run(["cat", zip, path], password: password)
            let same = cat.stdout == bytes  // a Bool: a failure does not print every byte
            #expect(cat.status == 0 && same, "\(path): \(cat.stderr)")
        }
        let verify = try CLI.run(["verify", zip], password: password)
        #expect(verify.status == 0, "\(verify.stderr)")
        _ = try Self.expectExtracts(zip, tree, in: dir, password: password)
    }

    /// `install --trust KEY` of a file that is no pack at all: exit 5 (untrusted), as `cat`,
    /// `list` and `verify` say for the same file.
    @Test func installTrustingAKeyRefusesANonPackAsUntrusted() throws {
        #expect(try CLI.run(["keygen", "--out", dir.appending("k").path]).status == 0)
        let pub = dir.appending("k.pub").path
        let junk = dir.appending("notapack")
        try Data("this is not a pack at all, just some text\n".utf8).write(to: junk)
        for arguments in [
            ["cat", junk.path, "a.txt"], ["list", junk.path], ["verify", junk.path],
            ["install", junk.path, "--into", dir.appending("home").path],
        ] {
            let run = try CLI.run(arguments + ["--trust", pub], password: "pw")
            #expect(run.status == 5, "\(arguments[0]): \(run.status) \(run.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: dir.appending("home/notapack").path))
    }
}
#endif
