#if SystemLibraries  // the default configuration only: see Package.swift
import AssetPack
import AssetPackTestSupport
import Foundation
import Testing

@testable import AssetPackContainer

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

    /// A set whose base has a damaged table segment under a healthy patch that deletes the base's
    /// last entry (whose path lies in that segment): `list` and `verify` of the set blame the
    /// base's index, naming it (exit 4), not the patch for deleting what the damaged listing
    /// lacks.
    @Test func aSetBlamesTheDamagedPackNotThePatchAboveIt() throws {
        let src = try dir.write(LargeIndexPack.files, under: "large")
        var fewer = LargeIndexPack.files
        fewer[LargeIndexPack.path(LargeIndexPack.count - 1)] = nil
        let smaller = try dir.write(fewer, under: "fewer")
        let base = dir.appending("base.apack").path, patch = dir.appending("patch.apack").path
        let packed = try run(["pack", src.path, "-o", base, "--format", "container"])
        #expect(packed.status == 0, "\(packed.stderr)")
        let patched = try run(["pack", smaller.path, "--patch-of", base, "-o", patch])
        #expect(patched.status == 0, "\(patched.stderr)")
        #expect(try run(["verify", base, "--over", patch]).status == 0)
        try LargeIndexPack.damageLastIndexSegment(of: URL(fileURLWithPath: base))

        for command in ["list", "verify"] {
            let refused = try run([command, base, "--over", patch])
            #expect(refused.status == 4, "\(command): \(refused.stderr)")
            #expect(refused.stderr.contains("container index failed authentication"), "\(command): \(refused.stderr)")
            #expect(refused.stderr.contains("base.apack") && !refused.stderr.contains("deletes"), "\(refused.stderr)")
        }
    }

    /// A re-pack over a pack whose index is damaged packs afresh, and its summary leaves out the
    /// "removed" count it cannot know, instead of counting the damaged listing's empty names.
    @Test func aRepackOverADamagedIndexDoesNotCountWhatItCannotList() throws {
        let src = try dir.write(LargeIndexPack.files, under: "large")
        let pack = dir.appending("large.apack").path
        #expect(try run(["pack", src.path, "-o", pack, "--format", "container"]).status == 0)
        try LargeIndexPack.damageLastIndexSegment(of: URL(fileURLWithPath: pack))

        let repacked = try run(["pack", src.path, "-o", pack, "--format", "container"])
        let said = String(decoding: repacked.stdout, as: UTF8.self) + repacked.stderr
        #expect(repacked.status == 0, "\(repacked.stderr)")
        #expect(said.contains("\(LargeIndexPack.count) packed") && !said.contains(" removed"), "\(said)")
        #expect(try run(["verify", pack]).status == 0)
    }

    /// `extract` of every entry of a pack whose index holds a record that fails its checks (a path
    /// that is not UTF-8, sealed under the key as only a key holder can): refused as `list` and
    /// `verify` refuse it (exit 4, the index named corrupt), before anything is written, never as
    /// "no such entry" for a name it listed.
    @Test func extractOfEveryEntryRefusesARecordThatFailsItsChecks() throws {
        let src = try dir.write(["a/1.txt": Array("one\n".utf8), "b/2.txt": Array("two\n".utf8)], under: "src")
        let key = dir.appending("key").path
        try Data(repeating: 0x5A, count: 32).write(to: URL(fileURLWithPath: key))
        let pack = dir.appending("p.apack").path
        #expect(try run(["pack", src.path, "-o", pack, "--format", "container", "--key-file", key]).status == 0)
        try Self.reseal(pack, key: [UInt8](repeating: 0x5A, count: 32)) { table in
            table[table.count - 1] = 0xFF  // the last path's last byte: "b/2.tx\u{FF}", still sorted
        }

        let into = dir.appending("out").path
        for arguments in [["list", pack], ["verify", pack], ["extract", pack, "--into", into]] {
            let refused = try run(arguments + ["--key-file", key])
            #expect(refused.status == 4, "\(arguments[0]): \(refused.stderr)")
            #expect(refused.stderr.contains("container index is corrupt"), "\(arguments[0]): \(refused.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: into + "/a/1.txt"))
    }

    /// Re-seals the version-8 index of the unsigned container at `path` (raw `key`) after `change`
    /// to its table: what only a holder of the pack's key can write.
    static func reseal(_ path: String, key: [UInt8], _ change: (inout [UInt8]) -> Void) throws {
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let (headerBytes, header) = try ContainerHeader.read(from: FileByteSource(path: path))
        let reader = try ContainerPackReader(source: FileByteSource(path: path), credential: .key(key))
        let indexKey = reader.keys.indexKey(version: header.version)
        let at = Int(header.indexOffset)..<Int(header.indexOffset + header.indexLength)
        var index = try ContainerIndex.unsealV8(Array(bytes[at]), key: indexKey, headerBytes: headerBytes)
        change(&index.table)
        bytes.replaceSubrange(
            at,
            with: ContainerIndex.sealV8(
                table: index.table, digests: index.digests, nonce: index.nonce, key: indexKey, headerBytes: headerBytes)
        )
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }
}
#endif
