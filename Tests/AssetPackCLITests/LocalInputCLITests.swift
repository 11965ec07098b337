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
}
