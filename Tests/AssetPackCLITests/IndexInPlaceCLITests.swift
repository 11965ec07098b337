#if SystemLibraries  // the default configuration only: see Package.swift
import AssetPack
import AssetPackTestSupport
import Foundation
import Testing

/// The container's index read in place (version 8, issue 41), through the built binary: what a
/// read does not check, `verify` and `list` do.
@Suite struct IndexInPlaceCLITests {
    let dir = TemporaryDirectory("index-in-place")
    static let password = "in-place"

    func run(_ arguments: [String]) throws -> CLI.Run { try CLI.run(arguments, password: Self.password) }

    /// A flip in the digest section (which only a re-pack and a delta read): `cat` reads the
    /// right bytes, `verify` and `list` refuse the pack (exit 4), and a re-pack packs it whole.
    @Test func aDamagedDigestSectionIsFoundByVerifyAndList() throws {
        let src = try dir.write(["a.txt": Array("a\n".utf8), "b/c.bin": testBytes(20_000, seed: 2)], under: "src")
        let pack = dir.appending("p.apack").path
        #expect(try run(["pack", src.path, "-o", pack, "--format", "container"]).status == 0)
        #expect(try run(["verify", pack]).status == 0)
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: pack)))
        let section = try #require(digestSection(bytes))
        bytes[section.lowerBound + 1] ^= 0x40
        try Data(bytes).write(to: URL(fileURLWithPath: pack))

        let cat = try run(["cat", pack, "b/c.bin"])
        #expect(cat.status == 0 && cat.stdout == testBytes(20_000, seed: 2), "\(cat.stderr)")
        for command in ["verify", "list"] {
            let refused = try run([command, pack])
            #expect(refused.status == 4, "\(command): \(refused.stderr)")
            #expect(refused.stderr.contains("container index failed authentication"), "\(command): \(refused.stderr)")
        }
        let repacked = try run(["pack", src.path, "-o", pack, "--format", "container"])
        #expect(repacked.status == 0, "\(repacked.stderr)")
        #expect(try run(["verify", pack]).status == 0)
    }

    /// A flip in the last of three table segments (the index is opened a segment at a time, as
    /// reads reach it): `cat` of an entry whose lookup reads only the first segment gives its
    /// bytes, `cat` of one whose path lies in the damaged segment is refused (exit 4, and not as
    /// "no such entry"), and `verify` and `list`, which read the whole index, refuse the pack.
    @Test func aDamagedTableSegmentFailsWhatReachesIt() throws {
        let src = try dir.write(LargeIndexPack.files, under: "large")
        let pack = dir.appending("large.apack").path
        let packed = try run(["pack", src.path, "-o", pack, "--format", "container"])
        #expect(packed.status == 0, "\(packed.stderr)")
        try LargeIndexPack.damageLastIndexSegment(of: URL(fileURLWithPath: pack))

        let first = try run(["cat", pack, LargeIndexPack.path(0)])
        #expect(first.status == 0 && first.stdout == LargeIndexPack.content(0), "\(first.stderr)")
        var refusals = [try run(["cat", pack, LargeIndexPack.path(LargeIndexPack.count - 1)])]
        for command in ["verify", "list"] { refusals.append(try run([command, pack])) }
        let into = dir.appending("out").path
        refusals.append(try run(["extract", pack, "--into", into]))  // every entry: the whole index first
        for refused in refusals {
            #expect(refused.status == 4, "\(refused.stderr)")
            #expect(refused.stderr.contains("container index failed authentication"), "\(refused.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: into + "/" + LargeIndexPack.path(0)))
    }
}
#endif
